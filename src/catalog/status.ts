/**
 * Progress of documents, submissions and batches (spec 4.1 rule 4, 4.6): statuses with chunk counts by
 * embedding state, and the processing error of a document whose chunks could not be embedded.
 */
import type { Queryable } from '../db/types.ts';
import type { IngestStatusResponseT } from '../schemas/ingest.ts';
import { isUuid } from '../util/ids.ts';
import type { ChunkCounts } from './types.ts';

/** Chunk counts by embedding state, per document. */
export async function chunkCounts(db: Queryable, docIds: string[]): Promise<Map<string, ChunkCounts>> {
  const out = new Map<string, ChunkCounts>();
  if (docIds.length === 0) return out;
  const r = await db.query<ChunkCounts & { doc_id: string }>(
    `SELECT cd.doc_id, count(*)::int AS total_chunks,
            count(*) FILTER (WHERE c.embedding_status = 'embedded')::int AS embedded_chunks,
            count(*) FILTER (WHERE c.embedding_status IN ('pending', 'processing'))::int AS pending_chunks,
            count(*) FILTER (WHERE c.embedding_status = 'failed')::int AS failed_chunks,
            min(c.embedding_error) FILTER (WHERE c.embedding_status = 'failed') AS embedding_error
       FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
      WHERE cd.doc_id = ANY($1::uuid[]) GROUP BY cd.doc_id`,
    [docIds],
  );
  for (const row of r.rows) out.set(row.doc_id, row);
  return out;
}

/** Per-document status with chunk counts (spec 4.6 GET …/documents/{id}/status). */
export async function documentStatus(db: Queryable, docId: string): Promise<({ doc_id: string; status: string } & ChunkCounts) | null> {
  if (!isUuid(docId)) return null;
  const r = await db.query<{ status: string }>('SELECT status FROM documents WHERE doc_id = $1', [docId]);
  if (!r.rows[0]) return null;
  const counts = (await chunkCounts(db, [docId])).get(docId) ?? zeroCounts();
  return { doc_id: docId, status: r.rows[0].status, ...counts };
}

/**
 * Status of a submission, or of a batch when the id is a batch id (spec 4.1 rule 4): the
 * batch view lists every submission of the batch with its document's progress.
 */
export async function submissionStatus(db: Queryable, id: string): Promise<IngestStatusResponseT | null> {
  if (!isUuid(id)) return null;
  const sub = await db.query<Record<string, any>>(
    `SELECT s.submission_id, s.status, s.result_doc_id, s.error_details, d.status AS document_status
       FROM ingest_submissions s LEFT JOIN documents d ON d.doc_id = s.result_doc_id WHERE s.submission_id = $1`,
    [id],
  );
  if (sub.rows[0]) {
    const s = sub.rows[0];
    const counts = s.result_doc_id ? ((await chunkCounts(db, [s.result_doc_id])).get(s.result_doc_id) ?? zeroCounts()) : zeroCounts();
    return {
      submission_id: s.submission_id,
      status: s.status,
      document_status: s.document_status ?? null,
      doc_id: s.result_doc_id ?? null,
      total_chunks: counts.total_chunks,
      embedded_chunks: counts.embedded_chunks,
      pending_chunks: counts.pending_chunks,
      failed_chunks: counts.failed_chunks,
      error: s.error_details ?? embeddingFailure(counts),
    };
  }
  const batch = await db.query<Record<string, any>>('SELECT * FROM ingest_batches WHERE batch_id = $1', [id]);
  const b = batch.rows[0];
  if (!b) return null;
  const subs = await db.query<Record<string, any>>(
    `SELECT s.submission_id, s.status, s.result_doc_id, d.status AS document_status
       FROM ingest_submissions s LEFT JOIN documents d ON d.doc_id = s.result_doc_id
      WHERE s.batch_id = $1 ORDER BY s.created_at, s.submission_id`,
    [id],
  );
  const counts = await chunkCounts(db, subs.rows.map((s) => s.result_doc_id).filter(Boolean));
  const perSub = subs.rows.map((s) => {
    const c = counts.get(s.result_doc_id) ?? zeroCounts();
    return {
      submission_id: s.submission_id,
      status: s.status,
      doc_id: s.result_doc_id ?? null,
      document_status: s.document_status ?? null,
      total_chunks: c.total_chunks,
      embedded_chunks: c.embedded_chunks,
      pending_chunks: c.pending_chunks,
      failed_chunks: c.failed_chunks,
      error: embeddingFailure(c),
    };
  });
  const sum = (k: 'total_chunks' | 'embedded_chunks' | 'pending_chunks' | 'failed_chunks') =>
    perSub.reduce((a, s) => a + s[k], 0);
  const failed = sum('failed_chunks');
  return {
    submission_id: b.batch_id,
    status: b.status,
    document_status: null,
    doc_id: null,
    total_chunks: sum('total_chunks'),
    embedded_chunks: sum('embedded_chunks'),
    pending_chunks: sum('pending_chunks'),
    failed_chunks: failed,
    error:
      b.error_details ??
      (failed > 0
        ? { ...perSub.find((x) => x.error)!.error, failed_chunks: failed }
        : null),
    batch: {
      batch_id: b.batch_id,
      status: b.status,
      total_count: b.total_count,
      success_count: b.success_count,
      failure_count: b.failure_count,
      submissions: perSub,
    },
  };
}

function zeroCounts(): ChunkCounts {
  return { total_chunks: 0, embedded_chunks: 0, pending_chunks: 0, failed_chunks: 0, embedding_error: null };
}

/**
 * A document whose chunks could not be embedded has a processing error (spec §7: recorded in
 * IngestStatusResponse.error): how many chunks failed and the first reason the worker recorded.
 */
function embeddingFailure(c: ChunkCounts): Record<string, unknown> | null {
  if (c.failed_chunks === 0) return null;
  return {
    error_code: 'EMBEDDING.FAILED',
    message: `${c.failed_chunks} of ${c.total_chunks} chunk(s) could not be embedded: ${c.embedding_error ?? 'unknown error'}`,
    failed_chunks: c.failed_chunks,
    retryable: true,
  };
}
