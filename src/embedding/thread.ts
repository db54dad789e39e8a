/** Runs inside a worker thread: builds one CPU embedder and answers embed jobs from the pool. */
import os from 'node:os';
import { parentPort, workerData } from 'node:worker_threads';
import { createDirectEmbedder } from './providers/index.ts';
import type { EmbeddingConfig } from './config.ts';

const port = parentPort!;
const cfg = workerData.config as EmbeddingConfig;
try {
  // On Linux setpriority(PRIO_PROCESS, 0) changes only the calling thread: the event loop keeps
  // its priority while the model threads yield to it.
  os.setPriority(0, workerData.nice ?? cfg.threadNice ?? 10);
} catch {
  // Not permitted or not supported: run at normal priority.
}
try {
  const embedder = await createDirectEmbedder(cfg);
  // The query thread's first search should not pay for the model's first call (graph set-up).
  if (workerData.warm) await embedder.embed(['warm up'], 'query');
  port.on('message', async (msg: { id: number; texts: string[]; kind: 'query' | 'passage' }) => {
    try {
      const vectors = await embedder.embed(msg.texts, msg.kind);
      port.postMessage({ id: msg.id, vectors });
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
