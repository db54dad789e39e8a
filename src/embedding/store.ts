/**
 * Vector storage and the chunk/document/submission status changes that go with it. This is what
 * POST /v1/catalog/embeddings calls (in-process, or over HTTP when the worker runs split); the
 * errors are typed so the route maps them to HTTP statuses.
 *
 * Layout (see docs/embeddings.md):
 *   chunk_embeddings(model, chunk_id, embedding vector)  -- native dimension, one row per model+chunk
 *   embedding_models(model, dimensions, state active|building|retired, index_name)
 *   per model: CREATE INDEX … USING hnsw ((embedding::vector(N)) vector_cosine_ops) WHERE model = '<m>'
 * A search query for the active model must use exactly that expression and predicate:
 *   SELECT chunk_id, embedding::vector(N) <=> $1::vector(N) AS distance FROM chunk_embeddings
 *   WHERE model = '<m>' ORDER BY embedding::vector(N) <=> $1::vector(N) LIMIT k
 */
import crypto from 'node:crypto';
import type { Database, Queryable } from '../db/types.ts';
import { MemexError } from '../util/errors.ts';

/** A refused embedding; its code (src/util/error-codes.ts) gives the HTTP status the catalog route answers with. */
export class EmbeddingStoreError extends MemexError {}
/** Malformed input: not a vector, not finite, bad uuid, bad model name. -> 422 */
export class InvalidEmbeddingError extends EmbeddingStoreError {
  constructor(message: string) { super(message, 'EMBEDDING.INVALID'); }
}
/** len(vector) != dimensions, or a model's vectors change length. -> 400 "Vector dimensions mismatch" (spec-notes 4.6) */
export class DimensionMismatchError extends EmbeddingStoreError {
  constructor(message: string) { super(message, 'EMBEDDING.DIMENSION_MISMATCH'); }
}
/** A chunk id that is not in the catalog. -> 404 */
export class UnknownChunkError extends EmbeddingStoreError {
  constructor(readonly chunkIds: string[]) { super(`unknown chunk_id: ${chunkIds.slice(0, 5).join(', ')}`, 'EMBEDDING.UNKNOWN_CHUNK'); }
}
/** A model that is neither the active model nor the one being re-indexed to. -> 409 */
export class ModelNotAcceptedError extends EmbeddingStoreError {
  constructor(message: string) { super(message, 'EMBEDDING.MODEL_NOT_ACCEPTED'); }
}

export interface EmbeddingItem {
  chunk_id: string;
  model: string;
  vector: number[];
  /** Optional; when given it must equal vector.length. */
  dimensions?: number;
}

export interface StoreResult {
  stored: number;
  /** Documents that reached `indexed` through this call. */
  indexedDocIds: string[];
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const MODEL_RE = /^[\w.:/@+-]{1,200}$/;
export const MAX_DIMENSIONS = 4096;

export function validateModelName(model: unknown): string {
  if (typeof model !== 'string' || !MODEL_RE.test(model)) {
    throw new InvalidEmbeddingError('model must be 1-200 characters of letters, digits and . : / @ + - _');
  }
  return model;
}

/** pgvector text form; JS number formatting (incl. exponents) is accepted by pgvector's parser. */
export function vectorLiteral(v: number[]): string {
  return `[${v.join(',')}]`;
}

function indexNameFor(model: string): string {
  return `chunk_embeddings_hnsw_${crypto.createHash('sha256').update(model).digest('hex').slice(0, 16)}`;
}

/** SQL string literal of a validated model name (DDL cannot take parameters). */
function sqlLiteral(s: string): string {
  return `'${s.replace(/'/g, "''")}'`;
}

export interface ModelRow {
  model: string;
  dimensions: number | null;
  state: 'active' | 'building' | 'retired';
  index_name: string | null;
}

export async function getModels(q: Queryable): Promise<ModelRow[]> {
  return (await q.query<ModelRow>('SELECT model, dimensions, state, index_name FROM embedding_models ORDER BY created_at')).rows;
}

/** The model search should use: {model, dimensions} or undefined before the first vector. */
export async function activeModel(q: Queryable): Promise<{ model: string; dimensions: number } | undefined> {
  const r = await q.query<{ model: string; dimensions: number | null }>(
    "SELECT model, dimensions FROM embedding_models WHERE state = 'active'",
  );
  const row = r.rows[0];
  return row && row.dimensions ? { model: row.model, dimensions: row.dimensions } : undefined;
}

/**
 * Whether vectors of `model` are accepted now: it is the model being re-indexed to; or, with no
 * re-index running, the active model (or any model when none is active yet: it becomes active).
 */
export async function modelAccepted(q: Queryable, model: string): Promise<{ ok: true } | { ok: false; reason: string }> {
  const rows = await getModels(q);
  const me = rows.find((r) => r.model === model);
  const building = rows.find((r) => r.state === 'building');
  // During a re-index only the new model is accepted: a chunk stored by the old model would count
  // as embedded and never get its new vector.
  if (building) {
    if (building.model === model) return { ok: true };
  } else {
    if (me?.state === 'active') return { ok: true };
    if (!rows.some((r) => r.state === 'active')) return { ok: true };
  }
  const active = rows.find((r) => r.state === 'active')?.model;
  return {
    ok: false,
    reason:
      `embedding model "${model}" is not in use here (active: ${active ?? 'none'}` +
      `${building ? `, re-indexing to: ${building.model}` : ''}); run \`memex reindex --model ${model}\` to switch`,
  };
}

/**
 * Registers the model if new, learns its dimension and creates its HNSW index on first use.
 * Runs inside the caller's transaction; on PostgreSQL an advisory lock serialises two workers
 * storing a model's first vectors at once.
 */
async function ensureModel(tx: Queryable, kind: Database['kind'], model: string, dims: number): Promise<void> {
  const first = await modelAccepted(tx, model);
  if (!first.ok) throw new ModelNotAcceptedError(first.reason);
  let row = (await tx.query<ModelRow>('SELECT model, dimensions, state, index_name FROM embedding_models WHERE model = $1', [model])).rows[0];
  if (row && row.dimensions !== null && row.dimensions !== dims) {
    throw new DimensionMismatchError(`Vector dimensions mismatch: model ${model} stores ${row.dimensions}-d vectors, got ${dims}`);
  }
  if (row && row.dimensions === dims && row.index_name) return;
  if (kind === 'postgres') await tx.query("SELECT pg_advisory_xact_lock(hashtext('memex.embedding_models'))");
  const ok = await modelAccepted(tx, model);
  if (!ok.ok) throw new ModelNotAcceptedError(ok.reason);
  row = (await tx.query<ModelRow>('SELECT model, dimensions, state, index_name FROM embedding_models WHERE model = $1', [model])).rows[0];
  if (!row) {
    const hasActive = (await tx.query("SELECT 1 FROM embedding_models WHERE state = 'active'")).rows.length > 0;
    await tx.query(
      `INSERT INTO embedding_models (model, state, activated_at) VALUES ($1, $2, CASE WHEN $2 = 'active' THEN now() END)`,
      [model, hasActive ? 'building' : 'active'],
    );
    row = { model, dimensions: null, state: hasActive ? 'building' : 'active', index_name: null };
  }
  if (row.dimensions !== null && row.dimensions !== dims) {
    throw new DimensionMismatchError(`Vector dimensions mismatch: model ${model} stores ${row.dimensions}-d vectors, got ${dims}`);
  }
  if (!row.index_name) {
    const name = indexNameFor(model);
    await tx.exec(
      `CREATE INDEX IF NOT EXISTS ${name} ON chunk_embeddings USING hnsw ((embedding::vector(${dims})) vector_cosine_ops) ` +
        `WHERE model = ${sqlLiteral(model)}`,
    );
    await tx.query('UPDATE embedding_models SET dimensions = $2, index_name = $3 WHERE model = $1', [model, dims, name]);
  }
}

/**
 * Promotes every `enriched` document whose chunks are all embedded to `indexed`, and completes
 * its `cataloged` submissions. Pass the chunks just changed (worker) or documents just inserted
 * (the catalog calls this when a new document only has already-embedded chunks). Locks the
 * documents first: two workers finishing the last two chunks of one document at once would each
 * see the other's chunk still processing; with the lock the second one sees the first's commit.
 */
export async function refreshDocumentStatus(
  tx: Queryable,
  by: { chunkIds?: string[]; docIds?: string[] },
): Promise<string[]> {
  const docs = new Set(by.docIds ?? []);
  if (by.chunkIds?.length) {
    const r = await tx.query<{ doc_id: string }>(
      'SELECT DISTINCT doc_id FROM chunk_documents WHERE chunk_id = ANY($1::uuid[])',
      [by.chunkIds],
    );
    for (const row of r.rows) docs.add(row.doc_id);
  }
  if (docs.size === 0) return [];
  const ids = [...docs].sort();
  const locked = await tx.query<{ doc_id: string }>(
    "SELECT doc_id FROM documents WHERE doc_id = ANY($1::uuid[]) AND status = 'enriched' ORDER BY doc_id FOR UPDATE",
    [ids],
  );
  if (locked.rows.length === 0) return [];
  const done = await tx.query<{ doc_id: string }>(
    `UPDATE documents d SET status = 'indexed', updated_at = now()
      WHERE d.doc_id = ANY($1::uuid[]) AND d.status = 'enriched'
        AND NOT EXISTS (SELECT 1 FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
                         WHERE cd.doc_id = d.doc_id AND c.embedding_status <> 'embedded')
      RETURNING d.doc_id`,
    [locked.rows.map((r) => r.doc_id)],
  );
  const indexed = done.rows.map((r) => r.doc_id);
  // A chunk whose embedding failed is not retried (spec §3: failed until an operator resets it), so its
  // documents can never be indexed: a fatal failure, `failed` (reindexFailed brings them back).
  await tx.query(
    `UPDATE documents d
        SET status = 'failed', updated_at = now(),
            error_details = coalesce(d.error_details, '{}'::jsonb) || jsonb_build_object('embedding_error',
              (SELECT min(c.embedding_error) FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
                WHERE cd.doc_id = d.doc_id AND c.embedding_status = 'failed'))
      WHERE d.doc_id = ANY($1::uuid[]) AND d.status = 'enriched'
        AND EXISTS (SELECT 1 FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
                     WHERE cd.doc_id = d.doc_id AND c.embedding_status = 'failed')`,
    [locked.rows.map((r) => r.doc_id)],
  );
  if (indexed.length) {
    await tx.query(
      `UPDATE ingest_submissions SET status = 'completed', updated_at = now()
        WHERE result_doc_id = ANY($1::uuid[]) AND status = 'cataloged'`,
      [indexed],
    );
  }
  return indexed;
}

function validateItems(items: EmbeddingItem[]): void {
  if (!Array.isArray(items) || items.length === 0) throw new InvalidEmbeddingError('no embeddings given');
  const seen = new Set<string>();
  for (const it of items) {
    if (typeof it?.chunk_id !== 'string' || !UUID_RE.test(it.chunk_id)) throw new InvalidEmbeddingError('chunk_id must be a UUID');
    const key = `${it.model}\u0000${it.chunk_id}`;
    if (seen.has(key)) throw new InvalidEmbeddingError(`chunk ${it.chunk_id} given twice for model ${it.model}`);
    seen.add(key);
    validateModelName(it.model);
    const v = it.vector;
    if (!Array.isArray(v) || v.length === 0 || v.length > MAX_DIMENSIONS) {
      throw new InvalidEmbeddingError(`vector must be an array of 1-${MAX_DIMENSIONS} numbers`);
    }
    for (const x of v) if (typeof x !== 'number' || !Number.isFinite(x)) throw new InvalidEmbeddingError('vector values must be finite numbers');
    if (it.dimensions !== undefined && it.dimensions !== v.length) {
      throw new DimensionMismatchError(`Vector dimensions mismatch: dimensions=${it.dimensions}, vector has ${v.length}`);
    }
  }
}

/**
 * Stores vectors and marks their chunks embedded, in one transaction with the document and
 * submission status changes. Idempotent per (model, chunk): storing again replaces the vector.
 */
export async function storeEmbeddings(db: Database, items: EmbeddingItem[]): Promise<StoreResult> {
  validateItems(items);
  return db.transaction(async (tx) => {
    const byModel = new Map<string, EmbeddingItem[]>();
    for (const it of items) (byModel.get(it.model) ?? byModel.set(it.model, []).get(it.model)!).push(it);
    const allIds = [...new Set(items.map((i) => i.chunk_id))];
    const found = await tx.query<{ chunk_id: string }>('SELECT chunk_id FROM chunks WHERE chunk_id = ANY($1::uuid[])', [allIds]);
    if (found.rows.length !== allIds.length) {
      const have = new Set(found.rows.map((r) => r.chunk_id));
      throw new UnknownChunkError(allIds.filter((id) => !have.has(id)));
    }
    for (const [model, group] of byModel) {
      const dims = group[0].vector.length;
      for (const g of group) {
        if (g.vector.length !== dims) throw new DimensionMismatchError(`Vector dimensions mismatch: model ${model} got ${dims} and ${g.vector.length}`);
      }
      await ensureModel(tx, db.kind, model, dims);
      const ids = group.map((g) => g.chunk_id);
      await tx.query(
        `INSERT INTO chunk_embeddings (model, chunk_id, embedding)
         SELECT $1, u.c, u.v::vector FROM unnest($2::uuid[], $3::text[]) AS u(c, v)
         ON CONFLICT (model, chunk_id) DO UPDATE SET embedding = EXCLUDED.embedding, created_at = now()`,
        [model, ids, group.map((g) => vectorLiteral(g.vector))],
      );
      await tx.query(
        `UPDATE chunks SET embedding_status = 'embedded', embedding_model = $1, embedding_error = NULL,
                lease_expires_at = NULL, embedded_at = now(), updated_at = now()
          WHERE chunk_id = ANY($2::uuid[])`,
        [model, ids],
      );
    }
    const indexedDocIds = await refreshDocumentStatus(tx, { chunkIds: allIds });
    return { stored: items.length, indexedDocIds };
  });
}

/** Empty or whitespace-only chunks: `embedded` with no vector and no model (spec §3). */
export async function markEmbeddedWithoutVector(db: Database, chunkIds: string[]): Promise<string[]> {
  if (chunkIds.length === 0) return [];
  return db.transaction(async (tx) => {
    await tx.query(
      `UPDATE chunks SET embedding_status = 'embedded', embedding_model = NULL, embedding_error = NULL,
              lease_expires_at = NULL, embedded_at = now(), updated_at = now()
        WHERE chunk_id = ANY($1::uuid[])`,
      [chunkIds],
    );
    return refreshDocumentStatus(tx, { chunkIds });
  });
}

/**
 * Chunks whose vector for `model` is already stored (a chunk reset to pending by a re-chunk or a
 * manual reset): marked embedded again without calling the model.
 */
export async function reuseStoredVectors(db: Database, model: string, chunkIds: string[]): Promise<{ reused: string[]; indexedDocIds: string[] }> {
  if (chunkIds.length === 0) return { reused: [], indexedDocIds: [] };
  return db.transaction(async (tx) => {
    const r = await tx.query<{ chunk_id: string }>(
      `UPDATE chunks c SET embedding_status = 'embedded', embedding_model = $1, embedding_error = NULL,
              lease_expires_at = NULL, embedded_at = now(), updated_at = now()
        WHERE c.chunk_id = ANY($2::uuid[])
          AND EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.model = $1 AND e.chunk_id = c.chunk_id)
        RETURNING c.chunk_id`,
      [model, chunkIds],
    );
    const reused = r.rows.map((x) => x.chunk_id);
    return { reused, indexedDocIds: reused.length ? await refreshDocumentStatus(tx, { chunkIds: reused }) : [] };
  });
}

export const MAX_ERROR_CHARS = 1000;

/** An embedding error: `failed` with the error recorded; no automatic retry (spec §3). */
export async function markFailed(db: Database, failures: { chunk_id: string; error: string }[]): Promise<number> {
  if (failures.length === 0) return 0;
  return db.transaction(async (tx) => {
    const r = await tx.query<{ chunk_id: string }>(
      `UPDATE chunks c SET embedding_status = 'failed', embedding_error = u.e, lease_expires_at = NULL, updated_at = now()
         FROM unnest($1::uuid[], $2::text[]) AS u(id, e)
        WHERE c.chunk_id = u.id AND c.embedding_status IN ('pending', 'processing')
        RETURNING c.chunk_id`,
      [failures.map((f) => f.chunk_id), failures.map((f) => (f.error || 'embedding failed').slice(0, MAX_ERROR_CHARS))],
    );
    // Their documents are `failed` (refreshDocumentStatus).
    if (r.rows.length) await refreshDocumentStatus(tx, { chunkIds: r.rows.map((x) => x.chunk_id) });
    return r.rows.length;
  });
}

/**
 * Documents `failed` for a chunk that is queued again (reindex) go back to `enriched`, waiting for their vectors.
 * Called in the transaction that reset the chunks.
 */
export async function reviveFailedDocuments(tx: Queryable): Promise<number> {
  const r = await tx.query(
    `UPDATE documents d SET status = 'enriched', updated_at = now(),
            error_details = nullif(d.error_details - 'embedding_error', '{}'::jsonb)
      WHERE d.status = 'failed' AND d.error_details ? 'embedding_error'
        AND NOT EXISTS (SELECT 1 FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
                         WHERE cd.doc_id = d.doc_id AND c.embedding_status = 'failed')`,
  );
  return r.rowCount;
}

/** Gives claimed chunks back (provider unreachable, worker stopping). */
export async function releaseChunks(db: Queryable, chunkIds: string[]): Promise<number> {
  if (chunkIds.length === 0) return 0;
  const r = await db.query(
    `UPDATE chunks SET embedding_status = 'pending', lease_expires_at = NULL, updated_at = now()
      WHERE chunk_id = ANY($1::uuid[]) AND embedding_status = 'processing'`,
    [chunkIds],
  );
  return r.rowCount;
}
