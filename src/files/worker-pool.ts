/**
 * One long-lived extraction process that runs jobs one at a time with a wall-clock and a memory budget (the PDF and
 * HTML extractors use one each). Starting it and loading its library costs ~100-300 ms, so it is reused; a job over
 * its time or memory budget, a crash or an out-of-memory exit kills it and the next job starts a fresh one. It is
 * recycled after `recycleAfter` jobs and shut down when idle, and it never keeps the server alive (unref).
 *
 * Why a child process and not a worker thread (issue 47): a thread's `resourceLimits` bound only its JavaScript heap,
 * while pdf.js inflates streams into ArrayBuffers, which live outside the heap. A 1 MB PDF whose stream inflates to
 * 1 GiB raised the server's resident memory by 1.5 GB inside a "512 MB" worker, and the freed memory stayed with the
 * server's allocator. In its own process the job's memory is the process's: it is measured (resident set, read from
 * /proc, or `ps` elsewhere, every POLL_MS while a job runs), the process is killed past the budget, and the operating
 * system takes all of it back. The heap gets the same bound (--max-old-space-size). The child gets an empty
 * environment: it needs no setting, and it must not hold the server's secrets.
 *
 * Process protocol (IPC, structured clone): the script sends `{ready: true, rss}` once loaded (a job's time budget
 * starts only then, so a cold start under load is not counted; `rss` is its idle size, which the memory budget comes
 * on top of), then answers each `{id, ...message}` with `{id, ok: true, ...}` or `{id, ok: false, error}`.
 */
import { execFile, fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

export type WorkerFailure = { ok: false; error: string };

export interface WorkerJob {
  message: Record<string, unknown>;
  timeoutMs: number;
  /** Memory the job may use on top of the idle process (resident set), and the process's heap limit. */
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
  /** Discard the process's stdout and stderr (pdf.js prints warnings for damaged files). */
  quiet?: boolean;
  recycleAfter?: number;
  idleMs?: number;
}

/** How often a running job's memory is measured. An inflating stream grows ~100-300 MB/s, so 50 ms overshoots little. */
const POLL_MS = 50;
const MB = 1024 * 1024;

/** Resident memory of a process in bytes, or undefined when it cannot be read (it has exited). */
async function residentBytes(pid: number): Promise<number | undefined> {
  if (process.platform === 'linux') {
    const status = await fs.readFile(`/proc/${pid}/status`, 'utf8').catch(() => '');
    const kb = /^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1];
    return kb === undefined ? undefined : Number(kb) * 1024;
  }
  return new Promise((resolve) => {
    execFile('ps', ['-o', 'rss=', '-p', String(pid)], (err, out) => {
      const kb = Number(String(out).trim());
      resolve(err || !Number.isFinite(kb) || kb <= 0 ? undefined : kb * 1024);
    });
  });
}

export class WorkerPool<R extends { ok: boolean }> {
  private worker: ChildProcess | undefined;
  private ready = false;
  private idleRss = 0;
  private workerMemoryMb = 0;
  private jobsOnWorker = 0;
  private queue: Queued<R>[] = [];
  private current: { job: Queued<R>; timer: NodeJS.Timeout | undefined; poll: NodeJS.Timeout | undefined } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 1;

  constructor(private readonly opts: WorkerPoolOptions) {}

  run(job: WorkerJob): Promise<R | WorkerFailure> {
    return new Promise((resolve) => {
      this.queue.push({ ...job, id: this.nextId++, resolve });
      this.pump();
    });
  }

  /** Stops the process (tests, shutdown). Queued jobs still run on a new one. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w && w.exitCode === null && w.signalCode === null) {
      const exited = new Promise<void>((resolve) => w.once('exit', () => resolve()));
      w.kill('SIGKILL');
      await exited;
    }
  }

  private spawn(memoryMb: number): ChildProcess {
    const quiet = this.opts.quiet ?? false;
    const w = fork(fileURLToPath(this.opts.script), [], {
      // Only the heap limit: not the parent's flags (a test runner's loader) and not its environment (secrets).
      execArgv: [`--max-old-space-size=${memoryMb}`, '--max-semi-space-size=16'],
      env: {},
      serialization: 'advanced',
      // stderr is read (and passed on unless quiet): V8 says there why it aborted.
      stdio: ['ignore', quiet ? 'ignore' : 'inherit', 'pipe', 'ipc'],
    });
    w.unref();
    w.channel?.unref();
    let stderrTail = '';
    w.stderr?.on('data', (b: Buffer) => {
      if (!quiet) process.stderr.write(b);
      stderrTail = (stderrTail + b.toString('utf8')).slice(-4096);
    });
    (w.stderr as (NodeJS.ReadableStream & { unref?: () => void }) | null)?.unref?.();
    w.on('message', (m: (R & { id: number }) | { ready: true; rss?: number }) => {
      if (w !== this.worker) return;
      if ('ready' in m) {
        this.ready = true;
        this.idleRss = typeof m.rss === 'number' ? m.rss : 0;
        this.start();
      } else if (this.current?.job.id === m.id) this.finish(m);
    });
    w.on('error', (e: Error) => {
      if (w === this.worker) this.fail(`${this.opts.what} crashed: ${e.message}`);
    });
    // 'close', not 'exit': it comes after stderr is read to its end.
    w.on('close', (code, signal) => {
      if (w !== this.worker) return;
      // At the heap limit V8 prints "JavaScript heap out of memory" (or "Fatal javascript OOM") and aborts (SIGTRAP or SIGABRT).
      const oom = /heap out of memory|javascript OOM|Reached heap limit|allocation failed/i.test(stderrTail);
      this.fail(oom ? this.memoryError() : `${this.opts.what} stopped (${signal ? `signal ${signal}` : `exit code ${code}`})`);
    });
    this.workerMemoryMb = memoryMb;
    this.jobsOnWorker = 0;
    this.ready = false;
    return w;
  }

  private memoryError(): string {
    return `${this.opts.what} exceeded the ${this.current?.job.memoryMb ?? this.workerMemoryMb} MB memory limit`;
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
    this.current = { job, timer: undefined, poll: undefined };
    if (this.ready) this.start();
  }

  /** Sends the current job to a ready process and starts its time and memory budget. */
  private start(): void {
    const cur = this.current;
    const w = this.worker;
    if (!cur || cur.timer || !w) return;
    const { job } = cur;
    cur.timer = setTimeout(() => this.fail(job.timeoutError), job.timeoutMs);
    const limit = this.idleRss + job.memoryMb * MB;
    const measure = async () => {
      const rss = w.pid === undefined ? undefined : await residentBytes(w.pid);
      if (this.current !== cur || w !== this.worker) return;
      if (rss !== undefined && rss > limit) this.fail(this.memoryError());
      else cur.poll = setTimeout(measure, POLL_MS);
    };
    cur.poll = setTimeout(measure, POLL_MS);
    w.send({ ...job.message, id: job.id });
  }

  private finish(reply: R | WorkerFailure): void {
    const cur = this.current;
    if (!cur) return;
    clearTimeout(cur.timer);
    clearTimeout(cur.poll);
    this.current = undefined;
    cur.job.resolve(reply);
    if (this.queue.length) this.pump();
    else {
      this.idleTimer = setTimeout(() => void this.close(), this.opts.idleMs ?? 30_000);
      this.idleTimer.unref();
    }
  }

  /** The current job failed in a way that leaves the process unusable: kill it, answer the job, go on. */
  private fail(error: string): void {
    const w = this.worker;
    this.worker = undefined;
    if (w && w.exitCode === null && w.signalCode === null) w.kill('SIGKILL');
    if (this.current) this.finish({ ok: false, error });
  }
}
