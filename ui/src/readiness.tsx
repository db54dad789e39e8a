/**
 * What the server is still preparing, for the search page: the search index while it is read at
 * start (GET /v1/readyz: "preparing the index (n %)" instead of empty results), and how much of the
 * recent past is searchable by meaning yet while the embedding queue runs (GET /v1/status).
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response types: type-only imports, erased in the build, so no server code is bundled.
import type { ReadinessT, StatusResponseT } from '../../src/schemas/status.ts';
import { call, ClientError } from './api.ts';

export interface Readiness {
  /** Searches are answered from a complete index (true until the server says otherwise). */
  ready: boolean;
  /** Share of the index read, 0..1. */
  progress: number;
  /** Ask the server again (a search was refused because it is not ready). */
  recheck(): void;
}

const POLL_MS = 1000;

/** Whether a search was refused because the server is still preparing (503 with a phase). */
export function notReadyError(err: unknown): boolean {
  return err instanceof ClientError && err.status === 503 && typeof (err.json as { phase?: unknown } | undefined)?.phase === 'string';
}

/** GET /v1/readyz until it answers 200, once a second, from the page's start or a recheck(). */
export function useReadiness(): Readiness {
  const [state, setState] = useState({ ready: true, progress: 1 });
  const [round, setRound] = useState(0);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const ask = async () => {
      try {
        // 503 while the index is prepared: its body says how far it is.
        const body: Partial<ReadinessT> = await call('readiness', {}).catch((err: unknown) => {
          if (err instanceof ClientError && err.status > 0) return (err.json ?? {}) as Partial<ReadinessT>;
          throw err;
        });
        if (stopped) return;
        const ready = body.ready === true;
        setState({ ready, progress: typeof body.progress === 'number' ? body.progress : 0 });
        if (!ready) timer = setTimeout(ask, POLL_MS);
      } catch {
        // The server is away (restarting): ask again.
        if (!stopped) timer = setTimeout(ask, POLL_MS);
      }
    };
    void ask();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [round]);
  return { ...state, recheck: () => setRound((r) => r + 1) };
}

export function preparingText(r: Readiness): string {
  return `Preparing the index (${Math.floor(100 * r.progress)} %)…`;
}

type Share = StatusResponseT['meaning_searchable']['last_30_days'];

/** How often the share is read again while the queue runs. */
const SHARE_POLL_MS = 30_000;

/**
 * "Meaning search covers 42 % of the last 30 days so far" while the embedding queue has not reached
 * all of the last 30 days; nothing once it has (or without documents).
 */
export function MeaningNote() {
  const [share, setShare] = useState<{ d30: Share; d365: Share } | null>(null);
  useEffect(() => {
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const read = async () => {
      try {
        const s: Partial<StatusResponseT> = await call('status', {});
        if (stopped || !s.meaning_searchable) return;
        const next = { d30: s.meaning_searchable.last_30_days, d365: s.meaning_searchable.last_365_days };
        setShare(next);
        if ((next.d30.share ?? 1) < 1 || (next.d365.share ?? 1) < 1) timer = setTimeout(read, SHARE_POLL_MS);
      } catch {
        /* the note is a courtesy: no note */
      }
    };
    void read();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, []);
  if (!share || share.d30.share === null || (share.d30.share >= 1 && (share.d365.share ?? 1) >= 1)) return null;
  const pct = (s: Share) => `${Math.floor(100 * (s.share ?? 1))} %`;
  return (
    <p class="status meaning-note">
      Meaning search covers {pct(share.d30)} of the last 30 days and {pct(share.d365)} of the last year so far (newest first); words
      find everything already.
    </p>
  );
}
