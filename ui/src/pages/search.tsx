/**
 * Search: results as you type (debounced, the previous request aborted), facets from the API as
 * filters, a date range, keyboard j/k (or arrows) to move, Enter to open, Esc to clear.
 * Conversations by default (group=thread: a mail thread once, with how many of its messages match);
 * "Each message" lists documents one by one. The query language (phrases, -word, from:, …) is parsed
 * by the server (docs/search.md); the line under the box names it. While typing, the results on
 * screen stay until the next answer has come, and an empty answer is shown only once typing paused.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { DocumentListResponseT } from '../../../src/schemas/documents.ts';
import type { FacetT, SearchHitT, SearchResponseT } from '../../../src/schemas/search.ts';
import { call } from '../api.ts';
import { ErrorNote, formatDate, PeopleList, previewOf, Snippet, SourceBadge, Thumb, titleOf, When } from '../components.tsx';
import { Icon } from '../icons.tsx';
import { MeaningNote, notReadyError, preparingText, useReadiness } from '../readiness.tsx';
import { href, navigate, replaceRoute } from '../router.ts';
import { OrganizeSidebar, TagSelection } from '../organize.tsx';

const DEBOUNCE_MS = 120;
/** An empty answer replaces results on screen only once typing paused this long (no "Nothing matches" mid-word). */
const EMPTY_AFTER_MS = 800;
const FILTERS = ['source_type', 'has_attachments', 'person', 'person_name', 'start_date', 'end_date', 'each'] as const;
type Filters = Partial<Record<(typeof FILTERS)[number], string>>;

type Hit = SearchHitT;
type Facet = FacetT;
type SearchResult = SearchResponseT;
/** GET /v1/documents: with an empty box, the newest documents, or those the filters select (a timeline bar), pages joined. */
type DocumentList = Pick<DocumentListResponseT, 'documents' | 'total'>;
const LIST_PAGE = 25;

/** The last answer, so that coming back from a document shows it at once with the same selection. */
let remembered: { key: string; result: SearchResult; selected: number } | null = null;

function filtersOf(params: URLSearchParams): Filters {
  const f: Filters = {};
  for (const k of FILTERS) {
    const v = params.get(k);
    if (v) f[k] = v;
  }
  return f;
}

function routeFor(q: string, f: Filters): string {
  return href('search', { q, ...f });
}

export function SearchPage({ params }: { params: URLSearchParams }) {
  const [q, setQ] = useState(params.get('q') ?? '');
  const filters = filtersOf(params);
  const key = JSON.stringify([q.trim(), filters]);
  const [result, setResult] = useState<SearchResult | null>(remembered?.key === key ? remembered.result : null);
  const [recent, setRecent] = useState<DocumentList | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const [selected, setSelectedState] = useState(remembered?.key === key ? remembered.selected : 0);
  // Keys can arrive faster than renders: moves read the latest selection from here.
  const selectedRef = useRef(selected);
  const setSelected = (i: number) => {
    selectedRef.current = i;
    setSelectedState(i);
  };
  const [now, setNow] = useState(0); // bumped by Enter: search without waiting for the pause
  const nowSeen = useRef(0);
  // While the server reads its index at start, searches wait and the page says how far it is.
  const readiness = useReadiness();
  const list = useRef<HTMLOListElement>(null);
  const box = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (!remembered || remembered.key !== key) box.current?.focus();
  }, []);

  // A link to another search while this page is open (typing replaces the address without this). Only a
  // change counts: the first run would overwrite what was typed since the page appeared.
  const linkedQ = params.get('q') ?? '';
  const lastLinkedQ = useRef(linkedQ);
  useEffect(() => {
    if (linkedQ === lastLinkedQ.current) return;
    lastLinkedQ.current = linkedQ;
    setQ(linkedQ);
  }, [linkedQ]);

  useEffect(() => {
    const text = q.trim();
    if (!text) {
      setResult(null);
      const ctl = new AbortController();
      listDocuments(0, ctl.signal)
        .then((r) => {
          setRecent(r);
          setError(null);
        })
        .catch((err) => ctl.signal.aborted || setError(err));
      return () => ctl.abort();
    }
    // Enter asked for this search: no pause first, and an empty answer is shown at once.
    const forced = now !== nowSeen.current;
    nowSeen.current = now;
    if (remembered?.key === key && result === remembered.result && !forced) return;
    if (!readiness.ready) return;
    const ctl = new AbortController();
    const timer = setTimeout(
      async () => {
        setLoading(true);
        try {
          const { person_name: _n, each, ...apiFilters } = filters;
          const grouping = each ? {} : { group: 'thread' };
          const r = await call('search', { query: { q: text, k: 20, ...apiFilters, ...grouping } }, { signal: ctl.signal });
          // Nothing found while the words may still be being typed: what is on screen stays until typing
          // paused (the next key aborts this wait), so a word on its way never flashes "Nothing matches".
          if (r.hits.length === 0 && !forced) {
            await new Promise<void>((resolve, reject) => {
              const t = setTimeout(resolve, EMPTY_AFTER_MS);
              ctl.signal.addEventListener('abort', () => {
                clearTimeout(t);
                reject(new DOMException('aborted', 'AbortError'));
              });
            });
          }
          setResult(r);
          setError(null);
          setSelected(0);
          remembered = { key, result: r, selected: 0 };
        } catch (err) {
          if (ctl.signal.aborted) return;
          if (notReadyError(err)) readiness.recheck();
          else setError(err);
        } finally {
          if (!ctl.signal.aborted) setLoading(false);
        }
      },
      forced ? 0 : DEBOUNCE_MS,
    );
    return () => {
      clearTimeout(timer);
      ctl.abort();
    };
  }, [key, now, readiness.ready]);

  /** A page of the documents the filters select, newest first (every document without filters). */
  function listDocuments(offset: number, signal?: AbortSignal): Promise<DocumentList> {
    const { person_name: _n, each: _e, ...apiFilters } = filters;
    return call('listDocuments', { query: { limit: LIST_PAGE, offset, ...apiFilters } }, { signal });
  }

  async function showMore() {
    if (!recent) return;
    try {
      const next = await listDocuments(recent.documents.length);
      setRecent({ documents: [...recent.documents, ...next.documents], total: next.total });
    } catch (err) {
      setError(err);
    }
  }

  function update(nextQ: string, nextFilters: Filters) {
    replaceRoute(routeFor(nextQ, nextFilters));
  }

  function setFilter(name: keyof Filters, value: string | undefined, extra: Filters = {}) {
    const next: Filters = { ...filters, ...extra, [name]: value };
    if (!value) delete next[name];
    navigate(routeFor(q, next));
  }

  function open(i: number) {
    const hit = result?.hits[i];
    if (!hit) return;
    if (remembered) remembered.selected = i;
    navigate(href(`doc/${hit.document_id}`));
  }

  function move(delta: number, focusItem: boolean) {
    const n = result?.hits.length ?? 0;
    if (!n) return;
    const next = Math.max(0, Math.min(n - 1, selectedRef.current + delta));
    setSelected(next);
    if (remembered) remembered.selected = next;
    if (focusItem) (list.current?.querySelectorAll('a.hit-link')[next] as HTMLElement | undefined)?.focus();
  }

  useEffect(() => {
    function onKey(e: KeyboardEvent) {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const t = e.target as HTMLElement;
      if (t === box.current) return;
      if (/^(INPUT|TEXTAREA|SELECT|BUTTON)$/.test(t.tagName)) return;
      if (e.key === 'j' || e.key === 'ArrowDown') {
        e.preventDefault();
        move(1, true);
      } else if (e.key === 'k' || e.key === 'ArrowUp') {
        e.preventDefault();
        move(-1, true);
      } else if (e.key === 'Escape') {
        box.current?.focus();
      }
    }
    document.addEventListener('keydown', onKey);
    return () => document.removeEventListener('keydown', onKey);
  });

  function onBoxKey(e: KeyboardEvent) {
    if (e.key === 'ArrowDown') {
      e.preventDefault();
      move(selectedRef.current === 0 ? 0 : 1, true);
    } else if (e.key === 'Enter') {
      e.preventDefault();
      if (result && result.query === q.trim() && result.hits.length) open(selected);
      else setNow((n) => n + 1);
    } else if (e.key === 'Escape') {
      if (q) {
        setQ('');
        update('', filters);
      } else box.current?.blur();
    }
  }

  // Results ticked for tagging (document ids), cleared with a new answer.
  const [picked, setPicked] = useState<Set<string>>(new Set());
  useEffect(() => setPicked(new Set()), [result]);
  const togglePick = (id: string, on: boolean) => {
    const next = new Set(picked);
    if (on) next.add(id);
    else next.delete(id);
    setPicked(next);
  };
  const runQuery = (nextQ: string, nextFilters: Filters) => {
    setQ(nextQ);
    navigate(routeFor(nextQ, nextFilters));
    setNow((n) => n + 1); // the same query again (a saved search run twice) asks again
  };
  const active = FILTERS.filter((k) => k !== 'person_name' && k !== 'each' && filters[k]);
  const grouped = !filters.each;
  return (
    <div class="search">
      <form class="searchbar" role="search" onSubmit={(e) => e.preventDefault()}>
        <label for="q" class="visually-hidden">
          Search
        </label>
        <input
          id="q"
          ref={box}
          type="search"
          placeholder="Search everything (press / to focus)"
          autocomplete="off"
          spellcheck={false}
          value={q}
          onInput={(e) => {
            setQ(e.currentTarget.value);
            update(e.currentTarget.value, filters);
          }}
          onKeyDown={onBoxKey}
          aria-describedby="search-status search-syntax"
        />
        <div class="dates">
          <label>
            From <input type="date" value={filters.start_date ?? ''} onChange={(e) => setFilter('start_date', e.currentTarget.value)} />
          </label>
          <label>
            To <input type="date" value={filters.end_date ?? ''} onChange={(e) => setFilter('end_date', e.currentTarget.value)} />
          </label>
        </div>
      </form>
      <div class="search-options">
        <label class="grouping">
          <input type="checkbox" checked={grouped} onChange={(e) => setFilter('each', e.currentTarget.checked ? undefined : '1')} /> Conversations
        </label>
        <p class="syntax hint" id="search-syntax">
          <code>"exact phrase"</code> · <code>-word</code> · <code>a OR b</code> · <code>from:ann</code> · <code>to:</code> · <code>subject:</code> ·{' '}
          <code>has:attachment</code> · <code>type:email</code> (or <code>file</code>, <code>chat</code>, <code>note</code>) · <code>list:linux-mips</code> ·{' '}
          <code>tag:finance</code> · <code>tag:finance/*</code> · <code>-tag:done</code> ·{' '}
          <code>before:2026-01</code> · <code>after:</code> · <code>on:</code> · an address finds the mail it is on
        </p>
      </div>

      {active.length > 0 && (
        <ul class="chips" aria-label="Active filters">
          {active.map((k) => (
            <li key={k}>
              <button type="button" onClick={() => setFilter(k, undefined, k === 'person' ? { person_name: undefined } : {})} aria-label={`Remove filter ${k}`}>
                {k === 'person' ? 'person' : k.replace('_', ' ')}: <bdi>{k === 'person' ? (filters.person_name ?? filters.person) : filters[k]}</bdi> <Icon name="close" />
              </button>
            </li>
          ))}
        </ul>
      )}

      <p id="search-status" class="status" aria-live="polite">
        {!readiness.ready && q.trim()
          ? preparingText(readiness)
          : loading
            ? 'Searching…'
            : result
              ? resultCount(result)
              : q.trim()
                ? ''
                : active.length
                  ? recent
                    ? `${recent.total} ${recent.total === 1 ? 'document' : 'documents'}, newest first; type to search within them`
                    : ''
                  : 'Recent documents'}
      </p>
      <MeaningNote />
      <ErrorNote error={error} />

      <TagSelection docIds={[...picked]} onDone={() => setNow((n) => n + 1)} />
      <div class="results-layout">
        <div class="sidebar">
        <OrganizeSidebar onQuery={runQuery} query={q} filters={filters} />
        {result && (
          <aside class="facets" aria-label="Filters">
            <FacetGroup title="Source" items={result.facets.source_type} label={(f) => String(f.value)} onPick={(f) => setFilter('source_type', String(f.value))} />
            <FacetGroup
              title="Attachments"
              items={result.facets.has_attachments}
              label={(f) => (f.value === true || f.value === 'true' ? 'with attachments' : 'without attachments')}
              onPick={(f) => setFilter('has_attachments', String(f.value))}
            />
            <FacetGroup
              title="People"
              items={result.facets.person}
              label={(f) => f.display_name ?? String(f.value)}
              onPick={(f) => setFilter('person', String(f.value), { person_name: f.display_name ?? undefined })}
            />
            {result.facets.list && result.facets.list.length > 0 && (
              // Mailing lists are venues, not people: picking one adds list:NAME to the query.
              <FacetGroup
                title="Lists"
                items={result.facets.list}
                label={(f) => f.display_name ?? String(f.value)}
                onPick={(f) => {
                  const next = `${q.trim()} list:${String(f.value)}`.trim();
                  setQ(next);
                  navigate(routeFor(next, filters));
                }}
              />
            )}
            {result.facets.tag && result.facets.tag.length > 0 && (
              // Picking a tag adds tag:NAME to the query.
              <FacetGroup title="Tags" items={result.facets.tag} label={(f) => String(f.value)} onPick={(f) => runQuery(`${q.trim()} tag:${String(f.value)}`.trim(), filters)} />
            )}
          </aside>
        )}
        </div>
        {result ? (
          <ol class="hits" ref={list} data-query={result.query}>
            {result.hits.map((h, i) => (
              <li key={h.document_id} class={i === selected ? 'hit selected' : 'hit'} data-thread={h.conversation ? '' : undefined}>
                <input
                  type="checkbox"
                  class="pick"
                  aria-label="Select for tagging"
                  checked={picked.has(h.document_id)}
                  onChange={(e) => togglePick(h.document_id, e.currentTarget.checked)}
                />
                <HitThumb metadata={h.metadata} />
                <a class="hit-link" href={href(`doc/${h.document_id}`)} onFocus={() => setSelected(i)} onClick={() => remembered && (remembered.selected = i)}>
                  {titleOf(h.title, h.snippet.replace(/[«»]/g, ''))}
                </a>
                <p class="snip">
                  <Snippet text={h.snippet} />
                </p>
                {h.conversation && <ConversationLine c={h.conversation} />}
                {h.attached_to && (
                  <p class="attached-to meta">
                    <Icon name="paperclip" /> Attachment of{' '}
                    <a href={href(`doc/${h.attached_to.doc_id}`)}>
                      <bdi>{titleOf(h.attached_to.title)}</bdi>
                    </a>{' '}
                    · <When iso={h.attached_to.content_timestamp} />
                  </p>
                )}
                <p class="meta">
                  <SourceBadge type={h.source_type} /> · <When iso={h.content_timestamp} />
                  {h.attachment_count > 0 && (
                    <>
                      {' · '}
                      <span class="attachment-count" title={`${h.attachment_count} ${h.attachment_count === 1 ? 'attachment' : 'attachments'}`}>
                        <Icon name="paperclip" /> {h.attachment_count}
                      </span>
                    </>
                  )}
                  {h.people.length > 0 && ' · '}
                  <PeopleList people={h.people} />
                </p>
              </li>
            ))}
            {result.hits.length === 0 && !result.relaxed && <li class="empty">Nothing matches.</li>}
            {result.hits.length === 0 && result.relaxed && (
              <>
                <li class="empty relaxed-note">
                  Nothing matches this exactly (its quotes, exclusions and operators). Documents that match its words:
                </li>
                {result.relaxed.hits.filter((h) => !h.context).map((h) => (
                  <li key={h.document_id} class="hit relaxed">
                    <HitThumb metadata={h.metadata} />
                    <a class="hit-link" href={href(`doc/${h.document_id}`)}>
                      {titleOf(h.title, h.snippet.replace(/[«»]/g, ''))}
                    </a>
                    <p class="snip">
                      <Snippet text={h.snippet} />
                    </p>
                    <p class="meta">
                      <SourceBadge type={h.source_type} /> · <When iso={h.content_timestamp} />
                      {h.people.length > 0 && ' · '}
                      <PeopleList people={h.people} />
                    </p>
                  </li>
                ))}
              </>
            )}
          </ol>
        ) : (
          recent && (
            <div>
              <ol class="hits">
                {recent.documents.map((d) => (
                  <li key={d.doc_id} class="hit">
                    <HitThumb metadata={d.metadata} />
                    <a class="hit-link" href={href(`doc/${d.doc_id}`)}>
                      {titleOf(d.title, d.text)}
                    </a>
                    <p class="meta">
                      <SourceBadge type={d.source_type} /> · <When iso={d.content_timestamp} />
                    </p>
                  </li>
                ))}
                {recent.documents.length === 0 && (
                  <li class="empty">{active.length ? 'No documents match these filters.' : 'No documents yet: upload some on the Sources page.'}</li>
                )}
              </ol>
              {recent.documents.length < recent.total && (
                <button type="button" class="more" onClick={() => void showMore()}>
                  Show more ({recent.total - recent.documents.length} left)
                </button>
              )}
            </div>
          )
        )}
      </div>
    </div>
  );
}

/** "12 documents", or with conversations "12 documents in 5 conversations". */
function resultCount(r: SearchResult): string {
  const docs = `${r.total} ${r.total === 1 ? 'document' : 'documents'}`;
  if (r.total_groups === undefined || r.total_groups === r.total) return docs;
  return `${docs} in ${r.total_groups} ${r.total_groups === 1 ? 'conversation' : 'conversations'}`;
}

/** A conversation hit: how many of its messages match, who took part, from when to when. */
function ConversationLine({ c }: { c: NonNullable<Hit['conversation']> }) {
  if (c.messages <= 1) return null;
  const names = c.participants.slice(0, 4).map((p) => p.display_name || p.identifier);
  const more = c.participant_count - names.length;
  const sameDay = formatDate(c.first) === formatDate(c.last);
  return (
    <p class="conversation meta">
      <span class="conversation-count">
        {c.matching} of {c.messages} messages
      </span>
      {names.length > 0 && (
        <>
          {' · '}
          <bdi>{names.join(', ')}</bdi>
          {more > 0 && ` +${more}`}
        </>
      )}
      {c.lists && c.lists.length > 0 && (
        <span class="venue">
          {' · on '}
          <bdi>{c.lists.map((l) => l.name).join(', ')}</bdi>
        </span>
      )}
      {' · '}
      <When iso={c.first} />
      {!sameDay && (
        <>
          {' – '}
          <When iso={c.last} />
        </>
      )}
    </p>
  );
}

function FacetGroup({ title, items, label, onPick }: { title: string; items: Facet[]; label: (f: Facet) => string; onPick: (f: Facet) => void }) {
  if (!items?.length) return null;
  return (
    <section class="facet">
      <h2>{title}</h2>
      <ul>
        {items.map((f) => (
          <li key={String(f.value)}>
            <button type="button" class="link" onClick={() => onPick(f)}>
              <bdi>{label(f)}</bdi> <span class="count">{f.count}</span>
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}

/** A file's thumbnail beside its result (an image, or a PDF's first page). */
function HitThumb({ metadata }: { metadata?: Record<string, unknown> }) {
  const preview = previewOf(metadata);
  return preview ? <Thumb sha256={preview.sha256} size="small" /> : null;
}
