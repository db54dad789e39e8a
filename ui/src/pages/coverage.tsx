/**
 * Coverage on the Sources page (docs/coverage.md): per source, what it holds against what memex stored, from
 * GET /v1/coverage; the items not stored one click away (GET /v1/coverage/sources/{id}/missing, paged); and
 * "Retry failed" where a retry can happen without the person: the host agent's collectors (.emlx, IMAP, Messages,
 * watched folders) pick the request up at their next check. Sources of the memex command (import mail, ingest,
 * contacts) are retried by running the same command again, so the page says that instead of offering a button.
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { MissingPageT, ReconcileResultT, SourceCoverageT } from '../../../src/schemas/coverage.ts';
import { call } from '../api.ts';
import { ErrorNote, When } from '../components.tsx';

type SourceCoverage = SourceCoverageT;

/** Collectors the host agent runs: a retry asked for here is carried out at its next check. */
const AGENT_COLLECTORS = new Set(['email_local', 'email_imap', 'chatapp', 'fswatch']);
/** What to run again for the sources of the memex command. */
const COMMAND_OF: Record<string, string> = {
  import_mail: 'memex import mail PATH',
  ingest: 'memex ingest PATH',
  contacts: 'memex import FILE.vcf',
  import_notes: 'memex import VAULT',
  import_browser: 'memex import HISTORY-FILE',
};
const COLLECTOR_NAMES: Record<string, string> = {
  email_local: 'Apple Mail (.emlx)',
  email_imap: 'IMAP',
  chatapp: 'Messages',
  fswatch: 'Watched folder',
  import_mail: 'memex import mail',
  ingest: 'memex ingest',
  contacts: 'Contacts import',
  import_notes: 'Notes import',
  import_browser: 'Browser history import',
};

export const sourceName = (s: SourceCoverage) => (s.collector === 'email_imap' && s.source_account_id ? `${s.source_account_id}: ${s.source_ref}` : s.source_ref);
const n = (v: number | null) => (v === null ? '—' : String(v));

function MissingList({ source }: { source: SourceCoverage }) {
  const [items, setItems] = useState<MissingPageT['items']>([]);
  const [next, setNext] = useState<string | null>(null);
  const [loaded, setLoaded] = useState(false);
  const [error, setError] = useState<unknown>(null);

  async function load(after: string | null, signal?: AbortSignal) {
    try {
      const page = await call(
        'coverageMissing',
        { params: { source_id: source.source_id }, query: { limit: 100, after: after ?? undefined } },
        { signal },
      );
      setItems((list) => (after ? [...list, ...page.items] : page.items));
      setNext(page.next);
      setLoaded(true);
    } catch (err) {
      if (!signal?.aborted) setError(err);
    }
  }
  useEffect(() => {
    const ctl = new AbortController();
    void load(null, ctl.signal);
    return () => ctl.abort();
  }, [source.source_id]);

  return (
    <div class="coverage-missing" aria-live="polite">
      <ErrorNote error={error} />
      {loaded && items.length === 0 && source.missing_unlisted === 0 && <p>Nothing is missing.</p>}
      {items.length > 0 && (
        <ul aria-label={`Not stored from ${sourceName(source)}`}>
          {items.map((m, i) => (
            <li key={`${i}-${m.ref}`}>
              <span class={`state ${m.state}`}>{m.state}</span> <bdi class="ref">{m.ref}</bdi>: <bdi>{m.reason}</bdi>
            </li>
          ))}
        </ul>
      )}
      {next && (
        <button type="button" class="link" onClick={() => void load(next)}>
          Show more
        </button>
      )}
      {source.missing_unlisted > 0 && <p>{source.missing_unlisted} more were counted by the collector without being named.</p>}
    </div>
  );
}

function RetryCell({ source, onAsked }: { source: SourceCoverage; onAsked: () => void }) {
  const [error, setError] = useState<unknown>(null);
  const troubled = (source.failed ?? 0) + (source.pending ?? 0) > 0;
  if (!troubled) return null;
  if (!AGENT_COLLECTORS.has(source.collector)) {
    const cmd = COMMAND_OF[source.collector];
    return cmd ? <span class="hint">Run <code>{cmd}</code> again to retry</span> : null;
  }
  if (source.retry_requested_at) return <span role="status">Retry asked for <When iso={source.retry_requested_at} withTime />; waiting for the host agent</span>;
  return (
    <>
      <button
        type="button"
        class="link"
        aria-label={`Retry failed items of ${sourceName(source)}`}
        onClick={async () => {
          try {
            await call('coverageRetry', { params: { source_id: source.source_id } });
            onAsked();
          } catch (err) {
            setError(err);
          }
        }}
      >
        Retry failed
      </button>
      <ErrorNote error={error} />
    </>
  );
}

function recountText(r: ReconcileResultT): string {
  if (r.in_sync) return 'matches the last run';
  const parts = [`${r.in_source} now`];
  if (r.drift) parts.push(`${r.drift > 0 ? '+' : ''}${r.drift} since the last run`);
  if (r.added) parts.push(`${r.added} added`);
  if (r.removed) parts.push(`${r.removed} gone`);
  if (r.changed) parts.push(`${r.changed} changed`);
  return parts.join(', ');
}

export function CoverageSection() {
  const [sources, setSources] = useState<SourceCoverage[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [refresh, setRefresh] = useState(0);

  useEffect(() => {
    const ctl = new AbortController();
    call('coverage', { query: { missing_limit: 0 } }, { signal: ctl.signal })
      .then((r) => setSources(r.sources))
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [refresh]);

  if (!sources && !error) return null;
  return (
    <section aria-labelledby="coverage-h">
      <h2 id="coverage-h">Coverage</h2>
      <ErrorNote error={error} />
      {sources && sources.length === 0 && (
        <p>No collector or import has reported yet. Each run of one records what its source holds and what was stored.</p>
      )}
      {sources && sources.length > 0 && (
        <div class="table-wrap">
          <table class="coverage stack">
            <thead>
              <tr>
                <th scope="col">Source</th>
                <th scope="col">In source</th>
                <th scope="col">Stored</th>
                <th scope="col">Skipped</th>
                <th scope="col">Failed</th>
                <th scope="col">Pending</th>
                <th scope="col">Last run</th>
                <th scope="col">Recount</th>
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {sources.map((s) => {
                const notStored = s.missing_total + s.missing_unlisted;
                const skippedWhy = Object.entries(s.skipped_by_reason ?? {})
                  .filter(([, v]) => v > 0)
                  .map(([k, v]) => `${v} ${k.replace('_', ' ')}`)
                  .join(', ');
                return [
                  <tr key={s.source_id}>
                    <td data-label="Source">
                      <div>
                        <bdi>{sourceName(s)}</bdi>
                        <div class="meta">{COLLECTOR_NAMES[s.collector] ?? s.collector}</div>
                      </div>
                    </td>
                    <td data-label="In source">{n(s.in_source)}</td>
                    <td data-label="Stored">{n(s.stored)}</td>
                    <td data-label="Skipped" title={skippedWhy || undefined}>
                      {n(s.skipped)}
                      {skippedWhy && <div class="meta">{skippedWhy}</div>}
                    </td>
                    <td data-label="Failed">{n(s.failed)}</td>
                    <td data-label="Pending">{n(s.pending)}</td>
                    <td data-label="Last run">
                      {s.last_run ? <When iso={s.last_run.finished_at} withTime /> : 'never'}
                      {s.last_run && s.last_run.status !== 'completed' && <div class="meta">{s.last_run.status}</div>}
                    </td>
                    <td data-label="Recount">
                      {s.reconcile ? recountText(s.reconcile) : '—'}
                      {s.reconcile?.notes[0] && <div class="meta"><bdi>{s.reconcile.notes[0]}</bdi></div>}
                    </td>
                    <td data-label="">
                      {notStored > 0 && (
                        <button
                          type="button"
                          class="link"
                          aria-expanded={open === s.source_id}
                          aria-label={`${notStored} not stored from ${sourceName(s)}`}
                          onClick={() => setOpen(open === s.source_id ? null : s.source_id)}
                        >
                          {notStored} not stored
                        </button>
                      )}{' '}
                      <RetryCell source={s} onAsked={() => setRefresh((x) => x + 1)} />
                    </td>
                  </tr>,
                  open === s.source_id && (
                    <tr key={`${s.source_id}-missing`}>
                      <td colSpan={9}>
                        <MissingList source={s} />
                      </td>
                    </tr>
                  ),
                ];
              })}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
