/**
 * "Kept up to date" on the Sources page (issue 41, docs/sources.md): the sources a host agent runs by itself, as
 * their agent last reported them in GET /v1/coverage — state in words, how it runs (IDLE, polling, a schedule),
 * the last successful sync, the newest item at the source against the newest stored, the next run and the last
 * error — with Pause / Resume (POST /v1/sources/{id}/pause|resume; the agent obeys at its next report).
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build.
import type { SourceCoverageT } from '../../../src/schemas/coverage.ts';
import { call } from '../api.ts';
import { ErrorNote, When } from '../components.tsx';
import { sourceName } from './coverage.tsx';

const STATE_WORDS: Record<string, string> = {
  starting: 'Starting',
  watching: 'Watching',
  polling: 'Polling',
  scheduled: 'Scheduled',
  running: 'Running now',
  backing_off: 'Retrying after an error',
  paused: 'Paused',
  failed: 'Failing',
  stopped: 'Stopped',
};

/** "3 h behind", "up to date": newest at the source against newest stored. */
function lagText(s: SourceCoverageT): string | null {
  if (s.lag_seconds === null) return null;
  if (s.lag_seconds <= 0) return 'up to date';
  const m = Math.round(s.lag_seconds / 60);
  if (m < 60) return `${Math.max(1, m)} min behind`;
  const h = Math.round(m / 60);
  return h < 48 ? `${h} h behind` : `${Math.round(h / 24)} days behind`;
}

function Row({ s, onChanged }: { s: SourceCoverageT; onChanged: () => void }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const what = s.paused ? 'resume' : 'pause';
  async function toggle() {
    setBusy(true);
    setError(null);
    try {
      await call(what === 'pause' ? 'pauseSource' : 'resumeSource', { params: { source_id: s.source_id } });
      onChanged();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  }
  const state = s.paused ? 'Paused' : (STATE_WORDS[s.state ?? ''] ?? s.state);
  const lag = lagText(s);
  return (
    <tr data-source={s.source_id}>
      <td data-label="Source">
        <bdi>{sourceName(s)}</bdi>
        {s.agent && <div class="meta">on <bdi>{s.agent}</bdi></div>}
      </td>
      <td data-label="State">
        <span class={`source-state ${s.paused ? 'paused' : s.state}`}>{state}</span>
        {s.mode && <div class="meta"><bdi>{s.mode}</bdi></div>}
        {s.last_error && <div class="error" role="note"><bdi>{s.last_error}</bdi></div>}
      </td>
      <td data-label="Last synced">{s.last_success_at ? <When iso={s.last_success_at} withTime /> : 'not yet'}</td>
      <td data-label="Newest stored">
        {s.newest_stored ? <When iso={s.newest_stored} withTime /> : '—'}
        {lag && <div class="meta">{lag}</div>}
      </td>
      <td data-label="Next run">{s.next_run_at ? <When iso={s.next_run_at} withTime /> : s.paused ? '—' : 'on change'}</td>
      <td data-label="">
        <button type="button" class="link" disabled={busy} aria-label={`${s.paused ? 'Resume' : 'Pause'} ${sourceName(s)}`} onClick={() => void toggle()}>
          {s.paused ? 'Resume' : 'Pause'}
        </button>
        <ErrorNote error={error} />
      </td>
    </tr>
  );
}

export function RunningSourcesSection() {
  const [sources, setSources] = useState<SourceCoverageT[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [refresh, setRefresh] = useState(0);

  useEffect(() => {
    const ctl = new AbortController();
    call('coverage', { query: { missing_limit: 0 } }, { signal: ctl.signal })
      // Sources an agent runs carry a state; one-off imports and runs do not.
      .then((r) => setSources(r.sources.filter((s) => s.state !== null || s.paused)))
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [refresh]);

  if (!error && (!sources || sources.length === 0)) return null;
  return (
    <section aria-labelledby="running-h">
      <h2 id="running-h">Kept up to date</h2>
      <ErrorNote error={error} />
      {sources && (
        <div class="table-wrap">
          <table class="running stack">
            <thead>
              <tr>
                <th scope="col">Source</th>
                <th scope="col">State</th>
                <th scope="col">Last synced</th>
                <th scope="col">Newest stored</th>
                <th scope="col">Next run</th>
                <th scope="col"><span class="visually-hidden">Actions</span></th>
              </tr>
            </thead>
            <tbody>
              {sources.map((s) => (
                <Row key={s.source_id} s={s} onChanged={() => setRefresh((x) => x + 1)} />
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
