/**
 * Organize in the web UI (issue 44, docs/organize.md): the sidebar's saved searches (with their counts and
 * what is new since last looked at) and tags (with counts), a document's and a conversation's tags, and
 * tagging a selection of results. Names and queries are data: rendered as text, never as HTML.
 */
import { useEffect, useState } from 'preact/hooks';
import { call, qs } from './api.ts';
import { ErrorNote } from './components.tsx';

interface TagCount {
  name: string;
  documents: number;
  conversations: number;
}
interface Saved {
  name: string;
  query: string;
  filters: Record<string, unknown>;
  count?: number;
  new_since_seen?: number;
}
interface TagOn {
  name: string;
  origin: string;
}

/** Bumped after any tag or saved-search change, so every list on screen reads again. */
let generation = 0;
const changed = () => {
  generation++;
  window.dispatchEvent(new Event('memex:organize'));
};
function useGeneration(): number {
  const [g, setG] = useState(generation);
  useEffect(() => {
    const on = () => setG(generation);
    window.addEventListener('memex:organize', on);
    return () => window.removeEventListener('memex:organize', on);
  }, []);
  return g;
}

/** Saved searches and tags, each a link that runs it. */
export function OrganizeSidebar({ onQuery, query, filters }: { onQuery: (q: string, filters: Record<string, string>) => void; query: string; filters: Record<string, string> }) {
  const g = useGeneration();
  const [saved, setSaved] = useState<Saved[] | null>(null);
  const [tags, setTags] = useState<TagCount[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const ctl = new AbortController();
    Promise.all([call('listSavedSearches', {}, { signal: ctl.signal }), call('listTags', {}, { signal: ctl.signal })])
      .then(([s, t]) => {
        setSaved(s.saved);
        setTags(t.tags);
      })
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [g]);

  async function run(s: Saved) {
    // Looked at now: its "new" count starts again from here.
    await call('runSavedSearch', { params: { name: s.name }, query: { k: 1 } }).catch(() => undefined);
    const f: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.filters ?? {})) if (v !== undefined && v !== null) f[k] = String(v);
    onQuery(s.query, f);
    changed();
  }

  const [naming, setNaming] = useState(false);
  const [name, setName] = useState('');
  async function save(e: Event) {
    e.preventDefault();
    if (!name.trim()) return;
    const { person_name: _n, each: _e, ...apiFilters } = filters;
    try {
      await call('saveSearch', { params: { name: name.trim() }, body: { query: query.trim(), filters: apiFilters } });
      setError(null);
      setNaming(false);
      setName('');
      changed();
    } catch (err) {
      setError(err);
    }
  }

  return (
    <nav class="organize" aria-label="Saved searches and tags">
      <section class="facet saved">
        <h2>Saved searches</h2>
        <ul>
          {(saved ?? []).map((s) => (
            <li key={s.name}>
              <button type="button" class="link" onClick={() => void run(s)} title={s.query}>
                <bdi>{s.name}</bdi> <span class="count">{s.count ?? 0}</span>
                {(s.new_since_seen ?? 0) > 0 && <span class="new-badge"> {s.new_since_seen} new</span>}
              </button>
            </li>
          ))}
          {saved?.length === 0 && <li class="hint">None yet.</li>}
        </ul>
        {query.trim() && !naming && (
          <button type="button" class="save-search" onClick={() => setNaming(true)}>
            Save this search
          </button>
        )}
        {query.trim() && naming && (
          <form class="save-search" onSubmit={(e) => void save(e)}>
            <label>
              Name <input name="saved-name" value={name} placeholder="bills" onInput={(e) => setName(e.currentTarget.value)} />
            </label>{' '}
            <button type="submit">Save</button>
          </form>
        )}
      </section>
      {tags && tags.length > 0 && (
        <section class="facet tags">
          <h2>Tags</h2>
          <ul>
            {tags.map((t) => (
              <li key={t.name}>
                <button type="button" class="link" onClick={() => onQuery(`tag:${t.name}`, {})}>
                  <bdi>{t.name}</bdi> <span class="count">{t.documents + t.conversations}</span>
                </button>
              </li>
            ))}
          </ul>
        </section>
      )}
      <ErrorNote error={error} />
    </nav>
  );
}

/** Tags a selection of results (or takes a tag off them). */
export function TagSelection({ docIds, onDone }: { docIds: string[]; onDone: () => void }) {
  const [name, setName] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [note, setNote] = useState('');
  if (docIds.length === 0) return null;
  async function apply(op: 'add' | 'remove', e?: Event) {
    e?.preventDefault();
    if (!name.trim()) return;
    try {
      const r = await call(op === 'add' ? 'addTag' : 'removeTag', { body: { tag: name, doc_ids: docIds } });
      setError(null);
      setNote(op === 'add' ? `Tagged ${r.changed} ${r.tag}` : `Took ${r.tag} off ${r.changed}`);
      setName('');
      changed();
      onDone();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form class="tag-selection" onSubmit={(e) => void apply('add', e)}>
      <span>{docIds.length} selected</span>{' '}
      <label>
        Tag <input name="tag" value={name} placeholder="finance/bank" onInput={(e) => setName(e.currentTarget.value)} />
      </label>{' '}
      <button type="submit">Add tag</button>{' '}
      <button type="button" onClick={() => void apply('remove')}>
        Remove tag
      </button>
      {note && <span class="hint" role="status"> {note}</span>}
      <ErrorNote error={error} />
    </form>
  );
}

/** A document's tags (and its conversation's), each removable, with a box to add one. */
export function TagEditor({ docId, threadId }: { docId: string; threadId: string | null }) {
  const g = useGeneration();
  const [on, setOn] = useState<{ document: TagOn[]; conversation: TagOn[] } | null>(null);
  const [name, setName] = useState('');
  const [whole, setWhole] = useState(false);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    const ctl = new AbortController();
    call('tagsOn', { query: { doc_id: docId } }, { signal: ctl.signal })
      .then(setOn)
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [docId, g]);

  async function change(op: 'add' | 'remove', tag: string, conversation: boolean) {
    try {
      await call(op === 'add' ? 'addTag' : 'removeTag', { body: conversation && threadId ? { tag, thread_ids: [threadId] } : { tag, doc_ids: [docId] } });
      setError(null);
      if (op === 'add') setName('');
      changed();
    } catch (err) {
      setError(err);
    }
  }
  const chip = (t: TagOn, conversation: boolean) => (
    <li key={`${conversation}-${t.name}`} class={conversation ? 'tag conversation-tag' : 'tag'}>
      <a href={`#/search${qs({ q: `tag:${t.name}` })}`}>
        <bdi>{t.name}</bdi>
      </a>
      {conversation && <span class="hint"> (conversation)</span>}{' '}
      <button type="button" class="link" aria-label={`Remove tag ${t.name}`} onClick={() => void change('remove', t.name, conversation)}>
        ×
      </button>
    </li>
  );
  return (
    <section class="tags-editor" aria-labelledby="tags-h">
      <h2 id="tags-h">Tags</h2>
      <ul class="chips tag-list">
        {on?.document.map((t) => chip(t, false))}
        {on?.conversation.map((t) => chip(t, true))}
        {on && on.document.length + on.conversation.length === 0 && <li class="hint">No tags.</li>}
      </ul>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          if (name.trim()) void change('add', name, whole);
        }}
      >
        <label>
          Add a tag <input name="new-tag" value={name} placeholder="finance/bank" onInput={(e) => setName(e.currentTarget.value)} />
        </label>{' '}
        {threadId && (
          <label>
            <input type="checkbox" checked={whole} onChange={(e) => setWhole(e.currentTarget.checked)} /> to the whole conversation
          </label>
        )}{' '}
        <button type="submit">Add</button>
      </form>
      <ErrorNote error={error} />
    </section>
  );
}
