/**
 * Inserts documents, chunks and submissions the way the catalog does (the catalog is not on this
 * branch): chunks deduplicated by text hash and shared through chunk_documents, document status
 * `enriched` and submission `cataloged` once cataloging is done.
 */
import crypto from 'node:crypto';
import type { Database, Queryable } from '../../src/db/types.ts';

export const sha256 = (s: string) => crypto.createHash('sha256').update(s).digest('hex');

export interface InsertedDoc {
  docId: string;
  submissionId: string;
  chunkIds: string[];
}

export async function insertDocument(
  db: Database | Queryable,
  texts: string[],
  opts: { status?: string; externalId?: string } = {},
): Promise<InsertedDoc> {
  const docId = crypto.randomUUID();
  const submissionId = crypto.randomUUID();
  const body = texts.join('\n\n');
  const q: Queryable = db;
  await q.query(
    `INSERT INTO documents (doc_id, external_id, source_type, text, text_sha256, content_timestamp, content_timestamp_type, status)
     VALUES ($1, $2, 'note', $3, $4, now(), 'created', $5)`,
    [docId, opts.externalId ?? `ext-${docId}`, body, sha256(body), opts.status ?? 'enriched'],
  );
  const chunkIds: string[] = [];
  for (let i = 0; i < texts.length; i++) {
    const t = texts[i];
    await q.query(
      `INSERT INTO chunks (chunk_id, text, text_sha256, ordinal) VALUES ($1, $2, $3, $4) ON CONFLICT (text_sha256) DO NOTHING`,
      [crypto.randomUUID(), t, sha256(t), i],
    );
    const id = (await q.query<{ chunk_id: string }>('SELECT chunk_id FROM chunks WHERE text_sha256 = $1', [sha256(t)])).rows[0].chunk_id;
    await q.query('INSERT INTO chunk_documents (doc_id, ordinal, chunk_id) VALUES ($1, $2, $3)', [docId, i, id]);
    chunkIds.push(id);
  }
  await q.query(
    `INSERT INTO ingest_submissions (submission_id, idempotency_key, source_type, source_id, content_sha256, status, result_doc_id)
     VALUES ($1, $2, 'note', $3, $4, 'cataloged', $5)`,
    [submissionId, `idem-${submissionId}`, `src-${docId}`, sha256(body), docId],
  );
  return { docId, submissionId, chunkIds };
}

/** Many single-chunk documents in a few statements (multi-process tests, bench). */
export async function insertManyDocuments(db: Database, texts: string[]): Promise<void> {
  const per = 500;
  for (let i = 0; i < texts.length; i += per) {
    const part = texts.slice(i, i + per);
    const docIds = part.map(() => crypto.randomUUID());
    const chunkIds = part.map(() => crypto.randomUUID());
    const subIds = part.map(() => crypto.randomUUID());
    const hashes = part.map(sha256);
    await db.transaction(async (tx) => {
      await tx.query(
        `INSERT INTO documents (doc_id, external_id, source_type, text, text_sha256, content_timestamp, content_timestamp_type, status)
         SELECT d, 'ext-' || d, 'note', t, h, now(), 'created', 'enriched' FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(d, t, h)`,
        [docIds, part, hashes],
      );
      await tx.query(
        `INSERT INTO chunks (chunk_id, text, text_sha256) SELECT c, t, h FROM unnest($1::uuid[], $2::text[], $3::text[]) AS u(c, t, h)`,
        [chunkIds, part, hashes],
      );
      await tx.query(
        `INSERT INTO chunk_documents (doc_id, ordinal, chunk_id) SELECT d, 0, c FROM unnest($1::uuid[], $2::uuid[]) AS u(d, c)`,
        [docIds, chunkIds],
      );
      await tx.query(
        `INSERT INTO ingest_submissions (submission_id, idempotency_key, source_type, source_id, content_sha256, status, result_doc_id)
         SELECT s, 'idem-' || s, 'note', 'src-' || d, h, 'cataloged', d FROM unnest($1::uuid[], $2::uuid[], $3::text[]) AS u(s, d, h)`,
        [subIds, docIds, hashes],
      );
    });
  }
}

export async function chunkRow(db: Queryable, chunkId: string) {
  return (
    await db.query<{ embedding_status: string; embedding_model: string | null; embedding_error: string | null; lease_expires_at: Date | null }>(
      'SELECT embedding_status, embedding_model, embedding_error, lease_expires_at FROM chunks WHERE chunk_id = $1',
      [chunkId],
    )
  ).rows[0];
}

export async function docStatus(db: Queryable, docId: string): Promise<{ doc: string; submission: string }> {
  const d = await db.query<{ status: string }>('SELECT status FROM documents WHERE doc_id = $1', [docId]);
  const s = await db.query<{ status: string }>('SELECT status FROM ingest_submissions WHERE result_doc_id = $1', [docId]);
  return { doc: d.rows[0].status, submission: s.rows[0].status };
}

export async function vectorCount(db: Queryable, chunkId: string, model?: string): Promise<number> {
  const r = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM chunk_embeddings WHERE chunk_id = $1 AND ($2::text IS NULL OR model = $2)',
    [chunkId, model ?? null],
  );
  return Number(r.rows[0].n);
}

/**
 * `db` as an embedding worker sees it, with a count of the worker's claims that found nothing pending. The worker
 * keeps no count of its polls, and a test that checks that nothing happens (or that only notify() wakes the worker)
 * must know a poll did happen: waiting for one replaces sleeping "long enough". A claim is the statement that
 * moves pending chunks to processing (claimChunks in src/embedding/worker.ts).
 */
export function watchClaims(db: Database): { db: Database; emptyClaims: () => number } {
  let empty = 0;
  const watched: Database = {
    kind: db.kind,
    async query(sql, params, opts) {
      const r = await db.query(sql, params, opts);
      if (/SET embedding_status = 'processing'/.test(sql) && r.rows.length === 0) empty++;
      return r as any;
    },
    exec: (sql) => db.exec(sql),
    transaction: (fn) => db.transaction(fn),
    close: () => db.close(),
  };
  return { db: watched, emptyClaims: () => empty };
}

/** Polls until fn() is true (no timing assertions: only a generous upper bound to fail instead of hang). */
export async function waitFor(fn: () => Promise<boolean>, timeoutMs = 30_000, everyMs = 50): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await fn())) {
    if (Date.now() > end) throw new Error(`condition not met within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
