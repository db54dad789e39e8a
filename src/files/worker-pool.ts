/**
 * One long-lived worker thread that runs extraction jobs one at a time with a wall-clock and a heap budget (the PDF
 * and HTML extractors use one each). Starting a worker and loading its library costs ~100-200 ms, so the worker is
 * reused; a job over its time budget, a crash or an out-of-memory exit terminates it and the next job starts a
 * fresh one. The worker is recycled after `recycleAfter` jobs and shut down when idle, and it never keeps the
 * process alive (unref).
 *
 * Worker protocol: the script posts `{ready: true}` once loaded (a job's time budget starts only then, so a cold
 * start under load is not counted), then answers each `{id, ...message}` with `{id, ok: true, ...}` or
 * `{id, ok: false, error}`.
 */
import { Worker, type TransferListItem } from 'node:worker_threads';

export type WorkerFailure = { ok: false; error: string };

export interface WorkerJob {
  message: Record<string, unknown>;
  transfer?: TransferListItem[];
  timeoutMs: number;
  memoryMb: number;
  /** The error a job over its time budget answers with. */
  timeoutError: string;
}

interface Queued<R> extends WorkerJob {
  id: number;
  resolve: (r: R | WorkerFailure) => void;
}

export interface WorkerPoolOptions {
  script: URL;
  /** Names the jobs in error messages: "PDF extraction", "HTML conversion". */
  what: string;
  /** Discard the worker's stdout and stderr (pdf.js prints warnings for damaged files). */
  quiet?: boolean;
  recycleAfter?: number;
  idleMs?: number;
}

export class WorkerPool<R extends { ok: boolean }> {
  private worker: Worker | undefined;
  private ready = false;
  private workerMemoryMb = 0;
  private jobsOnWorker = 0;
  private queue: Queued<R>[] = [];
  private current: { job: Queued<R>; timer: NodeJS.Timeout | undefined } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 1;

  constructor(private readonly opts: WorkerPoolOptions) {}

  run(job: WorkerJob): Promise<R | WorkerFailure> {
    return new Promise((resolve) => {
      this.queue.push({ ...job, id: this.nextId++, resolve });
      this.pump();
    });
  }

  /** Terminates the worker (tests, shutdown). Queued jobs still run on a new worker. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private spawn(memoryMb: number): Worker {
    const quiet = this.opts.quiet ?? false;
    const w = new Worker(this.opts.script, {
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: 64 },
      stdout: quiet,
      stderr: quiet,
    });
    if (quiet) {
      w.stdout.resume();
      w.stderr.resume();
    }
    w.unref();
    w.on('message', (m: (R & { id: number }) | { ready: true }) => {
      if (w !== this.worker) return;
      if ('ready' in m) {
        this.ready = true;
        this.start();
      } else if (this.current?.job.id === m.id) this.finish(m);
    });
    w.on('error', (e: Error & { code?: string }) => {
      if (w !== this.worker) return;
      const lim = this.current?.job.memoryMb ?? memoryMb;
      this.fail(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `${this.opts.what} exceeded ${lim} MB of memory` : `${this.opts.what} crashed: ${e.message}`);
    });
    w.on('exit', (code) => {
      if (w === this.worker) this.fail(`${this.opts.what} stopped (exit code ${code})`);
    });
    this.workerMemoryMb = memoryMb;
    this.jobsOnWorker = 0;
    this.ready = false;
    return w;
  }

  private pump(): void {
    if (this.current || this.queue.length === 0) return;
    clearTimeout(this.idleTimer);
    const job = this.queue.shift()!;
    if (this.worker && (this.workerMemoryMb !== job.memoryMb || this.jobsOnWorker >= (this.opts.recycleAfter ?? 200))) {
      void this.close();
    }
    this.worker ??= this.spawn(job.memoryMb);
    this.jobsOnWorker++;
    this.current = { job, timer: undefined };
    if (this.ready) this.start();
  }

  /** Sends the current job to a ready worker and starts its time budget. */
  private start(): void {
    const cur = this.current;
    if (!cur || cur.timer || !this.worker) return;
    const { job } = cur;
    cur.timer = setTimeout(() => this.fail(job.timeoutError), job.timeoutMs);
    this.worker.postMessage({ ...job.message, id: job.id }, job.transfer ?? []);
  }

  private finish(reply: R | WorkerFailure): void {
    const cur = this.current;
    if (!cur) return;
    clearTimeout(cur.timer);
    this.current = undefined;
    cur.job.resolve(reply);
    if (this.queue.length) this.pump();
    else {
      this.idleTimer = setTimeout(() => void this.close(), this.opts.idleMs ?? 30_000);
      this.idleTimer.unref();
    }
  }

  /** The current job failed in a way that leaves the worker unusable: kill it, answer the job, go on. */
  private fail(error: string): void {
    const w = this.worker;
    this.worker = undefined;
    if (w) void w.terminate();
    if (this.current) this.finish({ ok: false, error });
  }
}
