/**
 * Watching a source for changes (issue 41): file-system events (node's fs.watch, one watcher per folder, not
 * recursive: Linux's inotify and macOS's FSEvents both give a folder's entries) start a run of the source's
 * collector a moment after the last event (debounced: a mail client writing fifty messages starts one run,
 * not fifty), and a periodic run is the safety net for what events miss (a network file system, a folder made
 * after the watch began, an event queue that overflowed). Runs never overlap: an event during a run starts one
 * more run after it.
 *
 * Behind a small start/stop interface (SourceWatcher), so whatever runs sources (`memex import mail --watch`,
 * the agent's modules, the source runner of `memex serve`) can host them the same way.
 */
import fs from 'node:fs';
import path from 'node:path';

export type WatcherState = 'starting' | 'watching' | 'running' | 'stopped';

export interface WatcherStatus {
  state: WatcherState;
  /** When the last run finished (ISO), successful or not. */
  last_run_at: string | null;
  /** When the last run without an error finished (ISO). */
  last_success_at: string | null;
  /** The last run's error in words, or null. */
  last_error: string | null;
  /** Runs finished since start. */
  runs: number;
  /** Folders and files watched by events now (the periodic run covers the rest). */
  watched: number;
}

export interface SourceWatcher {
  readonly name: string;
  /** Runs once at once, then on every change; resolves after the first run. */
  start(): Promise<void>;
  /** Stops watching; resolves once a run under way has finished. */
  stop(): Promise<void>;
  status(): WatcherStatus;
  /** A run soon (as if something changed); resolves when a run that started after the call has finished. */
  poke(why?: string): Promise<void>;
}

/** A folder to watch, and which of its entries matter (all when `match` is missing). */
export interface WatchTarget {
  dir: string;
  match?: (name: string) => boolean;
}

export interface ChangeTriggerOptions {
  name: string;
  /** What to watch; asked again after each run (folders appear). */
  targets: () => WatchTarget[] | Promise<WatchTarget[]>;
  /** One run of the collector; its error is kept in the status, and the watch goes on. */
  run: (why: string) => Promise<void>;
  /** Quiet time after the last event before a run (default 250 ms); a stream of events runs at least every `maxDelayMs`. */
  debounceMs?: number;
  maxDelayMs?: number;
  /** The safety-net run (default 120 s; 0: none). */
  rescanMs?: number;
  log?: { warn(obj: object, msg?: string): void };
}

export class ChangeTrigger implements SourceWatcher {
  readonly name: string;
  private readonly watchers = new Map<string, fs.FSWatcher>();
  private timer: NodeJS.Timeout | null = null;
  private firstEventAt = 0;
  private interval: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private again = false;
  private waiters: (() => void)[] = [];
  private st: WatcherStatus = { state: 'starting', last_run_at: null, last_success_at: null, last_error: null, runs: 0, watched: 0 };

  constructor(private readonly opts: ChangeTriggerOptions) {
    this.name = opts.name;
  }

  status(): WatcherStatus {
    return { ...this.st, watched: this.watchers.size };
  }

  async start(): Promise<void> {
    // Watching before the first run: what is written while it runs starts one more.
    await this.refreshWatchers().catch(() => undefined);
    await this.runNow('start');
    if (this.st.state === 'stopped') return;
    const every = this.opts.rescanMs ?? 120_000;
    if (every > 0) {
      this.interval = setInterval(() => this.schedule('rescan', 0), every);
      this.interval.unref();
    }
  }

  async stop(): Promise<void> {
    this.st.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    if (this.interval) clearInterval(this.interval);
    this.timer = this.interval = null;
    for (const w of this.watchers.values()) w.close();
    this.watchers.clear();
    await this.running;
    for (const w of this.waiters.splice(0)) w();
  }

  poke(why = 'asked'): Promise<void> {
    return new Promise<void>((resolve) => {
      this.waiters.push(resolve);
      this.schedule(why, 0);
    });
  }

  private schedule(why: string, delay = this.opts.debounceMs ?? 250): void {
    if (this.st.state === 'stopped') return;
    if (this.running) {
      this.again = true;
      return;
    }
    const now = Date.now();
    if (!this.timer) this.firstEventAt = now;
    else clearTimeout(this.timer);
    // Debounced, but a folder that never goes quiet is still looked at every maxDelayMs.
    const wait = Math.max(0, Math.min(delay, this.firstEventAt + (this.opts.maxDelayMs ?? 2000) - now));
    this.timer = setTimeout(() => {
      this.timer = null;
      void this.runNow(why);
    }, wait);
  }

  private async runNow(why: string): Promise<void> {
    if (this.st.state === 'stopped') return;
    const waiting = this.waiters.splice(0);
    this.st.state = 'running';
    this.running = (async () => {
      try {
        await this.opts.run(why);
        this.st.last_success_at = new Date().toISOString();
        this.st.last_error = null;
      } catch (err) {
        this.st.last_error = (err as Error).message;
        this.opts.log?.warn({ watcher: this.name, err: (err as Error).message }, 'watched source: run failed; the watch goes on');
      }
      this.st.last_run_at = new Date().toISOString();
      this.st.runs++;
      await this.refreshWatchers().catch(() => undefined);
    })();
    await this.running;
    this.running = null;
    if ((this.st.state as WatcherState) !== 'stopped') this.st.state = 'watching';
    for (const w of waiting) w();
    if (this.again) {
      this.again = false;
      this.schedule('changed during a run');
    }
  }

  /** Watches what `targets` names now: new folders are added, vanished ones dropped. */
  private async refreshWatchers(): Promise<void> {
    if (this.st.state === 'stopped') return;
    const targets = await this.opts.targets();
    if ((this.st.state as WatcherState) === 'stopped') return; // stopped while the targets were listed: nothing is left watching
    const want = new Map(targets.map((t) => [path.resolve(t.dir), t]));
    for (const [dir, w] of this.watchers) {
      if (!want.has(dir)) {
        w.close();
        this.watchers.delete(dir);
      }
    }
    for (const [dir, t] of want) {
      if (this.watchers.has(dir)) continue;
      try {
        const w = fs.watch(dir, { persistent: false }, (_event, name) => {
          if (!t.match || (name !== null && t.match(String(name)))) this.schedule('changed');
        });
        w.on('error', () => {
          w.close();
          this.watchers.delete(dir); // gone: the next run (or the periodic one) looks again
          this.schedule('a watched folder went away');
        });
        this.watchers.set(dir, w);
      } catch {
        /* not there (yet) or not watchable: the periodic run covers it */
      }
    }
  }
}
