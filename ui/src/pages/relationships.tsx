/**
 * Relationships: who matters in a window (30/90/365 days), score bars, and setting the self person; "gone quiet":
 * people you used to write to often and have not for a while. Automated senders (a bank's statements, a school
 * office nobody answers) are left out unless asked for, and marked when shown.
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { TopResponseT } from '../../../src/schemas/relationships.ts';
import type { MergeCandidatesResponseT } from '../../../src/schemas/people.ts';
import { call, ClientError } from '../api.ts';
import { ErrorNote, Page } from '../components.tsx';
import { href, navigate } from '../router.ts';

const WINDOWS = ['30d', '90d', '365d', 'all'];
/** The tab for people you have stopped writing to (GET …/top?gone_quiet=true). */
const QUIET = 'quiet';

const AUTOMATED_REASONS: Record<string, string> = {
  automated_headers: 'its mail says a machine sent it',
  one_way: 'it writes, you never answered',
};

/** Why a correspondent is marked automated, in words; null for a person. */
export function automatedNote(f: Record<string, any>): string | null {
  const reasons = Array.isArray(f.automated) ? (f.automated as string[]) : [];
  if (!reasons.length) return null;
  return `Automated sender: ${reasons.map((r) => AUTOMATED_REASONS[r] ?? r).join('; ')}.`;
}

/** "You wrote 14 times, last 5 months ago." */
function quietNote(f: Record<string, any>): string | null {
  if (typeof f.outbound_total !== 'number' || typeof f.days_since_last_outbound !== 'number') return null;
  const d = Math.round(f.days_since_last_outbound);
  const ago = d >= 60 ? `${Math.round(d / 30)} months ago` : `${d} days ago`;
  return `You wrote ${plural(f.outbound_total, 'time')}, the last ${ago}.`;
}

function plural(n: number, one: string, many = `${one}s`) {
  return `${n} ${n === 1 ? one : many}`;
}

function duration(seconds: number): string {
  if (seconds < 90) return 'within a minute or so';
  if (seconds < 3600) return `within ${Math.round(seconds / 60)} minutes`;
  if (seconds < 5400) return 'within an hour';
  if (seconds < 86400) return `within ${Math.round(seconds / 3600)} hours`;
  return `within ${plural(Math.round(seconds / 86400), 'day')}`;
}

/** The score's features in a sentence ("12 messages in the last 30 days, last contact 2 days ago, …"). */
export function explainFeatures(f: Record<string, any>): string {
  const parts: string[] = [];
  if (typeof f.messages_30d === 'number') parts.push(`${plural(f.messages_30d, 'message')} in the last 30 days`);
  if (typeof f.days_since_last_message === 'number') {
    const d = Math.round(f.days_since_last_message);
    parts.push(d <= 0 ? 'last contact today' : d === 1 ? 'last contact yesterday' : `last contact ${d} days ago`);
  }
  if (typeof f.distinct_threads_90d === 'number' && f.distinct_threads_90d > 0) {
    parts.push(`${plural(f.distinct_threads_90d, 'conversation')} in the last 90 days`);
  }
  if (typeof f.attachments_30d === 'number' && f.attachments_30d > 0) parts.push(`${plural(f.attachments_30d, 'attachment')} shared in 30 days`);
  if (typeof f.avg_reply_latency_seconds === 'number') parts.push(`usually replies ${duration(f.avg_reply_latency_seconds)}`);
  if (!parts.length) return 'No features recorded yet.';
  const s = parts.join(', ');
  return `${s[0].toUpperCase()}${s.slice(1)}.`;
}

/** The relationship score runs from 0 to 100 (src/relationships/score.ts). */
export function ScoreBar({ score, label }: { score: number; label: string }) {
  const pct = Math.max(0, Math.min(100, score));
  return (
    <span class="scorebar" role="meter" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(pct)} aria-label={label}>
      <svg viewBox="0 0 100 8" preserveAspectRatio="none" aria-hidden="true">
        <rect class="track" x="0" y="0" width="100" height="8" rx="2" />
        <rect class="fill" x="0" y="0" width={pct} height="8" rx="2" />
      </svg>
      <span class="value">{Math.round(pct)}</span>
    </span>
  );
}

function SelfPerson({ onSet }: { onSet: () => void }) {
  const [identifier, setIdentifier] = useState('');
  const [error, setError] = useState<unknown>(null);
  async function submit(e: Event) {
    e.preventDefault();
    try {
      await call('setSelfPerson', { body: { identifier: identifier.trim() } });
      await call('recomputeRelationships', {});
      onSet();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <form class="selfperson" onSubmit={submit}>
      <p>memex does not know yet which person is you. Give one of your email addresses or phone numbers:</p>
      <label for="self-id">Your email or phone</label>
      <div class="row">
        <input id="self-id" type="text" required value={identifier} onInput={(e) => setIdentifier(e.currentTarget.value)} />
        <button type="submit">This is me</button>
      </div>
      <ErrorNote error={error} />
    </form>
  );
}

/**
 * The owner's other addresses (issue 40): people with the owner's name under another address, each claimed with
 * "This is also me" (a manual merge into the self person). Nothing is merged without the click.
 */
function OtherAddresses({ selfId, onClaimed }: { selfId: string; onClaimed: () => void }) {
  const [groups, setGroups] = useState<MergeCandidatesResponseT['groups'] | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [reload, setReload] = useState(0);
  useEffect(() => {
    const ctl = new AbortController();
    call('mergeCandidates', { query: { person_id: selfId } }, { signal: ctl.signal })
      .then((r) => setGroups(r.groups))
      .catch((err) => ctl.signal.aborted || setError(err));
    return () => ctl.abort();
  }, [selfId, reload]);
  const others = (groups ?? []).flatMap((g) => g.people).filter((p) => p.person_id !== selfId);
  if (!others.length && !error) return null;
  async function claim(personId: string) {
    try {
      await call('mergePeople', { body: { target: selfId, source: personId } });
      await call('recomputeRelationships', {});
      setReload((n) => n + 1);
      onClaimed();
    } catch (err) {
      setError(err);
    }
  }
  return (
    <section class="other-addresses" aria-labelledby="other-h">
      <h2 id="other-h">Also you?</h2>
      <p class="meta">These have your name under another address. They stay separate unless you say they are you.</p>
      <ul>
        {others.map((p) => (
          <li key={p.person_id}>
            <bdi>{p.display_name}</bdi> <span class="meta">{[...p.emails, ...p.phones].join(', ')} · {plural(p.message_count, 'message')}</span>{' '}
            <button type="button" onClick={() => claim(p.person_id)}>
              This is also me
            </button>
          </li>
        ))}
      </ul>
      <ErrorNote error={error} />
    </section>
  );
}

export function RelationshipsPage({ params }: { params: URLSearchParams }) {
  const asked = params.get('window') ?? '';
  const win = WINDOWS.includes(asked) || asked === QUIET ? asked : '90d';
  const automated = params.get('automated') === '1';
  // An archive (mail that ends years ago) is ranked as of its newest message rather than today.
  const latest = params.get('as_of') === 'latest';
  // The answer with the tab it was asked for: until this tab's answer arrives nothing is shown, not even
  // for the one render between a click and the effect below (the previous tab's list under "Gone quiet",
  // with gone-quiet notes on last year's ranking, stood there while the request ran).
  const tab = `${win}|${automated ? 1 : 0}|${latest ? 1 : 0}`;
  const [answer, setAnswer] = useState<{ tab: string; top: TopResponseT } | null>(null);
  const data = answer?.tab === tab ? answer.top : null;
  const [noSelf, setNoSelf] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [reload, setReload] = useState(0);

  useEffect(() => {
    const ctl = new AbortController();
    setError(null);
    const query =
      win === QUIET
        ? { gone_quiet: true, window: '3650d', limit: 100, include_automated: automated || undefined, as_of: latest ? 'latest' : undefined }
        : { window: win, limit: 100, include_automated: automated || undefined, as_of: latest ? 'latest' : undefined };
    call('topRelationships', { query }, { signal: ctl.signal })
      .then((r) => {
        setAnswer({ tab, top: r });
        // No self person known: the route ranks every self's edges (self_person_id null); ask who "me" is.
        setNoSelf(r.self_person_id == null);
      })
      .catch((err) => {
        if (ctl.signal.aborted) return;
        if (err instanceof ClientError && err.status === 404) setNoSelf(true);
        else setError(err);
      });
    return () => ctl.abort();
  }, [win, automated, latest, reload]);
  const go = (w: string, auto = automated, asOfLatest = latest) =>
    navigate(href('relationships', { window: w, ...(auto ? { automated: '1' } : {}), ...(asOfLatest ? { as_of: 'latest' } : {}) }));

  return (
    <Page title="Relationships">
      <div class="tabs" role="group" aria-label="Window">
        {WINDOWS.map((w) => (
          <button key={w} type="button" class={w === win ? 'tab active' : 'tab'} aria-pressed={w === win} onClick={() => go(w)}>
            {w === 'all' ? 'All time' : `${parseInt(w, 10)} days`}
          </button>
        ))}
        <button type="button" class={win === QUIET ? 'tab active' : 'tab'} aria-pressed={win === QUIET} onClick={() => go(QUIET)}>
          Gone quiet
        </button>
      </div>
      <label class="check">
        <input type="checkbox" checked={automated} onChange={(e) => go(win, e.currentTarget.checked)} /> Include automated senders
      </label>
      <label class="check">
        <input type="checkbox" checked={latest} onChange={(e) => go(win, automated, e.currentTarget.checked)} /> Count back from the newest
        message (for an archive)
      </label>
      {data && latest && <p class="meta as-of">As of {data.window_end.slice(0, 10)}, the date of the newest message.</p>}
      {win === QUIET && <p class="meta">People you used to write to often and have not written to for two months or more.</p>}
      <ErrorNote error={error} />
      {noSelf && <SelfPerson onSet={() => setReload((n) => n + 1)} />}
      {!data && !noSelf && !error && (
        <p class="status" role="status">
          Ranking people by the messages you exchanged…
        </p>
      )}
      {data && !noSelf && (
        <ol class="ranking">
          {data.relationships.map((r) => (
            <li key={r.person_id}>
              <a href={href(`person/${r.person_id}`)}><bdi>{r.display_name}</bdi></a>
              {r.organization && <span class="meta"> · <bdi>{r.organization}</bdi></span>}
              <ScoreBar score={r.score} label={`Relationship score of ${r.display_name}`} />
              <p class="explain">{win === QUIET ? (quietNote(r.features) ?? explainFeatures(r.features)) : explainFeatures(r.features)}</p>
              {automatedNote(r.features) && <p class="meta automated">{automatedNote(r.features)}</p>}
            </li>
          ))}
          {data.relationships.length === 0 && (
            <li class="empty">
              {win === QUIET ? 'Nobody has gone quiet.' : 'Nobody in this window.'}
              {!latest && (
                <>
                  {' '}
                  <button type="button" onClick={() => go(win, automated, true)}>
                    Count back from the newest message
                  </button>
                </>
              )}
            </li>
          )}
        </ol>
      )}
      {data && !noSelf && data.self_person_id && <OtherAddresses selfId={data.self_person_id} onClaimed={() => setReload((n) => n + 1)} />}
    </Page>
  );
}
