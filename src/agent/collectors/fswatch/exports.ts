/**
 * Exports in watched folders (issue 43, item 1: "the same formats in watched folders"). A file of a watched
 * folder that belongs to an export `memex import` takes (a WhatsApp chat, a Telegram or Slack export, a browser's
 * history, a Google Takeout, an Obsidian vault's notes) is not sent as a `localfs` file: it is handed to that
 * export's importer, which stores it as what it is (chats, notes, pages) with its own coverage run.
 *
 * The agent does not know the importers (they stand above it): whoever starts the agent hands in an
 * `ExportHandoff` (src/imports/watch.ts) that says which export a file belongs to and runs its import. Files of
 * one export are gathered: a burst of changes (a vault synced, a Slack export unpacked) is one import of the
 * export after the folder has been quiet for the debounce time, and one export is imported at a time.
 */

/** The export a watched file belongs to. */
export interface ExportClaim {
  /** What `memex import` is given: the file itself, or the export's folder (a vault, an unpacked export). */
  root: string;
  /** What it is, for events and logs ("Obsidian vault", "Slack export"…). */
  kind: string;
}

export interface ExportRunResult {
  /** The import's exit status: 0 stored, 1 some items failed (in its coverage), 2 not imported at all. */
  code: number;
  /** What the import printed. */
  output: string;
}

export interface ExportHandoff {
  /** The export `file` (inside the watched folder `watchRoot`) belongs to; null for an ordinary file. */
  claim(file: string, watchRoot: string): Promise<ExportClaim | null>;
  /** Imports the export at `root` (as `memex import ROOT` would, against the agent's gateway). */
  run(claim: ExportClaim): Promise<ExportRunResult>;
}

export interface ExportRunsOptions {
  handoff: ExportHandoff;
  debounceMs: number;
  retryBaseMs: number;
  /** Told of each run: what was imported and how it went. */
  onRun(claim: ExportClaim, watchId: string, result: ExportRunResult | { error: string }): void;
  /** Told when a run failed as a whole: its files must be handed over again (they are retried later). */
  onFailed(claim: ExportClaim, watchId: string): void;
}

/** The pending and running imports of exports, one at a time, each debounced. */
export class ExportRuns {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly waiting = new Map<string, { claim: ExportClaim; watchId: string }>();
  private readonly retries = new Map<string, number>();
  private chain: Promise<void> = Promise.resolve();
  private running = 0;
  private closed = false;

  constructor(private readonly opts: ExportRunsOptions) {}

  /** Imports `claim.root` once the folder has been quiet for the debounce time (again, when it changes later). */
  schedule(claim: ExportClaim, watchId: string, delay = this.opts.debounceMs): void {
    if (this.closed) return;
    const t = this.timers.get(claim.root);
    if (t) clearTimeout(t);
    this.waiting.set(claim.root, { claim, watchId });
    this.timers.set(
      claim.root,
      setTimeout(() => {
        this.timers.delete(claim.root);
        this.running++;
        this.chain = this.chain.then(() => this.runOne(claim.root)).finally(() => {
          this.running--;
          this.settled();
        });
      }, delay),
    );
  }

  private async runOne(root: string): Promise<void> {
    const job = this.waiting.get(root);
    if (!job || this.closed) return;
    this.waiting.delete(root);
    let result: ExportRunResult | { error: string };
    try {
      result = await this.opts.handoff.run(job.claim);
    } catch (err) {
      result = { error: (err as Error).message };
    }
    this.opts.onRun(job.claim, job.watchId, result);
    if ('error' in result || result.code >= 2) {
      // Not imported at all (the server unreachable, the export unreadable as a whole): its files are handed
      // over again, and the export is tried again later with a growing delay.
      this.opts.onFailed(job.claim, job.watchId);
      const n = (this.retries.get(root) ?? 0) + 1;
      this.retries.set(root, n);
      if (n <= 6) this.schedule(job.claim, job.watchId, Math.min(60_000, this.opts.retryBaseMs * 2 ** (n - 1)));
    } else this.retries.delete(root);
  }

  private idleWaiters: Array<() => void> = [];

  idle(): boolean {
    return this.timers.size === 0 && this.running === 0;
  }

  /** Resolves when nothing waits or runs. */
  whenIdle(): Promise<void> {
    if (this.idle()) return Promise.resolve();
    return new Promise((r) => this.idleWaiters.push(r));
  }

  private settled(): void {
    if (!this.idle()) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const w of waiters) w();
  }

  /** Pending and running imports, for the module's stats. */
  pending(): number {
    return this.timers.size + this.running;
  }

  /** Stops scheduling; lets a running import finish (bounded by the caller). */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
    await this.chain;
    this.settled();
  }
}
