/**
 * The embedding module's public surface, and one call that starts everything from the environment
 * (what `memex serve` and `memex serve --role worker` need).
 */
import type { Database, Queryable } from '../db/types.ts';
import { loadEmbeddingConfig, logEmbeddingWarnings, type EmbeddingConfig } from './config.ts';
import { createEmbedder } from './providers/index.ts';
import type { Embedder } from './types.ts';
import { startEmbeddingWorker, type EmbeddingWorker, type WorkerLogger } from './worker.ts';

export * from './types.ts';
export { loadEmbeddingConfig, embeddingStartupWarnings, logEmbeddingWarnings, type EmbeddingConfig } from './config.ts';
export { createEmbedder, createDirectEmbedder } from './providers/index.ts';
export {
  storeEmbeddings, markFailed, markEmbeddedWithoutVector, refreshDocumentStatus, activeModel, vectorLiteral,
  EmbeddingStoreError, InvalidEmbeddingError, DimensionMismatchError, UnknownChunkError, ModelNotAcceptedError,
  type EmbeddingItem, type StoreResult,
} from './store.ts';
export { startEmbeddingWorker, claimChunks, sweepExpiredLeases, type EmbeddingWorker, type WorkerOptions, type WorkerStats } from './worker.ts';
export { reindexFailed, reindexModel, embeddingStatus, ReindexError, type EmbeddingStatusReport } from './ops.ts';
export { createProgress, watchEmbeddingQueue } from './progress.ts';
export { serverStatus } from './report.ts';

export interface EmbeddingService {
  config: EmbeddingConfig;
  /** Also what search uses to embed queries: `embedder.embed([q], 'query')`. */
  embedder: Embedder;
  /** Undefined when EMBEDDING_WORKER=false (or startWorker: false). */
  worker: EmbeddingWorker | undefined;
  /** Stops the worker, then the model threads. */
  close(): Promise<void>;
}

/**
 * Loads EMBEDDING_* from env, logs the hash-provider warning, builds the embedder (thread pool for
 * CPU models) and starts the worker with the configured batch, lease, poll and concurrency.
 * Throws ConfigError (one line) for bad settings or a model that cannot be loaded.
 */
export async function startEmbeddingService(opts: {
  db: Database;
  env?: NodeJS.ProcessEnv;
  logger?: WorkerLogger;
  /** Force the worker on (role worker) or off (role gateway); default EMBEDDING_WORKER. */
  startWorker?: boolean;
}): Promise<EmbeddingService> {
  const config = loadEmbeddingConfig(opts.env ?? process.env);
  if (opts.logger) logEmbeddingWarnings({ warn: (m) => opts.logger!.warn(m) }, config);
  const embedder = await createEmbedder(config);
  const ac = new AbortController();
  const worker = (opts.startWorker ?? config.inProcessWorker)
    ? startEmbeddingWorker({
        db: opts.db,
        embedder,
        batchSize: config.batchSize,
        leaseSeconds: config.leaseSeconds,
        pollMs: config.pollMs,
        concurrency: config.concurrency,
        signal: ac.signal,
        logger: opts.logger,
      })
    : undefined;
  return {
    config,
    embedder,
    worker,
    async close() {
      ac.abort();
      await worker?.done;
      await embedder.close?.();
    },
  };
}

/** Chunk counts of one document for GET /v1/catalog/documents/{id}/status and GET /v1/ingest/{id}. */
export async function documentChunkCounts(
  q: Queryable,
  docId: string,
): Promise<{ total_chunks: number; embedded_chunks: number; pending_chunks: number; failed_chunks: number }> {
  const r = await q.query<{ total: number; embedded: number; pending: number; failed: number }>(
    `SELECT count(*)::int AS total,
            count(*) FILTER (WHERE c.embedding_status = 'embedded')::int AS embedded,
            count(*) FILTER (WHERE c.embedding_status IN ('pending', 'processing'))::int AS pending,
            count(*) FILTER (WHERE c.embedding_status = 'failed')::int AS failed
       FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id WHERE cd.doc_id = $1`,
    [docId],
  );
  const x = r.rows[0];
  return { total_chunks: Number(x.total), embedded_chunks: Number(x.embedded), pending_chunks: Number(x.pending), failed_chunks: Number(x.failed) };
}
