/**
 * People: search by name, phone (any format) or email, each with how many messages name them and the last
 * contact, sortable by name, messages or last contact; a person page with identifiers, merges, documents and the
 * relationship in words. The owner (the self person) is no contact and is not listed (the API leaves them out).
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { DocumentListResponseT } from '../../../src/schemas/documents.ts';
import type { MergeCandidatesResponseT, MergeListResponseT, PeopleSearchResponseT, PersonDetailResponseT } from '../../../src/schemas/people.ts';
import type { RelationshipT } from '../../../src/schemas/relationships.ts';
import { call, ClientError } from '../api.ts';
import { ErrorNote, Page, SourceBadge, titleOf, When } from '../components.tsx';
import { ForgetPanel } from '../forget.tsx';
import { href, navigate, replaceRoute } from '../router.ts';
import { ScoreBar, explainFeatures } from './relationships.tsx';

/** GET /search/people's orders; relevance only means something with a query. */
const SORTS: { value: string; label: string }[] = [
  { value: 'relevance', label: 'Best match' },
  { value: 'name', label: 'Name' },
  { value: 'messages', label: 'Messages' },
  { value: 'last_contact', label: 'Last contact' },
];

/**
 * People with one name under several addresses (issue 40): offered for merging, merged only on a click. The first
 * of a group (the one with most messages) stays and takes the others' addresses.
 */
function MergeCandidates({ onMerged }: { onMerged: () => void }) {
  const [groups, setGroups] = useState<MergeCandidatesResponseT['groups']>([]);
  const [error, setError] = useState<unknown>(null);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    call('mergeCandidates', {}, { signal: ctl.signal })
      .then((r) => setGroups(r.groups))
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [reload]);
  if (!groups.length && !error) return null;
  async function merge(target: string, source: string) {
    try {
      await call('mergePeople', { body: { target, source } });
      setReload((n) => n + 1);
      onMerged();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <section class="merge-candidates" aria-labelledby="merge-h">
      <h2 id="merge-h">Possibly the same person</h2>
      <p class="meta">The same name under different addresses. Nothing is merged unless you say so.</p>
      <ul>
        {groups.map((g) => (
          <li key={g.people[0].person_id}>
            <bdi>{g.display_name}</bdi>:{' '}
            {g.people.map((p, i) => (
              <span key={p.person_id} class="meta">
                {i > 0 && ' · '}
                {[...p.emails, ...p.phones].join(', ') || p.person_id} ({p.message_count})
              </span>
            ))}{' '}
            <button type="button" onClick={async () => { for (const p of g.people.slice(1)) await merge(g.people[0].person_id, p.person_id); }}>
              Merge into one
            </button>
          </li>
        ))}
      </ul>
      <ErrorNote error={error} />
    </section>
  );
}

export function PeoplePage({ params }: { params: URLSearchParams }) {
  const [q, setQ] = useState(params.get('q') ?? '');
  const asked = params.get('sort') ?? '';
  const [sort, setSort] = useState(SORTS.some((s) => s.value === asked) ? asked : '');
  const [hits, setHits] = useState<PeopleSearchResponseT | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [merged, setMerged] = useState(0);
  const hasQuery = q.trim() !== '';
  // Without a query "Best match" is the name order; the API's default for each case otherwise.
  const current = sort === '' || (sort === 'relevance' && !hasQuery) ? (hasQuery ? 'relevance' : 'name') : sort;

  useEffect(() => {
    const ctl = new AbortController();
    const t = setTimeout(() => {
      call('searchPeople', { query: { q: q.trim() || undefined, limit: 50, sort: current } }, { signal: ctl.signal })
        .then((r) => {
          setHits(r);
          setError(null);
        })
        .catch((err) => ctl.signal.aborted || setError(err));
    }, 150);
    return () => {
      clearTimeout(t);
      ctl.abort();
    };
  }, [q, current, merged]);

  const pick = (value: string) => {
    setSort(value);
    replaceRoute(href('people', { q, sort: value }));
  };

  return (
    <Page title="People">
      <form role="search" onSubmit={(e) => e.preventDefault()}>
        <label for="people-q">Find a person by name, email or phone</label>
        <input
          id="people-q"
          type="search"
          value={q}
          autocomplete="off"
          onInput={(e) => {
            setQ(e.currentTarget.value);
            replaceRoute(href('people', { q: e.currentTarget.value, sort }));
          }}
        />
      </form>
      <div class="tabs" role="group" aria-label="Sort people by">
        {SORTS.filter((s) => s.value !== 'relevance' || hasQuery).map((s) => (
          <button key={s.value} type="button" class={s.value === current ? 'tab active' : 'tab'} aria-pressed={s.value === current} onClick={() => pick(s.value)}>
            {s.label}
          </button>
        ))}
      </div>
      <ErrorNote error={error} />
      {!hasQuery && <MergeCandidates onMerged={() => setMerged((n) => n + 1)} />}
      {hits && (
        <>
          <p class="status" aria-live="polite">
            {hits.total} {hits.total === 1 ? 'person' : 'people'}
          </p>
          <ul class="cards people-list">
            {hits.results.map((p) => (
              <li key={p.person_id}>
                <a href={href(`person/${p.person_id}`)}><bdi>{p.display_name}</bdi></a>
                {p.organization && <span class="meta"> · <bdi>{p.organization}</bdi></span>}
                <p class="meta">{[...p.emails, ...p.phones].slice(0, 4).join(' · ')}</p>
                <p class="meta contact">
                  <span class="count">{p.message_count === 1 ? '1 message' : `${p.message_count} messages`}</span>
                  {p.last_contact_at && (
                    <>
                      {' · last contact '}
                      <When iso={p.last_contact_at} />
                    </>
                  )}
                </p>
              </li>
            ))}
          </ul>
        </>
      )}
    </Page>
  );
}

export function PersonPage({ id }: { id: string }) {
  const [person, setPerson] = useState<PersonDetailResponseT | null>(null);
  const [merges, setMerges] = useState<MergeListResponseT['merges']>([]);
  const [docs, setDocs] = useState<DocumentListResponseT | null>(null);
  const [rel, setRel] = useState<RelationshipT | null | 'none'>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    const ctl = new AbortController();
    const signal = ctl.signal;
    setPerson(null);
    call('getPerson', { params: { person_id: id } }, { signal })
      .then(async (p) => {
        setPerson(p);
        const [m, d] = await Promise.all([
          call('listMerges', { query: { person_id: p.person_id } }, { signal }),
          call('listDocuments', { query: { person_id: p.person_id, limit: 50 } }, { signal }),
        ]);
        setMerges(m.merges);
        setDocs(d);
        try {
          const top = await call('topRelationships', { query: { person_id: p.person_id, window: '3650d' } }, { signal });
          setRel(top.relationships[0] ?? 'none');
        } catch (err) {
          if (err instanceof ClientError && err.status === 404) setRel('none');
          else throw err;
        }
      })
      .catch((err) => signal.aborted || setError(err));
    return () => ctl.abort();
  }, [id]);

  if (error) return <ErrorNote error={error} />;
  if (!person) return <p class="status" role="status">Loading this person…</p>;
  return (
    <Page title={person.display_name}>
      {person.organization && <p>{person.organization}</p>}
      {person.nicknames.length > 0 && (
        <p class="meta">
          Also known as {person.nicknames.map((n, i) => <>{i > 0 && ', '}<bdi>{n}</bdi></>)}
        </p>
      )}
      <section aria-labelledby="ids-h">
        <h2 id="ids-h">Identifiers</h2>
        <ul>
          {person.identifiers.map((i) => (
            <li key={i.kind + i.value_canonical}>
              <span class="meta">{i.kind}{i.label && <> (<bdi>{i.label}</bdi>)</>}:</span> <bdi>{i.value_raw}</bdi>
            </li>
          ))}
          {person.identifiers.length === 0 && <li class="meta">none</li>}
        </ul>
      </section>
      <section aria-labelledby="rel-h">
        <h2 id="rel-h">Relationship</h2>
        {rel === null ? (
          <p class="status" role="status">Scoring the messages you exchanged…</p>
        ) : rel === 'none' ? (
          <p class="meta">No relationship score yet (no messages exchanged, or the self person is not known: see Relationships).</p>
        ) : (
          <>
            <ScoreBar score={rel.score} label="Relationship score (0 to 100)" />
            <p class="explain">{explainFeatures(rel.features)}</p>
          </>
        )}
      </section>
      {merges.length > 0 && (
        <section aria-labelledby="merges-h">
          <h2 id="merges-h">Merge history</h2>
          <ul>
            {merges.map((m) => (
              <li key={m.merge_id}>
                <When iso={m.created_at} withTime />: {m.source_person_id === person.person_id ? 'merged into ' : 'absorbed '}
                <a href={href(`person/${m.source_person_id === person.person_id ? m.target_person_id : m.source_person_id}`)}>
                  {m.source_person_id === person.person_id ? m.target_person_id : m.source_person_id}
                </a>{' '}
                ({m.reason})
              </li>
            ))}
          </ul>
        </section>
      )}
      <section aria-labelledby="docs-h">
        <h2 id="docs-h">Documents{docs ? ` (${docs.total})` : ''}</h2>
        {docs && (
          <ol class="hits">
            {docs.documents.map((d) => (
              <li key={d.doc_id} class="hit">
                <a class="hit-link" href={href(`doc/${d.doc_id}`)}>
                  {titleOf(d.title, d.text)}
                </a>
                <p class="meta">
                  <SourceBadge type={d.source_type} /> · <When iso={d.content_timestamp} />
                </p>
              </li>
            ))}
          </ol>
        )}
      </section>
      <ForgetPanel target={{ person_id: person.person_id }} what="this person" onDone={() => navigate(href('people'))} />
    </Page>
  );
}
