/**
 * The embedding worker. The chunks table is the queue: a loop claims pending chunks in batches
 * (FOR UPDATE SKIP LOCKED, so several loops and processes on one PostgreSQL never take the same
 * chunk), holds them under a lease, embeds them and stores the vectors through storeEmbeddings
 * (which also moves documents to `indexed`). A crashed worker's chunks return to pending when
 * their lease expires: every loop sweeps expired leases.
 *
 * Runs inside `memex serve` (EMBEDDING_CONCURRENCY loops) or as its own process
 * (`memex serve --role worker`); both call startEmbeddingWorker.
 */
import type { Database } from '../db/types.ts';
import {
  markEmbeddedWithoutVector,
  markFailed,
  modelAccepted,
  ModelNotAcceptedError,
  releaseChunks,
  reuseStoredVectors,
  storeEmbeddings,
  type EmbeddingItem,
} from './store.ts';
import { meaningfulText, partsInChunk } from './meaning.ts';
import { validBodyParts, type BodyPart } from '../mail/body-parts.ts';
import { ProviderUnavailableError, type Embedder } from './types.ts';

export interface WorkerLogger {
  info(obj: object | string, msg?: string): void;
  warn(obj: object | string, msg?: string): void;
  error(obj: object | string, msg?: string): void;
}

export interface WorkerOptions {
  db: Database;
  embedder: Embedder;
  /** Chunks per claim (EMBEDDING_BATCH_SIZE, default 32). */
  batchSize?: number;
  /** Lease on claimed chunks (EMBEDDING_LEASE_SECONDS, default 300). */
  leaseSeconds?: number;
  /** Sleep when the queue is empty (EMBEDDING_POLL_MS, default 1000); notify() cuts it short. */
  pollMs?: number;
  /** Claim loops in this process (EMBEDDING_CONCURRENCY, default 1). */
  concurrency?: number;
  /**
   * Vectors per store transaction. PGlite runs SQL (and its HNSW inserts, ~6 ms per 512-d vector)
   * on the main thread, so a whole batch in one transaction would hold the event loop and the
   * single connection for ~200 ms; default 2 there (a turn of the event loop between them), the
   * whole batch on PostgreSQL. Measured on PGlite (docs/BENCHMARKS.md): 2 keeps /v1/healthz p95 at
   * 14.5 ms while embedding, 4 and 8 let it reach 22.5 ms, for about 7 % more chunks/s.
   */
  storeBatch?: number;
  signal?: AbortSignal;
  logger?: WorkerLogger;
  /** Called after every batch (progress bars, metrics). */
  onBatch?: (stats: WorkerStats) => void;
}

export interface WorkerStats {
  startedAt: number;
  batches: number;
  claimed: number;
  /** Chunks that got a vector from the model in this process. */
  embedded: number;
  /** Chunks marked embedded from an already stored vector (same text, same model). */
  reused: number;
  /** Empty-text chunks marked embedded without a vector. */
  empty: number;
  /**
   * Chunks with nothing worth a vector (meaning.ts: only quotes of stored messages, a signature,
   * encoded leftovers), marked embedded without one.
   */
  skipped: number;
  failed: number;
  /** Chunks given back to pending (provider unreachable, model switched). */
  released: number;
  indexedDocs: number;
  lastError: string | undefined;
}

export interface EmbeddingWorker {
  /** Wake idle loops now (the catalog calls this after inserting chunks). */
  notify(): void;
  /** Stops claiming, lets batches in flight finish, resolves when every loop has ended. */
  stop(): Promise<void>;
  readonly stats: WorkerStats;
  /** Resolves when the worker has stopped (signal aborted or stop()). */
  readonly done: Promise<void>;
}

const silent: WorkerLogger = { info() {}, warn() {}, error() {} };

/**
 * Claims up to n pending chunks, newest first (the documents' time, migration 143: this month's mail
 * is searchable by meaning before 2009's), moving them to processing under a lease.
 */
export async function claimChunks(
  db: Database,
  n: number,
  leaseSeconds: number,
): Promise<{ chunk_id: string; text: string }[]> {
  const r = await db.query<{ chunk_id: string; text: string }>(
    `UPDATE chunks SET embedding_status = 'processing', lease_expires_at = now() + make_interval(secs => $2),
            updated_at = now()
      WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE embedding_status = 'pending'
                          ORDER BY newest_at DESC NULLS LAST, created_at LIMIT $1 FOR UPDATE SKIP LOCKED)
      RETURNING chunk_id, text`,
    [n, leaseSeconds],
  );
  return r.rows;
}

/** What the vector of a chunk of an e-mail needs to know (meaning.ts). */
export interface ChunkMailContext {
  /** The chunk's message quotes a message in the store: an earlier active document of its thread. */
  quotesStored: boolean;
  /** Its document's body parts as spans of the chunk; absent when the document records none (not mail, or stored before issue 40). */
  parts?: BodyPart[];
}

/**
 * For these chunks, whether their message quotes a stored message (an earlier active document of its
 * thread: what a reply quotes is the message before it) and its body parts (metadata.body_parts) as spans
 * of the chunk. A chunk shared by several documents (same text) takes its active, then first, document's.
 */
export async function chunkMailContexts(db: Database, chunks: { chunk_id: string; text: string }[]): Promise<Map<string, ChunkMailContext>> {
  const r = await db.query<{ chunk_id: string; start_char: number; parts: unknown; quotes_stored: boolean }>(
    `SELECT DISTINCT ON (cd.chunk_id) cd.chunk_id, cd.start_char, d.metadata->'body_parts' AS parts,
            (d.thread_id IS NOT NULL AND EXISTS (SELECT 1 FROM documents o WHERE o.thread_id = d.thread_id AND o.is_active_version
                                                  AND o.content_timestamp < d.content_timestamp)) AS quotes_stored
       FROM chunk_documents cd JOIN documents d ON d.doc_id = cd.doc_id
      WHERE cd.chunk_id = ANY($1::uuid[]) AND (d.thread_id IS NOT NULL OR d.metadata ? 'body_parts')
      ORDER BY cd.chunk_id, d.is_active_version DESC, d.doc_id`,
    [chunks.map((c) => c.chunk_id)],
  );
  const text = new Map(chunks.map((c) => [c.chunk_id, c.text]));
  const out = new Map<string, ChunkMailContext>();
  for (const row of r.rows) {
    const chunkText = text.get(row.chunk_id) ?? '';
    const parsed = typeof row.parts === 'string' ? safeJson(row.parts) : row.parts;
    const ctx: ChunkMailContext = { quotesStored: row.quotes_stored };
    // Spans are of the document text; the chunk starts at start_char of it (parts beyond it are clamped).
    if (Array.isArray(parsed)) ctx.parts = partsInChunk(validBodyParts(parsed, Number.MAX_SAFE_INTEGER), row.start_char, chunkText.length);
    out.set(row.chunk_id, ctx);
  }
  return out;
}

function safeJson(s: string): unknown {
  try {
    return JSON.parse(s);
  } catch {
    return null;
  }
}

/** Expired leases (a worker died mid-batch) back to pending. Returns how many. */
export async function sweepExpiredLeases(db: Database): Promise<number> {
  const r = await db.query(
    `UPDATE chunks SET embedding_status = 'pending', lease_expires_at = NULL, updated_at = now()
      WHERE chunk_id IN (SELECT chunk_id FROM chunks WHERE embedding_status = 'processing' AND lease_expires_at < now()
                          FOR UPDATE SKIP LOCKED)`,
  );
  return r.rowCount;
}

/**
 * A re-index is complete when the building model exists and nothing is pending or processing:
 * it becomes the active model (search switches to it) and the old one is retired.
 */
export async function promoteBuildingModel(db: Database): Promise<string | undefined> {
  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query("SELECT pg_advisory_xact_lock(hashtext('memex.embedding_models'))");
    const b = await tx.query<{ model: string }>(
      "SELECT model FROM embedding_models WHERE state = 'building' AND dimensions IS NOT NULL",
    );
    if (!b.rows[0]) return undefined;
    const busy = await tx.query("SELECT 1 FROM chunks WHERE embedding_status IN ('pending', 'processing') LIMIT 1");
    if (busy.rows.length) return undefined;
    await tx.query("UPDATE embedding_models SET state = 'retired' WHERE state = 'active'");
    await tx.query("UPDATE embedding_models SET state = 'active', activated_at = now() WHERE model = $1", [b.rows[0].model]);
    return b.rows[0].model;
  });
}

function errMsg(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

function goodVector(v: unknown, dims: number): v is number[] {
  return Array.isArray(v) && v.length > 0 && (dims === 0 || v.length === dims) && v.every((x) => typeof x === 'number' && Number.isFinite(x));
}

export function startEmbeddingWorker(opts: WorkerOptions): EmbeddingWorker {
  const { db, embedder } = opts;
  const batchSize = opts.batchSize ?? 32;
  const leaseSeconds = opts.leaseSeconds ?? 300;
  const pollMs = opts.pollMs ?? 1000;
  const concurrency = Math.max(1, opts.concurrency ?? 1);
  const storeBatch = Math.max(1, opts.storeBatch ?? (db.kind === 'pglite' ? 2 : batchSize));
  const log = opts.logger ?? silent;
  const stats: WorkerStats = {
    startedAt: Date.now(), batches: 0, claimed: 0, embedded: 0, reused: 0, empty: 0, skipped: 0, failed: 0, released: 0,
    indexedDocs: 0, lastError: undefined,
  };
  let stopped = false;
  const wakers = new Set<() => void>();
  // Counts notify() calls, so a loop that found the queue empty can tell whether a notify() landed
  // between its claim and its sleep (there was no sleeper to wake then; without this it would wait
  // a whole poll interval for work that is already there).
  let notifications = 0;
  const wakeAll = () => { for (const w of [...wakers]) w(); };
  const notify = () => { notifications++; wakeAll(); };
  opts.signal?.addEventListener('abort', () => { stopped = true; wakeAll(); }, { once: true });
  if (opts.signal?.aborted) stopped = true;

  function idle(ms: number): Promise<void> {
    if (stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const done = () => { clearTimeout(t); wakers.delete(done); resolve(); };
      const t = setTimeout(done, ms);
      wakers.add(done);
    });
  }

  let lastSweep = 0;
  let acceptedUntil = 0;
  let warnedModel = false;
  let unavailableBackoff = 0;

  async function processBatch(batch: { chunk_id: string; text: string }[]): Promise<void> {
    stats.batches++;
    stats.claimed += batch.length;
    const empty = batch.filter((c) => c.text.trim() === '').map((c) => c.chunk_id);
    if (empty.length) {
      stats.indexedDocs += (await markEmbeddedWithoutVector(db, empty)).length;
      stats.empty += empty.length;
    }
    let todo = batch.filter((c) => c.text.trim() !== '');
    if (todo.length === 0) return;
    // What the model is given: the text worth a vector (meaning.ts); chunks with none are skipped.
    const mail = await chunkMailContexts(db, todo);
    todo = todo.map((c) => ({ chunk_id: c.chunk_id, text: meaningfulText(c.text, mail.get(c.chunk_id) ?? { quotesStored: false }) }));
    const worthless = todo.filter((c) => c.text === '').map((c) => c.chunk_id);
    if (worthless.length) {
      stats.indexedDocs += (await markEmbeddedWithoutVector(db, worthless)).length;
      stats.skipped += worthless.length;
      todo = todo.filter((c) => c.text !== '');
      if (todo.length === 0) return;
    }
    const reuse = await reuseStoredVectors(db, embedder.name, todo.map((c) => c.chunk_id));
    if (reuse.reused.length) {
      stats.reused += reuse.reused.length;
      stats.indexedDocs += reuse.indexedDocIds.length;
      const r = new Set(reuse.reused);
      todo = todo.filter((c) => !r.has(c.chunk_id));
      if (todo.length === 0) return;
    }

    const items: EmbeddingItem[] = [];
    const failures: { chunk_id: string; error: string }[] = [];
    const accept = (chunk: { chunk_id: string }, v: unknown) => {
      if (goodVector(v, embedder.dimensions)) items.push({ chunk_id: chunk.chunk_id, model: embedder.name, vector: v });
      else failures.push({ chunk_id: chunk.chunk_id, error: `provider returned an invalid vector (expected ${embedder.dimensions} finite numbers)` });
    };
    try {
      const vecs = await embedder.embed(todo.map((c) => c.text), 'passage');
      if (vecs.length !== todo.length) throw new Error(`provider returned ${vecs.length} vectors for ${todo.length} texts`);
      todo.forEach((c, i) => accept(c, vecs[i]));
      unavailableBackoff = 0;
    } catch (err) {
      if (err instanceof ProviderUnavailableError) {
        stats.released += await releaseChunks(db, todo.map((c) => c.chunk_id));
        stats.lastError = errMsg(err);
        unavailableBackoff = Math.min(60_000, Math.max(pollMs, unavailableBackoff * 2 || 1000));
        // At a stop the model closes under its batch: expected, not worth a warning.
        if (!stopped) log.warn({ err: errMsg(err), backoffMs: unavailableBackoff }, 'embedding provider unavailable; chunks returned to pending');
        return;
      }
      // One bad text must not fail its batch-mates: embed the batch one by one to find it.
      for (const c of todo) {
        try {
          const [v] = await embedder.embed([c.text], 'passage');
          accept(c, v);
        } catch (e1) {
          if (e1 instanceof ProviderUnavailableError) {
            stats.released += await releaseChunks(db, [c.chunk_id]);
            continue;
          }
          failures.push({ chunk_id: c.chunk_id, error: errMsg(e1) });
        }
      }
    }
    for (let i = 0; i < items.length; i += storeBatch) {
      const part = items.slice(i, i + storeBatch);
      try {
        const res = await storeEmbeddings(db, part);
        stats.embedded += res.stored;
        stats.indexedDocs += res.indexedDocIds.length;
      } catch (err) {
        if (err instanceof ModelNotAcceptedError) {
          // A re-index to another model started while this batch was in flight.
          stats.released += await releaseChunks(db, items.slice(i).map((x) => x.chunk_id));
          acceptedUntil = 0;
          break;
        } else throw err;
      }
      if (db.kind === 'pglite') await new Promise((r) => setImmediate(r));
    }
    if (failures.length) {
      stats.failed += await markFailed(db, failures);
      stats.lastError = failures[0].error;
      log.warn({ failed: failures.length, err: failures[0].error }, 'embedding failed for some chunks');
    }
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      try {
        const now = Date.now();
        if (now - lastSweep > Math.min(leaseSeconds * 500, 30_000)) {
          lastSweep = now;
          const n = await sweepExpiredLeases(db);
          if (n) log.info({ chunks: n }, 'expired embedding leases returned to pending');
        }
        if (now > acceptedUntil) {
          const ok = await modelAccepted(db, embedder.name);
          if (!ok.ok) {
            if (!warnedModel) log.error(ok.reason);
            warnedModel = true;
            await idle(Math.max(pollMs, 5000));
            continue;
          }
          warnedModel = false;
          acceptedUntil = now + 5000;
        }
        if (unavailableBackoff) await idle(unavailableBackoff);
        if (stopped) break;
        const notifiedBefore = notifications;
        const batch = await claimChunks(db, batchSize, leaseSeconds);
        if (batch.length === 0) {
          const promoted = await promoteBuildingModel(db);
          if (promoted) {
            log.info({ model: promoted }, 're-index complete: search now uses the new embedding model');
            acceptedUntil = 0;
          }
          if (notifications === notifiedBefore) await idle(pollMs);
          continue;
        }
        await processBatch(batch);
        opts.onBatch?.(stats);
      } catch (err) {
        // Database trouble: claimed chunks come back through their lease; wait and carry on.
        stats.lastError = errMsg(err);
        log.error({ err: errMsg(err) }, 'embedding worker error');
        await idle(Math.max(pollMs, 1000));
      }
    }
  }

  const done = Promise.all(Array.from({ length: concurrency }, loop)).then(() => undefined);
  return {
    notify,
    stats,
    done,
    async stop() {
      stopped = true;
      wakeAll();
      await done;
    },
  };
}
