/**
 * A pool of worker threads, each holding its own copy of a CPU-bound model (USE-lite on TF.js WASM
 * blocks the thread it runs on). embed() splits a batch across the threads, so one server uses
 * every core and its event loop stays free for HTTP.
 *
 * Queries first: a search's query embedding must not wait behind the backlog of a first import.
 * Query jobs have their own lane, served before any bulk job, and (by default) a thread of their
 * own that bulk work never takes, running at normal priority while the bulk threads are niced. Bulk
 * batches go out in pieces of at most BULK_PIECE texts, so even without the query thread a query
 * waits for one short piece, not for a whole batch.
 */
import { Worker } from 'node:worker_threads';
import { ConfigError } from '../config/server.ts';
import type { EmbeddingConfig } from './config.ts';
import { EmbeddingRequestError, ProviderUnavailableError, type Embedder } from './types.ts';

interface Job {
  id: number;
  texts: string[];
  kind: 'query' | 'passage';
  resolve: (v: number[][]) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  busy: Job | undefined;
  /** When the job in `busy` was handed to the thread (performance.now()). */
  since: number;
  /** A query slot never takes bulk work. */
  role: 'bulk' | 'query';
}

/** What the threads of one role have done since the pool started. */
export interface PoolWork {
  jobs: number;
  texts: number;
  /** Thread-seconds with a job in hand (jobs in flight count up to now). */
  busySeconds: number;
  /** CPU seconds the threads spent on their jobs (Linux; 0 where the thread cannot read its schedstat). */
  cpuSeconds: number;
  /** Seconds the threads were runnable but waiting for a CPU during their jobs (other processes, priorities). */
  cpuWaitSeconds: number;
}

export interface PoolStats {
  /** Jobs waiting for a thread, per lane. */
  waiting: { query: number; bulk: number };
  /** Threads working now, per role. */
  busy: { query: number; bulk: number };
  threads: { query: number; bulk: number };
  /**
   * Work done per role. busySeconds / (threads x elapsed) is how much of the time the model threads
   * had work: the rest is the pipeline (claims, stores, polls) not feeding them.
   */
  work: { query: PoolWork; bulk: PoolWork };
}

const BOOT = new URL('./thread-boot.mjs', import.meta.url);
const ENTRY = new URL('./thread.ts', import.meta.url).href;
/** Fewer texts than this per thread are not worth splitting (message passing costs a little). */
const MIN_PER_THREAD = 4;
/**
 * Most texts in one bulk job: with USE-lite about 33 CPU-ms a text, a query that finds every
 * thread busy waits for at most ~8 texts (docs/embeddings.md "Queries first").
 */
export const BULK_PIECE = 8;

export type PooledEmbedder = Embedder & { threads: number; stats(): PoolStats };

/**
 * `threads` bulk threads, plus one query thread unless `queryThread` is false (the config's
 * EMBEDDING_QUERY_THREAD when not given). `entry` is the module each thread runs, src/embedding/thread.ts
 * unless a test gives one whose model fails to start.
 */
export async function createPooledEmbedder(
  cfg: EmbeddingConfig,
  threads: number,
  opts: { queryThread?: boolean; entry?: string } = {},
): Promise<PooledEmbedder> {
  const queries: Job[] = [];
  const bulk: Job[] = [];
  const slots: Slot[] = [];
  let nextId = 1;
  let closed = false;
  let info: { name: string; dimensions: number } | undefined;
  const newWork = (): PoolWork => ({ jobs: 0, texts: 0, busySeconds: 0, cpuSeconds: 0, cpuWaitSeconds: 0 });
  const work = { query: newWork(), bulk: newWork() };

  function dispatch() {
    // Query slots come first in `slots`, so an idle query thread takes a query before a bulk one.
    for (const s of slots) {
      if (s.busy) continue;
      const job = queries.shift() ?? (s.role === 'bulk' ? bulk.shift() : undefined);
      if (!job) continue;
      s.busy = job;
      s.since = performance.now();
      s.worker.postMessage({ id: job.id, texts: job.texts, kind: job.kind });
    }
  }

  function spawn(role: Slot['role'], attempt = 1): Promise<Slot> {
    return new Promise((resolve, reject) => {
      // The query thread keeps normal priority (the bulk threads yield to it) and warms its model
      // up before it reports ready, so the first search does not pay for the model's first call.
      const worker = new Worker(BOOT, {
        workerData: { entry: opts.entry ?? ENTRY, config: cfg, ...(role === 'query' ? { nice: 0, warm: true } : {}) },
      });
      const slot: Slot = { worker, busy: undefined, since: 0, role };
      let ready = false;
      let retired = false;
      worker.on('message', (m: any) => {
        if (m.type === 'ready') {
          ready = true;
          info ??= { name: m.name, dimensions: m.dimensions };
          resolve(slot);
          return;
        }
        if (m.type === 'init-error') {
          if (m.errorName === 'ConfigError') return reject(new ConfigError(m.error));
          // A model that failed to start in this thread (seen rarely under heavy load: tfjs's
          // "Backend 'wasm' has not yet been initialized") gets a fresh thread, whose model state
          // starts over; a configuration error or a third failure is final.
          if (attempt < 3 && !closed) {
            retired = true;
            void worker.terminate();
            spawn(role, attempt + 1).then(resolve, reject);
            return;
          }
          reject(new Error(m.error));
          return;
        }
        const job = slot.busy;
        slot.busy = undefined;
        if (job) {
          const w = work[role];
          w.jobs++;
          w.texts += job.texts.length;
          w.busySeconds += (performance.now() - slot.since) / 1000;
          if (m.sched) {
            w.cpuSeconds += m.sched.cpuMs / 1000;
            w.cpuWaitSeconds += m.sched.waitMs / 1000;
          }
        }
        if (job && job.id === m.id) {
          if (m.error) {
            const E = m.errorName === 'ProviderUnavailableError' ? ProviderUnavailableError : EmbeddingRequestError;
            job.reject(new E(m.error));
          } else job.resolve(m.vectors);
        }
        dispatch();
      });
      const onDeath = (err: unknown) => {
        if (retired) return; // replaced after a failed start (above)
        const job = slot.busy;
        slot.busy = undefined;
        job?.reject(new ProviderUnavailableError(`embedding thread died: ${(err as Error)?.message ?? err}`));
        const i = slots.indexOf(slot);
        if (i >= 0) slots.splice(i, 1);
        if (!ready) reject(err instanceof Error ? err : new Error(String(err)));
        else if (!closed) {
          // Replace the dead thread so the pool keeps its size.
          spawn(role).then((s) => { add(s); dispatch(); }, () => undefined);
        }
      };
      worker.on('error', onDeath);
      worker.on('exit', (code) => { if (!closed && code !== 0) onDeath(new Error(`exit code ${code}`)); });
    });
  }

  const add = (s: Slot) => (s.role === 'query' ? slots.unshift(s) : slots.push(s));
  const roles: Slot['role'][] = [
    ...((opts.queryThread ?? cfg.queryThread ?? true) ? (['query'] as const) : []),
    ...Array.from({ length: threads }, () => 'bulk' as const),
  ];
  try {
    // Not roles.map(spawn): map passes the index as `attempt`, which gave the first thread four tries.
    for (const s of await Promise.all(roles.map((role) => spawn(role)))) add(s);
  } catch (err) {
    closed = true;
    await Promise.all(slots.map((s) => s.worker.terminate()));
    throw err;
  }

  function run(texts: string[], kind: 'query' | 'passage', signal?: AbortSignal): Promise<number[][]> {
    return new Promise((resolve, reject) => {
      const lane = kind === 'query' ? queries : bulk;
      const job: Job = { id: nextId++, texts, kind, resolve, reject };
      lane.push(job);
      // A search that stopped waiting (its budget ran out) drops its job if no thread took it yet,
      // so a burst of new queries cannot leave a queue of embeddings nobody waits for.
      signal?.addEventListener(
        'abort',
        () => {
          const i = lane.indexOf(job);
          if (i >= 0) {
            lane.splice(i, 1);
            reject(new ProviderUnavailableError('embedding job dropped before a thread took it'));
          }
        },
        { once: true },
      );
      dispatch();
    });
  }

  const count = (role: Slot['role'], busy: boolean) => slots.filter((s) => s.role === role && (!busy || s.busy)).length;
  const workNow = (role: Slot['role']): PoolWork => {
    const inFlight = slots.filter((s) => s.role === role && s.busy).reduce((t, s) => t + (performance.now() - s.since) / 1000, 0);
    return { ...work[role], busySeconds: work[role].busySeconds + inFlight };
  };

  return {
    name: info!.name,
    dimensions: info!.dimensions,
    threads,
    async embed(texts, kind = 'passage', opts) {
      if (closed) throw new ProviderUnavailableError('embedding pool is closed');
      if (texts.length === 0) return [];
      const parts = Math.max(1, Math.min(threads, Math.floor(texts.length / MIN_PER_THREAD)));
      const size = Math.min(BULK_PIECE, Math.ceil(texts.length / parts));
      const pieces: Promise<number[][]>[] = [];
      for (let i = 0; i < texts.length; i += size) pieces.push(run(texts.slice(i, i + size), kind, opts?.signal));
      return (await Promise.all(pieces)).flat();
    },
    stats: () => ({
      waiting: { query: queries.length, bulk: bulk.length },
      busy: { query: count('query', true), bulk: count('bulk', true) },
      threads: { query: count('query', false), bulk: count('bulk', false) },
      work: { query: workNow('query'), bulk: workNow('bulk') },
    }),
    async close() {
      closed = true;
      for (const j of [...queries.splice(0), ...bulk.splice(0)]) j.reject(new ProviderUnavailableError('embedding pool closed'));
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
