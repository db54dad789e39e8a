/**
 * A pool of worker threads, each holding its own copy of a CPU-bound model (USE-lite on TF.js WASM
 * blocks the thread it runs on). embed() splits a batch across the threads, so one server uses
 * every core and its event loop stays free for HTTP.
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
}

const BOOT = new URL('./thread-boot.mjs', import.meta.url);
const ENTRY = new URL('./thread.ts', import.meta.url).href;
/** Fewer texts than this per thread are not worth splitting (message passing costs a little). */
const MIN_PER_THREAD = 4;

export async function createPooledEmbedder(cfg: EmbeddingConfig, threads: number): Promise<Embedder & { threads: number }> {
  const queue: Job[] = [];
  const slots: Slot[] = [];
  let nextId = 1;
  let closed = false;
  let info: { name: string; dimensions: number } | undefined;

  function dispatch() {
    for (const s of slots) {
      if (s.busy || queue.length === 0) continue;
      const job = queue.shift()!;
      s.busy = job;
      s.worker.postMessage({ id: job.id, texts: job.texts, kind: job.kind });
    }
  }

  function spawn(): Promise<Slot> {
    return new Promise((resolve, reject) => {
      const worker = new Worker(BOOT, { workerData: { entry: ENTRY, config: cfg } });
      const slot: Slot = { worker, busy: undefined };
      let ready = false;
      worker.on('message', (m: any) => {
        if (m.type === 'ready') {
          ready = true;
          info ??= { name: m.name, dimensions: m.dimensions };
          resolve(slot);
          return;
        }
        if (m.type === 'init-error') {
          reject(m.errorName === 'ConfigError' ? new ConfigError(m.error) : new Error(m.error));
          return;
        }
        const job = slot.busy;
        slot.busy = undefined;
        if (job && job.id === m.id) {
          if (m.error) {
            const E = m.errorName === 'ProviderUnavailableError' ? ProviderUnavailableError : EmbeddingRequestError;
            job.reject(new E(m.error));
          } else job.resolve(m.vectors);
        }
        dispatch();
      });
      const onDeath = (err: unknown) => {
        const job = slot.busy;
        slot.busy = undefined;
        job?.reject(new ProviderUnavailableError(`embedding thread died: ${(err as Error)?.message ?? err}`));
        const i = slots.indexOf(slot);
        if (i >= 0) slots.splice(i, 1);
        if (!ready) reject(err instanceof Error ? err : new Error(String(err)));
        else if (!closed) {
          // Replace the dead thread so the pool keeps its size.
          spawn().then((s) => { slots.push(s); dispatch(); }, () => undefined);
        }
      };
      worker.on('error', onDeath);
      worker.on('exit', (code) => { if (!closed && code !== 0) onDeath(new Error(`exit code ${code}`)); });
    });
  }

  try {
    slots.push(...(await Promise.all(Array.from({ length: threads }, spawn))));
  } catch (err) {
    closed = true;
    await Promise.all(slots.map((s) => s.worker.terminate()));
    throw err;
  }

  function run(texts: string[], kind: 'query' | 'passage'): Promise<number[][]> {
    return new Promise((resolve, reject) => {
      queue.push({ id: nextId++, texts, kind, resolve, reject });
      dispatch();
    });
  }

  return {
    name: info!.name,
    dimensions: info!.dimensions,
    threads,
    async embed(texts, kind = 'passage') {
      if (closed) throw new ProviderUnavailableError('embedding pool is closed');
      if (texts.length === 0) return [];
      const parts = Math.max(1, Math.min(threads, Math.floor(texts.length / MIN_PER_THREAD)));
      const size = Math.ceil(texts.length / parts);
      const pieces: Promise<number[][]>[] = [];
      for (let i = 0; i < texts.length; i += size) pieces.push(run(texts.slice(i, i + size), kind));
      return (await Promise.all(pieces)).flat();
    },
    async close() {
      closed = true;
      for (const j of queue.splice(0)) j.reject(new ProviderUnavailableError('embedding pool closed'));
      await Promise.all(slots.map((s) => s.worker.terminate()));
    },
  };
}
