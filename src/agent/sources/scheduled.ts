/**
 * A collector on a schedule (`schedule: {every: 15m}` or `{cron: "0 * * * *"}`): runs the same function its
 * `POST /v1/collectors/…:run` route runs, so the two never overlap — the collector's own "already running" guard
 * answers the route 409 while a scheduled run is under way, and a scheduled time that finds a run under way
 * (started by the route) is skipped and waits for the next time. A failed run backs off (1 s, 2 s … capped
 * by the schedule's own interval) and is tried again; the schedule goes on.
 */
import type { SourceIdentity } from '../../coverage/identity.ts';
import { nextRunTime, type Schedule } from './schedule.ts';
import { Backoff, iso, laterIso, SourceBusyError, type Source, type SourceState, type SourceStatus } from './source.ts';

export interface RunOutcomeFacts {
  newest_stored?: string | null;
  newest_at_source?: string | null;
  detail?: SourceStatus['detail'];
}

export interface ScheduledSourceOptions {
  identity: SourceIdentity;
  label: string;
  schedule: Schedule;
  /** One run; throws SourceBusyError (or an error with status 409) when the collector is already running. */
  run: () => Promise<RunOutcomeFacts | void>;
  log?: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
  now?: () => Date;
}

const isBusy = (err: unknown) => err instanceof SourceBusyError || (err as { status?: number })?.status === 409;

export class ScheduledSource implements Source {
  readonly identity: SourceIdentity;
  readonly label: string;
  onStatusChange?: () => void;
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;
  private state: SourceState = 'stopped';
  private lastSuccess: string | null = null;
  private lastError: string | null = null;
  private nextAt: Date | null = null;
  private newestStored: string | null = null;
  private newestAtSource: string | null = null;
  private detail: SourceStatus['detail'];
  private readonly backoff: Backoff;
  private readonly now: () => Date;

  constructor(private readonly opts: ScheduledSourceOptions) {
    this.identity = opts.identity;
    this.label = opts.label;
    this.now = opts.now ?? (() => new Date());
    const cap = opts.schedule.kind === 'every' ? opts.schedule.ms : 3_600_000;
    this.backoff = new Backoff(1000, Math.max(1000, cap));
  }

  async start(): Promise<void> {
    this.stopped = false;
    this.plan(nextRunTime(this.opts.schedule, this.now()), 'scheduled');
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.nextAt = null;
    await this.running?.catch(() => undefined);
    this.set('stopped');
  }

  async runNow(): Promise<void> {
    if (this.running) throw new SourceBusyError(`A run of ${this.label} is already in progress`);
    await this.fire(true);
  }

  status(): SourceStatus {
    return {
      state: this.state,
      last_success_at: this.lastSuccess,
      newest_at_source: this.newestAtSource,
      newest_stored: this.newestStored,
      next_run_at: iso(this.nextAt),
      last_error: this.lastError,
      mode: this.opts.schedule.text,
      ...(this.detail ? { detail: this.detail } : {}),
    };
  }

  private set(state: SourceState): void {
    this.state = state;
    this.onStatusChange?.();
  }

  private plan(at: Date, state: SourceState): void {
    if (this.stopped) return;
    if (this.timer) clearTimeout(this.timer);
    this.nextAt = at;
    // setTimeout holds at most ~24.8 days; a later time is reached in steps.
    const wait = Math.min(Math.max(0, at.getTime() - this.now().getTime()), 2 ** 31 - 1);
    this.timer = setTimeout(() => {
      if (this.now().getTime() + 5 < at.getTime()) return this.plan(at, state);
      void this.fire(false);
    }, wait);
    this.timer.unref?.();
    this.set(state);
  }

  private async fire(manual: boolean): Promise<void> {
    if (this.running) return;
    const started = this.now();
    let done!: () => void;
    this.running = new Promise<void>((r) => (done = r));
    this.set('running');
    try {
      const facts = await this.opts.run();
      this.lastSuccess = iso(this.now());
      this.lastError = null;
      if (facts) {
        this.newestStored = laterIso(this.newestStored, facts.newest_stored ?? null);
        this.newestAtSource = facts.newest_at_source ?? this.newestAtSource;
        if (facts.detail) this.detail = facts.detail;
      }
      this.backoff.reset();
      this.running = null;
      done();
      this.plan(nextRunTime(this.opts.schedule, manual ? this.now() : started), 'scheduled');
    } catch (err) {
      this.running = null;
      done();
      if (isBusy(err)) {
        // Someone's POST …:run is under way: this time is skipped, the schedule goes on.
        this.opts.log?.info({ source: this.label }, 'scheduled run skipped: a run is already in progress');
        if (manual) throw err instanceof SourceBusyError ? err : new SourceBusyError((err as Error).message);
        this.plan(nextRunTime(this.opts.schedule, started), 'scheduled');
        return;
      }
      this.lastError = (err as Error).message;
      this.opts.log?.warn({ source: this.label, err: this.lastError }, 'scheduled run failed; trying again after a pause');
      const retry = new Date(this.now().getTime() + this.backoff.next());
      const regular = nextRunTime(this.opts.schedule, started);
      this.plan(retry < regular ? retry : regular, 'backing_off');
      if (manual) throw err;
    }
  }
}
