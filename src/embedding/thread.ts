/** Runs inside a worker thread: builds one CPU embedder and answers embed jobs from the pool. */
import { parentPort, workerData } from 'node:worker_threads';
import { createDirectEmbedder } from './providers/index.ts';
import type { EmbeddingConfig } from './config.ts';

const port = parentPort!;
const cfg = workerData.config as EmbeddingConfig;
try {
  const embedder = await createDirectEmbedder(cfg);
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
