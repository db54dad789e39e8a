/**
 * A pool of worker threads, each holding its own copy of a CPU-bound model (USE-lite on TF.js WASM
 * blocks the thread it runs on). embed() splits a batch across the threads, so one server uses
 * every core and its event loop stays free for HTTP.
 *
 * Queries first: a search's query embedding must not wait behind the backlog of a first import.
 * Query jobs have their own lane, served before any bulk job, and (by default) a thread of their
 * own that bulk work never takes and that alone serves them, running at normal priority while the
 * bulk threads are niced. Bulk
 * batches go out in pieces of at most BULK_PIECE texts, so even without the query thread a query
 * waits for one short piece, not for a whole batch.
 *
 * Concurrent queries share a model call: the thread that takes a query job takes every query job
 * waiting then (up to QUERY_BATCH texts) in one message. A USE-lite call costs about the same for
 * one short query as for eight (measured ~10 vs ~15 CPU-ms: the graph's fixed cost dominates), and
 * a text's vector does not depend on the other texts of its call.
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
  /** The jobs of the message the thread is working on (several query jobs share one). */
  busy: Job[] | undefined;
  /** When the message in `busy` was handed to the thread (performance.now()). */
  since: number;
  /** A query slot never takes bulk work. */
  role: 'bulk' | 'query';
}

/** What the threads of one role have done since the pool started. */
export interface PoolWork {
  jobs: number;
  texts: number;
  /** Messages to the threads, each one model call (concurrent query jobs share one). */
  messages: number;
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
/** Most query texts sent to a thread in one message (one model call). */
export const QUERY_BATCH = 16;

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
  const newWork = (): PoolWork => ({ jobs: 0, texts: 0, messages: 0, busySeconds: 0, cpuSeconds: 0, cpuWaitSeconds: 0 });
  const work = { query: newWork(), bulk: newWork() };

  /** The query jobs waiting now, up to QUERY_BATCH texts (at least one job). */
  function takeQueries(): Job[] {
    const taken = [queries.shift()!];
    let texts = taken[0].texts.length;
    while (queries.length > 0 && texts + queries[0].texts.length <= QUERY_BATCH) {
      texts += queries[0].texts.length;
      taken.push(queries.shift()!);
    }
    return taken;
  }

  function dispatch() {
    // With a query thread, queries wait for it rather than go to an idle bulk thread: one thread
    // embedding the waiting queries together costs a fraction of the CPU of several threads
    // embedding one each, and on a small machine that CPU is what the searches' k-NN and the
    // gateway need. Without one (or while it is being replaced) any thread takes them first.
    const queryThread = slots.some((s) => s.role === 'query');
    for (const s of slots) {
      if (s.busy) continue;
      const takesQueries = s.role === 'query' || !queryThread;
      const jobs =
        takesQueries && queries.length > 0 ? takeQueries() : s.role === 'bulk' && bulk.length > 0 ? [bulk.shift()!] : [];
      if (jobs.length === 0) continue;
      s.busy = jobs;
      s.since = performance.now();
      s.worker.postMessage({ id: jobs[0].id, texts: jobs.flatMap((j) => j.texts), kind: jobs[0].kind });
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
        const jobs = slot.busy;
        slot.busy = undefined;
        if (jobs) {
          // One message, one model call: its seconds count once, its jobs and texts each.
          const w = work[role];
          w.messages++;
          w.jobs += jobs.length;
          w.texts += jobs.reduce((n, j) => n + j.texts.length, 0);
          w.busySeconds += (performance.now() - slot.since) / 1000;
          if (m.sched) {
            w.cpuSeconds += m.sched.cpuMs / 1000;
            w.cpuWaitSeconds += m.sched.waitMs / 1000;
          }
        }
        if (jobs && jobs[0].id === m.id) {
          if (m.error) {
            const E = m.errorName === 'ProviderUnavailableError' ? ProviderUnavailableError : EmbeddingRequestError;
            for (const job of jobs) job.reject(new E(m.error));
          } else {
            let at = 0;
            for (const job of jobs) {
              job.resolve(m.vectors.slice(at, at + job.texts.length));
              at += job.texts.length;
            }
          }
        }
        dispatch();
      });
      const onDeath = (err: unknown) => {
        if (retired) return; // replaced after a failed start (above)
        const jobs = slot.busy ?? [];
        slot.busy = undefined;
        for (const job of jobs) job.reject(new ProviderUnavailableError(`embedding thread died: ${(err as Error)?.message ?? err}`));
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
      // Jobs a thread is running end with it: without this their callers would wait for an answer forever.
      for (const s of slots) {
        for (const j of s.busy ?? []) j.reject(new ProviderUnavailableError('embedding pool closed'));
        s.busy = undefined;
      }
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
