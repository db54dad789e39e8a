/**
 * A watched source (docs/sources.md): a collector whose source lives in files on this host — a Mail.app `.emlx`
 * tree, Messages' chat.db and its -wal — kept current by file-system events. The watch itself is a ChangeTrigger
 * (./watch.ts: events debounced into one run, a periodic rescan as the safety net); this class makes it
 * a Source the runner starts, pauses and reports, with the collector's own run (the one its `POST …:run` runs):
 *
 * - Runs never overlap: the trigger runs one at a time, `runNow` (POST /v1/sources/{id}:run) is refused with
 *   SourceBusyError while a run is under way, and a run that finds the collector busy (someone's POST …:run,
 *   answered 409 by the collector's guard) waits a moment and looks again.
 * - A failed run backs off (1 s, 2 s, 4 s … up to 5 min): events meanwhile are folded into the retry. An error
 *   `permanent` calls a configuration problem (no such folder, no access) makes the state `failed`; it is retried
 *   the same way, since a person may fix it any moment.
 */
import type { SourceIdentity } from '../../coverage/identity.ts';
import { ChangeTrigger, type WatchTarget } from './watch.ts';
import type { RunOutcomeFacts } from './scheduled.ts';
import { formatDuration } from './schedule.ts';
import { Backoff, iso, laterIso, SourceBusyError, type Source, type SourceState, type SourceStatus } from './source.ts';

export interface WatchedSourceOptions {
  identity: SourceIdentity;
  label: string;
  /** The folders (and which of their entries) whose changes start a run; asked again after each run. */
  targets: () => WatchTarget[] | Promise<WatchTarget[]>;
  /** One run of the collector; throws SourceBusyError (or an error with status 409) when it is already running. */
  run: () => Promise<RunOutcomeFacts | void>;
  /** A failure a person has to fix (state `failed` rather than `backing_off`). */
  permanent?: (err: unknown) => boolean;
  debounceMs?: number;
  /** The safety-net rescan (default 120 s). */
  rescanMs?: number;
  /** First and longest wait after a failure (default 1 s and 5 min). */
  backoffMs?: [number, number];
  log?: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
}

const DEFAULT_RESCAN_MS = 120_000;
const BUSY_RETRY_MS = 1000;
const isBusy = (err: unknown) => err instanceof SourceBusyError || (err as { status?: number })?.status === 409;

export class WatchedSource implements Source {
  readonly identity: SourceIdentity;
  readonly label: string;
  onStatusChange?: () => void;
  private trigger: ChangeTrigger | null = null;
  private started: Promise<void> | null = null;
  private current: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private busyTimer: NodeJS.Timeout | null = null;
  private state: SourceState = 'stopped';
  private lastSuccess: string | null = null;
  private lastError: string | null = null;
  private nextAt: Date | null = null;
  private newestStored: string | null = null;
  private newestAtSource: string | null = null;
  private detail: SourceStatus['detail'];
  private runs = 0;
  private readonly backoff: Backoff;

  constructor(private readonly opts: WatchedSourceOptions) {
    this.identity = opts.identity;
    this.label = opts.label;
    this.backoff = new Backoff(opts.backoffMs?.[0] ?? 1000, opts.backoffMs?.[1] ?? 300_000);
  }

  /** Resolves once the watch is set up; the first run (a catch-up) goes on behind it. */
  async start(): Promise<void> {
    if (this.trigger) return;
    this.set('starting');
    const trigger = new ChangeTrigger({
      name: this.label,
      targets: this.opts.targets,
      debounceMs: this.opts.debounceMs,
      rescanMs: this.opts.rescanMs ?? DEFAULT_RESCAN_MS,
      run: (why) => this.triggered(why),
      log: this.opts.log,
    });
    this.trigger = trigger;
    this.started = trigger.start().catch((err) => this.opts.log?.warn({ source: this.label, err: (err as Error).message }, 'watched source did not start'));
  }

  async stop(): Promise<void> {
    const trigger = this.trigger;
    this.trigger = null;
    this.clearTimers();
    this.nextAt = null;
    await trigger?.stop();
    await this.started;
    await this.current?.catch(() => undefined);
    this.set('stopped');
  }

  async runNow(): Promise<void> {
    if (this.current) throw new SourceBusyError(`A run of ${this.label} is already in progress`);
    this.clearTimers();
    await this.once(true);
  }

  status(): SourceStatus {
    return {
      state: this.state,
      last_success_at: this.lastSuccess,
      newest_at_source: this.newestAtSource,
      newest_stored: this.newestStored,
      next_run_at: iso(this.nextAt),
      last_error: this.lastError,
      mode: `watched (file-system events, rescan every ${formatDuration(this.opts.rescanMs ?? DEFAULT_RESCAN_MS)})`,
      detail: { ...this.detail, runs: this.runs, watched: this.trigger?.status().watched ?? 0 },
    };
  }

  /** A run the trigger asked for (a change, the rescan, the first run, a retry). */
  private async triggered(why: string): Promise<void> {
    // A POST /v1/sources/{id}:run under way: this change is looked at after it.
    while (this.current) await this.current.catch(() => undefined);
    // Backing off: what changed meanwhile waits for the retry, which reads it.
    if (this.retryTimer && why !== 'retry') return;
    await this.once(false).catch(() => undefined);
  }

  private once(manual: boolean): Promise<void> {
    const run = this.execute(manual);
    this.current = run;
    return run.finally(() => {
      if (this.current === run) this.current = null;
    });
  }

  private async execute(manual: boolean): Promise<void> {
    this.set('running');
    try {
      const facts = await this.opts.run();
      this.runs++;
      this.lastSuccess = iso(new Date());
      this.lastError = null;
      if (facts) {
        this.newestStored = laterIso(this.newestStored, facts.newest_stored ?? null);
        this.newestAtSource = facts.newest_at_source ?? this.newestAtSource;
        if (facts.detail) this.detail = facts.detail;
      }
      this.backoff.reset();
      this.nextAt = null;
      this.set(this.trigger ? 'watching' : 'stopped');
    } catch (err) {
      if (isBusy(err)) {
        // The collector's own run (its POST …:run) is under way: look again once it is likely done.
        this.set(this.trigger ? 'watching' : 'stopped');
        if (manual) throw err instanceof SourceBusyError ? err : new SourceBusyError((err as Error).message);
        this.later('busyTimer', BUSY_RETRY_MS, 'after a run already under way');
        return;
      }
      this.runs++;
      this.lastError = (err as Error).message;
      const wait = this.backoff.next();
      this.nextAt = new Date(Date.now() + wait);
      this.opts.log?.warn({ source: this.label, err: this.lastError, retry_in_ms: wait }, 'watched source: run failed; trying again after a pause');
      this.later('retryTimer', wait, 'retry');
      this.set(this.trigger ? (this.opts.permanent?.(err) ? 'failed' : 'backing_off') : 'stopped');
      throw err;
    }
  }

  private later(which: 'retryTimer' | 'busyTimer', ms: number, why: string): void {
    if (!this.trigger) return;
    if (this[which]) clearTimeout(this[which]!);
    const t = setTimeout(() => {
      if (this[which] === t) this[which] = null;
      void this.trigger?.poke(why);
    }, ms);
    t.unref();
    this[which] = t;
  }

  private clearTimers(): void {
    for (const which of ['retryTimer', 'busyTimer'] as const) {
      if (this[which]) clearTimeout(this[which]!);
      this[which] = null;
    }
  }

  private set(state: SourceState): void {
    this.state = state;
    this.onStatusChange?.();
  }
}
