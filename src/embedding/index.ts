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
      // The model first: a bulk batch in its threads can take a minute on a loaded machine, and a stop must
      // not wait for it. Its texts fail as "unavailable", so the worker returns their chunks to the queue
      // (the database is still open) and the next start embeds them.
      await embedder.close?.();
      await worker?.done;
    },
  };
}

/**
 * The embedding service started without waiting for its model threads (`memex serve`). A CPU model's
 * threads take seconds to load on a quiet machine and a minute on a loaded one, and the first search
 * must not wait for them: until they are ready `current` is undefined, searches answer from the
 * lexical leg and chunks wait in the queue. Settings are read first, so a bad EMBEDDING_* setting
 * still throws here, at once.
 */
export interface EmbeddingStart {
  readonly config: EmbeddingConfig;
  readonly state: 'starting' | 'ready' | 'failed';
  /** The service once its threads are ready. */
  readonly current: EmbeddingService | undefined;
  /** Why the start failed (the model could not be loaded). */
  readonly error: Error | undefined;
  /** The service when ready; rejects with the error that stopped it. */
  readonly ready: Promise<EmbeddingService>;
  /** Stops the service, or the start in progress. */
  close(): Promise<void>;
}

export function startEmbeddingInBackground(opts: Parameters<typeof startEmbeddingService>[0] & {
  /** Held until this resolves (the server starts the threads once the search index is ready). */
  after?: Promise<unknown>;
}): EmbeddingStart {
  const config = loadEmbeddingConfig(opts.env ?? process.env);
  let state: EmbeddingStart['state'] = 'starting';
  let current: EmbeddingService | undefined;
  let error: Error | undefined;
  let closed = false;
  let onClose = () => {};
  const closing = new Promise<void>((resolve) => (onClose = resolve));
  const ready = (async () => {
    await Promise.race([opts.after?.catch(() => undefined), closing]);
    if (closed) throw new Error('embedding service closed before its model threads started');
    const svc = await startEmbeddingService(opts);
    if (closed) {
      await svc.close();
      throw new Error('embedding service closed before its model threads started');
    }
    return svc;
  })().then(
    (svc) => {
      state = 'ready';
      current = svc;
      return svc;
    },
    (err: unknown) => {
      state = 'failed';
      error = err instanceof Error ? err : new Error(String(err));
      throw error;
    },
  );
  ready.catch(() => undefined);
  return {
    config,
    get state() {
      return state;
    },
    get current() {
      return current;
    },
    get error() {
      return error;
    },
    ready,
    async close() {
      closed = true;
      onClose();
      await current?.close();
      // A start in progress ends by itself once the threads are up (closing what it made).
      if (!current) await ready.then((svc) => svc.close(), () => undefined);
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
