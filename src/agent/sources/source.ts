/**
 * A source, as the source runner (runner.ts) sees it: something that keeps one collector's source up to date by
 * itself — an IMAP folder (IDLE or polling), a collector on a schedule, and later the watched Maildirs, mbox files,
 * `.emlx` trees and chat.db. Small on purpose, so every kind plugs in the same way: start, stop, run now, and a
 * status saying how fresh it is. Pausing is the runner's (it stops the source and remembers); a source only runs.
 *
 * A source never throws out of start() for a failure of its source (a server down, a wrong password): it says so
 * in its status (`backing_off` or `failed`, `last_error` in words) and keeps retrying on its own; the others run on.
 */
import type { SourceIdentity } from '../../coverage/identity.ts';
import { codedError } from '../../util/errors.ts';

export const SOURCE_STATES = ['starting', 'watching', 'polling', 'scheduled', 'running', 'backing_off', 'paused', 'failed', 'stopped'] as const;
/**
 * watching: told by the source when something changes (IMAP IDLE, file-system events); polling: looks every
 * interval; scheduled: runs at the times of its schedule; running: a run is under way; backing_off: the last
 * attempt failed, the next is at next_run_at; paused: by a person; failed: cannot run until its configuration is
 * fixed (it still retries, slowly); stopped: the agent is stopping.
 */
export type SourceState = (typeof SOURCE_STATES)[number];

export interface SourceStatus {
  state: SourceState;
  /** When the source last finished a sync without error (ISO time). */
  last_success_at: string | null;
  /** The newest item the source holds (its date, ISO time), when the source says. */
  newest_at_source: string | null;
  /** The newest item of the source memex stored (its date, ISO time). */
  newest_stored: string | null;
  /** When it runs or tries again next (ISO time); null while watching. */
  next_run_at: string | null;
  /** The last error in words, e.g. "IMAP login refused for dana@example.org: check the app password"; null after a success. */
  last_error: string | null;
  /** How it runs, in words: "IDLE", "polling every 5m", "every 15m", "cron 0 * * * *". */
  mode: string;
  /** Small facts for a person (e.g. uid_max, messages); never secrets. */
  detail?: Record<string, string | number | boolean | null>;
}

export interface Source {
  /** The coverage identity of what it reads: GET /v1/coverage lists its freshness under the same source. */
  readonly identity: SourceIdentity;
  /** Short name for logs and `memex status`: "imap dove/INBOX". */
  readonly label: string;
  /** Begins keeping the source up to date; resolves once started (not once synced). */
  start(): Promise<void>;
  /** Stops; a run under way is left to finish or cut at a safe point. Resolves when nothing of it runs. */
  stop(): Promise<void>;
  /** Runs once now; rejects with SourceBusyError when a run is under way. */
  runNow(): Promise<void>;
  status(): SourceStatus;
  /** Called by the source when its status changed (the runner reports it to the gateway soon after). */
  onStatusChange?: (() => void) | undefined;
}

/** A run was asked for while one is under way (HTTP 409, as the spec says for concurrent runs). */
export class SourceBusyError extends codedError('AGENT.SOURCE_BUSY') {
  override name = 'SourceBusyError';
}

/** Exponential back-off with jitter: 1 s, 2 s, 4 s … up to `maxMs` (default 5 min); reset after a success. */
export class Backoff {
  private attempt = 0;
  constructor(
    private readonly firstMs = 1000,
    private readonly maxMs = 300_000,
    private readonly random: () => number = Math.random,
  ) {}

  /** The wait before the next attempt; each call doubles it. */
  next(): number {
    const base = Math.min(this.maxMs, this.firstMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(base * (0.75 + 0.5 * this.random()));
  }

  get attempts(): number {
    return this.attempt;
  }

  reset(): void {
    this.attempt = 0;
  }
}

export const iso = (d: Date | number | null | undefined): string | null => (d == null ? null : new Date(d).toISOString());

/** The later of two ISO times (either may be null). */
export function laterIso(a: string | null, b: string | null): string | null {
  if (!a) return b;
  if (!b) return a;
  return Date.parse(a) >= Date.parse(b) ? a : b;
}

/** A cancellable wait: resolves after `ms`, or early when `signal` aborts. */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}
