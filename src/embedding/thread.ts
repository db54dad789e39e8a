/** Runs inside a worker thread: builds one CPU embedder and answers embed jobs from the pool. */
import fs from 'node:fs';
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createDirectEmbedder } from './providers/index.ts';
import type { EmbeddingConfig } from './config.ts';

const port = parentPort!;

const WARM_WORDS = 'the meeting notes from last week about the budget review and travel plans for the spring'.split(' ');

/**
 * What the query thread embeds before it says it is ready: one text of each length from 1 to 16
 * words (the queries people type), then the same lengths several at a time as concurrent searches
 * share a call (pool.ts).
 */
function queryWarmUp(): string[][] {
  const text = (n: number) => WARM_WORDS.slice(0, n).join(' ');
  const single = Array.from({ length: WARM_WORDS.length }, (_, i) => [text(i + 1)]);
  const shared = [2, 4, 8].map((m) => Array.from({ length: m }, (_, i) => text(1 + ((i * 5) % WARM_WORDS.length))));
  return [...single, ...shared];
}
const cfg = workerData.config as EmbeddingConfig;

/**
 * This thread's CPU time and time spent runnable but waiting for a CPU, in ms (Linux
 * /proc/thread-self/schedstat; undefined elsewhere). Reported per job so the pool can tell a model
 * that is slow from a model thread that is starved by the machine.
 */
function schedstat(): { cpuMs: number; waitMs: number } | undefined {
  try {
    const [run, wait] = fs.readFileSync('/proc/thread-self/schedstat', 'utf8').split(' ').map(Number);
    return Number.isFinite(run) && Number.isFinite(wait) ? { cpuMs: run / 1e6, waitMs: wait / 1e6 } : undefined;
  } catch {
    return undefined;
  }
}
try {
  // On Linux setpriority(PRIO_PROCESS, 0) changes only the calling thread: the event loop keeps
  // its priority while the model threads yield to it.
  os.setPriority(0, workerData.nice ?? cfg.threadNice ?? 10);
} catch {
  // Not permitted or not supported: run at normal priority.
}
try {
  const embedder = await createDirectEmbedder(cfg);
  // The query thread's first searches should not pay for the model's first calls (graph set-up,
  // and tfjs's first run at each input size: 20-50 ms instead of ~7 ms for a short query).
  if (workerData.warm) for (const texts of queryWarmUp()) await embedder.embed(texts, 'query');
  port.on('message', async (msg: { id: number; texts: string[]; kind: 'query' | 'passage' }) => {
    try {
      const before = schedstat();
      const vectors = await embedder.embed(msg.texts, msg.kind);
      const after = before && schedstat();
      const sched = after && { cpuMs: after.cpuMs - before.cpuMs, waitMs: after.waitMs - before.waitMs };
      port.postMessage({ id: msg.id, vectors, sched });
    } catch (err) {
      const e = err as Error;
      port.postMessage({ id: msg.id, error: e.message, errorName: e.name });
    }
  });
  port.postMessage({ type: 'ready', name: embedder.name, dimensions: embedder.dimensions });
} catch (err) {
  const e = err as Error;
  port.postMessage({ type: 'init-error', error: e.message, errorName: e.name });
}
