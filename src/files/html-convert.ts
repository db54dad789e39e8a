/**
 * HTML to readable text off the event loop, within a time and size budget (issue 22: a page of 50,000 nested
 * <div>s kept an upload request, and the server with it, busy for seconds).
 *
 * Longer HTML than `maxHtmlChars` is cut before conversion (with a warning); the conversion runs in a worker
 * thread (html-worker.mjs) that is terminated when it takes longer than `htmlTimeoutMs` or exceeds the heap limit,
 * and the caller gets an HtmlConversionError naming the budget, which extraction reports as a failed extraction (the
 * file is stored with `extraction_failed` and that reason). One long-lived worker runs one conversion at a time;
 * it is unref'd, shut down when idle and replaced after a failure.
 */
import { Worker } from 'node:worker_threads';
import type { ExtractLimits } from './extract.ts';

export class HtmlConversionError extends Error {
  override name = 'HtmlConversionError';
}

type Reply = { ok: true; text: string } | { ok: false; error: string };

interface Job {
  id: number;
  html: string;
  limits: Pick<ExtractLimits, 'maxHtmlChars' | 'htmlTimeoutMs' | 'maxMemoryMb'>;
  resolve: (r: Reply) => void;
}

const IDLE_MS = 30_000;

class HtmlWorker {
  private worker: Worker | undefined;
  /** The worker has loaded the converter; jobs (and their time budget) start only then. */
  private ready = false;
  private memoryMb = 0;
  private queue: Job[] = [];
  private current: { job: Job; timer: NodeJS.Timeout | undefined } | undefined;
  private idleTimer: NodeJS.Timeout | undefined;
  private nextId = 1;

  run(html: string, limits: Job['limits']): Promise<Reply> {
    return new Promise((resolve) => {
      this.queue.push({ id: this.nextId++, html, limits, resolve });
      this.pump();
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    if (w) await w.terminate();
  }

  private spawn(memoryMb: number): Worker {
    const w = new Worker(new URL('./html-worker.mjs', import.meta.url), {
      resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: 64 },
    });
    w.unref();
    w.on('message', (m: (Reply & { id: number }) | { ready: true }) => {
      if (w !== this.worker) return;
      if ('ready' in m) {
        this.ready = true;
        this.start();
      } else if (this.current?.job.id === m.id) this.finish(m);
    });
    w.on('error', (e: Error & { code?: string }) => {
      if (w !== this.worker) return;
      this.fail(e.code === 'ERR_WORKER_OUT_OF_MEMORY' ? `HTML conversion exceeded ${memoryMb} MB of memory` : `HTML conversion crashed: ${e.message}`);
    });
    w.on('exit', (code) => {
      if (w === this.worker) this.fail(`HTML conversion stopped (exit code ${code})`);
    });
    this.memoryMb = memoryMb;
    this.ready = false;
    return w;
  }

  private pump(): void {
    if (this.current || this.queue.length === 0) return;
    clearTimeout(this.idleTimer);
    const job = this.queue.shift()!;
    if (this.worker && this.memoryMb !== job.limits.maxMemoryMb) void this.close();
    this.worker ??= this.spawn(job.limits.maxMemoryMb);
    this.current = { job, timer: undefined };
    if (this.ready) this.start();
  }

  /** Sends the current job to a ready worker and starts its time budget. */
  private start(): void {
    const cur = this.current;
    if (!cur || cur.timer || !this.worker) return;
    const { job } = cur;
    const ms = job.limits.htmlTimeoutMs;
    cur.timer = setTimeout(() => this.fail(`HTML conversion exceeded its time budget of ${ms} ms`), ms);
    this.worker.postMessage({ id: job.id, html: job.html, maxHtmlChars: job.limits.maxHtmlChars });
  }

  private finish(reply: Reply): void {
    const cur = this.current;
    if (!cur) return;
    clearTimeout(cur.timer);
    this.current = undefined;
    cur.job.resolve(reply);
    if (this.queue.length) this.pump();
    else {
      this.idleTimer = setTimeout(() => void this.close(), IDLE_MS);
      this.idleTimer.unref();
    }
  }

  /** The worker is stuck or gone: terminate it, answer the job, go on with a fresh worker. */
  private fail(error: string): void {
    const w = this.worker;
    this.worker = undefined;
    if (w) void w.terminate();
    if (this.current) this.finish({ ok: false, error });
  }
}

const htmlWorker = new HtmlWorker();

/** Stops the HTML worker thread (orderly shutdown, tests; it is unref'd, so it never blocks exit). */
export function shutdownHtmlWorker(): Promise<void> {
  return htmlWorker.close();
}

/** Readable text of an HTML page; throws HtmlConversionError when the conversion fails or is over its time or memory budget. */
export async function htmlToReadable(html: string, limits: Job['limits'], warnings: string[]): Promise<string> {
  if (html.length > limits.maxHtmlChars) {
    warnings.push(`HTML cut at ${limits.maxHtmlChars} characters before conversion`);
    html = html.slice(0, limits.maxHtmlChars);
  }
  const reply = await htmlWorker.run(html, limits);
  if (!reply.ok) throw new HtmlConversionError(reply.error);
  return reply.text;
}
