/**
 * The vector leg, kept behind this one module because vector storage is moving: today vectors sit
 * in chunks.embedding_vector (vector(1024), zero-padded, embedding_model per chunk, HNSW cosine);
 * the embedding worker's per-model table chunk_embeddings(model, chunk_id, embedding) with a partial
 * HNSW index per model is used instead whenever that table exists.
 *
 * Filters are applied inside the k-NN query; `hnsw.iterative_scan = relaxed_order` (pgvector >= 0.8,
 * present in PGlite's bundled 0.8.x and the server's 0.8.0) keeps scanning the graph until enough
 * rows pass them, so a filtered query still returns k rows. Relaxed order is re-sorted here.
 */
import type { Database, Queryable } from '../db/types.ts';
import { filterSql, type SearchFilters } from '../catalog/filters.ts';
import { codedError } from '../util/errors.ts';

export interface VectorCandidate {
  doc_id: string;
  chunk_id: string;
  /** Cosine similarity, -1..1. */
  similarity: number;
}

export interface VectorQuery {
  model: string;
  queryVector: number[];
  /** Documents wanted (best chunk each). */
  k: number;
  filters: SearchFilters;
  /**
   * PostgreSQL server: the k-NN statement is cancelled after this many ms (statement_timeout in
   * its transaction) and VectorTimeoutError is thrown. PGlite runs a statement to its end (one
   * WebAssembly thread: nothing can interrupt it), so there the limit is not applied.
   */
  timeoutMs?: number;
  /** HNSW search list (hnsw.ef_search); default efSearch(rows asked). */
  efSearch?: number;
  /**
   * Which per-model HNSW index the k-NN walks (chunk_embeddings layout only): `vector` the full
   * vectors (default); `halfvec` 16-bit copies; `bit` one bit per dimension (binary_quantize, Hamming
   * distance), whose BIT_RERANK_FACTOR × rows best are re-ranked by exact cosine.
   */
  scan?: VectorScan;
}

export type VectorScan = 'vector' | 'halfvec' | 'bit';

/** The binary scan gathers this many candidates per row asked; exact cosine picks the rows. */
export const BIT_RERANK_FACTOR = 4;

/** The k-NN did not finish within VectorQuery.timeoutMs. */
export class VectorTimeoutError extends codedError('SEARCH.VECTOR_TIMEOUT') {
  constructor(ms: number) {
    super(`k-NN not done within ${ms} ms`);
    this.name = 'VectorTimeoutError';
  }
}

/**
 * Rows asked of the k-NN per document wanted: several chunks of one document can be nearest (a
 * long email has several), and the rows are reduced to the best chunk per document here.
 */
export const ROWS_PER_DOCUMENT = 2;

export const PADDED_DIMENSIONS = 1024;

type Layout = { kind: 'chunks' } | { kind: 'per-model' };
const layouts = new WeakMap<Database, Layout>();

async function layoutOf(db: Database): Promise<Layout> {
  let l = layouts.get(db);
  if (!l) {
    const r = await db.query<{ t: string | null }>("SELECT to_regclass('chunk_embeddings')::text AS t");
    l = r.rows[0]?.t ? { kind: 'per-model' } : { kind: 'chunks' };
    layouts.set(db, l);
  }
  return l;
}

export function vectorLiteral(v: number[]): string {
  return `[${v.map((x) => (Number.isFinite(x) ? x : 0)).join(',')}]`;
}

/** Zero-pads (cosine is unchanged by zeros) to the stored column's size. */
export function padVector(v: number[], dims = PADDED_DIMENSIONS): number[] {
  if (v.length > dims) throw new Error(`query vector has ${v.length} dimensions, the column holds ${dims}`);
  return v.length === dims ? v : [...v, ...new Array(dims - v.length).fill(0)];
}

/**
 * The HNSW search list: as long as the rows asked for (pgvector's default 40 at least). The scan
 * costs about linearly in it; SciFact nDCG@10 was measured against it (docs/search.md).
 */
export function efSearch(limit: number): number {
  return Math.min(1000, Math.max(40, limit));
}

async function knn(db: Database, sql: string, params: unknown[], ef: number, timeoutMs?: number): Promise<VectorCandidate[]> {
  const timeout = db.kind === 'postgres' && timeoutMs !== undefined ? Math.max(1, Math.ceil(timeoutMs)) : 0;
  return db.transaction(async (tx: Queryable) => {
    // One round trip for the settings; each lasts until the end of this transaction.
    await tx.query(
      `SELECT set_config('hnsw.iterative_scan', 'relaxed_order', true), set_config('hnsw.ef_search', $1, true)` +
        (timeout > 0 ? `, set_config('statement_timeout', $2, true)` : ''),
      timeout > 0 ? [String(ef), String(timeout)] : [String(ef)],
    );
    try {
      return (await tx.query<VectorCandidate>(sql, params)).rows;
    } catch (err) {
      // 57014 query_canceled: our statement_timeout (nothing else cancels a search's statement).
      if (timeout > 0 && (err as { code?: string }).code === '57014') throw new VectorTimeoutError(timeout);
      throw err;
    }
  });
}

/** Whether any vector of `model` is stored (the vector leg is skipped until one is). */
export async function vectorsExist(db: Database, model: string): Promise<boolean> {
  const layout = await layoutOf(db);
  const sql =
    layout.kind === 'per-model'
      ? 'SELECT EXISTS (SELECT 1 FROM chunk_embeddings WHERE model = $1) AS x'
      : 'SELECT EXISTS (SELECT 1 FROM chunks WHERE embedding_model = $1 AND embedding_vector IS NOT NULL) AS x';
  return (await db.query<{ x: boolean }>(sql, [model])).rows[0]?.x === true;
}

export async function vectorCandidates(db: Database, q: VectorQuery): Promise<VectorCandidate[]> {
  const layout = await layoutOf(db);
  const limit = q.k * ROWS_PER_DOCUMENT;
  const ef = Math.min(1000, Math.max(1, q.efSearch ?? efSearch(limit)));
  let rows: VectorCandidate[];
  if (layout.kind === 'per-model') {
    const dims = q.queryVector.length;
    if (!Number.isInteger(dims) || dims < 1 || dims > 4096) throw new Error('invalid query vector size');
    const scan = q.scan ?? 'vector';
    const candidates = scan === 'bit' ? limit * BIT_RERANK_FACTOR : limit;
    const params: unknown[] = [vectorLiteral(q.queryVector), q.model, candidates];
    const where = filterSql(q.filters, params, 'd');
    const exact = `1 - (e.embedding::vector(${dims}) <=> $1::vector(${dims}))`;
    // The expression and predicate must match the per-model partial HNSW index (src/embedding/store.ts).
    const order =
      scan === 'bit'
        ? `binary_quantize(e.embedding::vector(${dims}))::bit(${dims}) <~> binary_quantize($1::vector(${dims}))::bit(${dims})`
        : scan === 'halfvec'
          ? `e.embedding::halfvec(${dims}) <=> $1::halfvec(${dims})`
          : `e.embedding::vector(${dims}) <=> $1::vector(${dims})`;
    const nearest = `SELECT cd.doc_id, e.chunk_id, ${exact} AS similarity
      FROM chunk_embeddings e JOIN chunk_documents cd ON cd.chunk_id = e.chunk_id
      JOIN documents d ON d.doc_id = cd.doc_id
     WHERE e.model = $2 AND d.is_active_version ${where}
     ORDER BY ${order} LIMIT $3`;
    // The binary scan's candidates are re-ranked by exact cosine; the rows asked are the best of them.
    const sql = scan === 'bit' ? `SELECT * FROM (${nearest}) r ORDER BY similarity DESC LIMIT ${limit}` : nearest;
    rows = await knn(db, sql, params, scan === 'bit' ? Math.min(1000, Math.max(ef, candidates)) : ef, q.timeoutMs);
  } else {
    const params: unknown[] = [vectorLiteral(padVector(q.queryVector)), q.model, limit];
    const where = filterSql(q.filters, params, 'd');
    const sql = `SELECT cd.doc_id, c.chunk_id, 1 - (c.embedding_vector <=> $1::vector) AS similarity
      FROM chunks c JOIN chunk_documents cd ON cd.chunk_id = c.chunk_id
      JOIN documents d ON d.doc_id = cd.doc_id
     WHERE c.embedding_model = $2 AND c.embedding_vector IS NOT NULL AND d.is_active_version ${where}
     ORDER BY c.embedding_vector <=> $1::vector LIMIT $3`;
    rows = await knn(db, sql, params, ef, q.timeoutMs);
  }
  return best(rows, q.k);
}

/** The best chunk per document, k documents by similarity. */
function best(rows: VectorCandidate[], k: number): VectorCandidate[] {
  const top = new Map<string, VectorCandidate>();
  for (const r of rows) {
    const cur = top.get(r.doc_id);
    if (!cur || Number(r.similarity) > cur.similarity) top.set(r.doc_id, { ...r, similarity: Number(r.similarity) });
  }
  return [...top.values()].sort((a, b) => b.similarity - a.similarity).slice(0, k);
}
