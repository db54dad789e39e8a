/**
 * Writes batches of small in-memory objects for the local object store off the main thread
 * (small-writes-worker.mjs says why: the event loop a put's dozen file operations wait for is PGlite's too).
 * One worker per store folder, started on first use and not keeping the process alive; batches run one after
 * the other in it.
 */
import { Worker } from 'node:worker_threads';

export interface SmallWriteResult {
  sha256: string;
  sizeBytes: number;
  /** Already stored before this write (nothing new written). */
  existed: boolean;
}

/** A failure of the worker's file calls, shaped as Node's own: the errno code (ENOSPC, EACCES, …) in `code`. */
function fileError(message: string, code: string | undefined): NodeJS.ErrnoException {
  return Object.assign(new Error(message), { code });
}

const SCRIPT = new URL('./small-writes-worker.mjs', import.meta.url);

type Pending = { resolve: (r: SmallWriteResult[]) => void; reject: (e: Error) => void };

export class SmallWrites {
  private worker: Worker | null = null;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;

  constructor(
    private readonly root: string,
    private readonly tmpDir: string,
  ) {}

  /** Stores every body (non-empty; a few MB at most: they are copied to the worker), answering in their order. */
  write(bodies: Buffer[]): Promise<SmallWriteResult[]> {
    if (bodies.length === 0) return Promise.resolve([]);
    const worker = this.start();
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      if (this.pending.size === 1) worker.ref();
      worker.postMessage({ id, root: this.root, tmpDir: this.tmpDir, bodies });
    });
  }

  private start(): Worker {
    if (this.worker) return this.worker;
    const worker = new Worker(SCRIPT);
    worker.unref();
    worker.on('message', (m: { id: number; results?: SmallWriteResult[]; error?: { message: string; code?: string } }) => {
      const p = this.pending.get(m.id);
      if (!p) return;
      this.settle(m.id);
      if (m.error) p.reject(fileError(m.error.message, m.error.code));
      else p.resolve(m.results ?? []);
    });
    const fail = (err: Error) => {
      this.worker = null;
      for (const [id, p] of [...this.pending]) {
        this.settle(id);
        p.reject(fileError(`the object writer stopped: ${err.message}`, undefined));
      }
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`exit code ${code}`)));
    this.worker = worker;
    return worker;
  }

  private settle(id: number): void {
    this.pending.delete(id);
    // Idle, the worker does not keep the process alive (a CLI that stored a batch can exit).
    if (this.pending.size === 0) this.worker?.unref();
  }

  /** Stops the worker (the store is closing); batches in flight are refused. */
  async close(): Promise<void> {
    const w = this.worker;
    this.worker = null;
    if (w) await w.terminate();
  }
}
