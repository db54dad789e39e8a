/**
 * The catalog: documents with version history, threads, chunks, people links, submissions and
 * batches (gateway spec 2–4.6). Every document insertion is one transaction; a batch processes
 * its items in groups, each item inside a savepoint so one bad item never stops the others.
 */
import type { Database, Queryable } from '../db/types.ts';
import { linkDocumentPeople } from '../people/linking.ts';
import { normaliseText, sha256Hex } from '../util/hash.ts';
import { MEMEX_NAMESPACE, isUuid, newId, uuidV5 } from '../util/ids.ts';
import { chunkText } from './chunking.ts';
import { upsertThread } from './threads.ts';
import {
  CatalogError,
  type AttachmentEntry,
  type BatchItemOutcome,
  type CatalogBatchResult,
  type CatalogDocumentRequest,
  type CatalogIngestResult,
  type ChunkCounts,
} from './types.ts';

export interface CatalogOptions {
  /** Region for reading national phone numbers in people[]. */
  phoneRegion?: string;
  /** Called after new chunks were queued for embedding (wakes the embedding worker). */
  onChunksQueued?: () => void;
  /** Items per transaction in a batch; batch counts become visible after each group. */
  batchGroupSize?: number;
}

export interface DocumentFilters {
  source_type?: string;
  has_attachments?: boolean;
  thread_id?: string;
  limit: number;
  offset: number;
}

export interface VersionChanges {
  text?: string;
  title?: string | null;
  metadata?: Record<string, unknown>;
  content_timestamp?: string;
  attachments?: AttachmentEntry[];
  /** Put every chunk of the new version back in the embedding queue, even already embedded ones. */
  requeue?: boolean;
}

const DOC_COLUMNS = `doc_id, external_id, source_type, source_provider, source_account_id, version_number,
  previous_version_id, is_active_version, superseded_at, superseded_by_id, deleted_at, title, text, text_sha256,
  mime_type, canonical_uri, content_timestamp, content_timestamp_type, content_created_at, content_modified_at,
  people, thread_id, parent_doc_id, source_doc_ids, related_doc_ids, has_attachments, attachment_count,
  has_location, has_due_date, due_date, is_completed, completed_at, metadata, status, extraction_failed,
  enrichment_failed, error_details, intent, relevance_score, intent_status, intent_processing_started_at,
  intent_processing_completed_at, intent_processing_error, ingested_at, created_at, updated_at`;

/** Timestamps as UTC ISO strings, the way every API response carries them. */
export function isoRow<T extends Record<string, unknown>>(row: T): T {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = v instanceof Date ? v.toISOString() : v;
  return out as T;
}

function attachmentFacets(attachments: unknown): { has: boolean; count: number } | null {
  if (!Array.isArray(attachments)) return null;
  const count = attachments.filter(
    (a) => a && typeof a === 'object' && ((a as AttachmentEntry).role ?? 'attachment') === 'attachment',
  ).length;
  return { has: count > 0, count };
}

export class Catalog {
  readonly phoneRegion: string;

  constructor(
    readonly db: Database,
    private readonly opts: CatalogOptions = {},
  ) {
    this.phoneRegion = opts.phoneRegion ?? 'US';
  }

  // ---------------------------------------------------------------------------------------------
  // Ingestion

  /** Idempotent insertion of one document (spec 4.6 POST /v1/catalog/documents). */
  async ingest(req: CatalogDocumentRequest): Promise<CatalogIngestResult> {
    const result = await this.db.transaction((tx) => this.ingestInTx(tx, req, null));
    if (!result.duplicate) this.opts.onChunksQueued?.();
    return result;
  }

  /**
   * Batch insertion with a batch record (spec 4.1 rule 3). `items` carry their index in the
   * client's request; `preparedFailures` counts items the gateway already rejected, so the batch
   * totals cover the whole request. The batch id is derived from its key: a retry is the same batch.
   */
  async ingestBatch(
    items: { index: number; request: CatalogDocumentRequest }[],
    batchKey: string,
    preparedFailures = 0,
  ): Promise<CatalogBatchResult> {
    const total = items.length + preparedFailures;
    const batchId = uuidV5(`batch:${batchKey}`, MEMEX_NAMESPACE);
    await this.db.query(
      `INSERT INTO ingest_batches (batch_id, idempotency_key, status, total_count, success_count, failure_count)
       VALUES ($1, $2, 'processing', $3, 0, $4)
       ON CONFLICT (idempotency_key) DO UPDATE
         SET status = 'processing', total_count = GREATEST(ingest_batches.total_count, EXCLUDED.total_count),
             success_count = 0, failure_count = EXCLUDED.failure_count, updated_at = now()`,
      [batchId, batchKey, total, preparedFailures],
    );

    const outcomes: BatchItemOutcome[] = [];
    const groupSize = this.opts.batchGroupSize ?? 50;
    let queued = false;
    for (let g = 0; g < items.length; g += groupSize) {
      const group = items.slice(g, g + groupSize);
      const groupOutcomes = await this.db.transaction(async (tx) => {
        const out: BatchItemOutcome[] = [];
        for (const item of group) {
          await tx.query('SAVEPOINT batch_item');
          try {
            const result = await this.ingestInTx(tx, item.request, batchId);
            await tx.query('RELEASE SAVEPOINT batch_item');
            if (!result.duplicate) queued = true;
            out.push({ index: item.index, ok: true, result });
          } catch (err) {
            await tx.query('ROLLBACK TO SAVEPOINT batch_item');
            out.push({ index: item.index, ok: false, error: toItemError(err) });
          }
        }
        const ok = out.filter((o) => o.ok).length;
        await tx.query(
          `UPDATE ingest_batches SET success_count = success_count + $2, failure_count = failure_count + $3,
                  updated_at = now() WHERE batch_id = $1`,
          [batchId, ok, out.length - ok],
        );
        return out;
      });
      outcomes.push(...groupOutcomes);
    }
    const success = outcomes.filter((o) => o.ok).length;
    const failure = total - success;
    const status = failure === 0 ? 'completed' : success === 0 ? 'failed' : 'partial';
    const errors = outcomes.filter((o) => !o.ok).map((o) => ({ index: o.index, ...o.error }));
    await this.db.query(
      `UPDATE ingest_batches SET status = $2, success_count = $3, failure_count = $4, error_details = $5,
              updated_at = now() WHERE batch_id = $1`,
      [batchId, status, success, failure, errors.length ? JSON.stringify({ errors }) : null],
    );
    if (queued) this.opts.onChunksQueued?.();
    return {
      batch_id: batchId,
      batch_status: status,
      total_count: total,
      success_count: success,
      failure_count: failure,
      items: outcomes,
    };
  }

  private async ingestInTx(
    tx: Queryable,
    req: CatalogDocumentRequest,
    batchId: string | null,
  ): Promise<CatalogIngestResult> {
    const existing = await tx.query<{
      submission_id: string;
      status: string;
      result_doc_id: string | null;
      is_active_version: boolean | null;
    }>(
      `SELECT s.submission_id, s.status, s.result_doc_id, d.is_active_version
         FROM ingest_submissions s LEFT JOIN documents d ON d.doc_id = s.result_doc_id
        WHERE s.idempotency_key = $1 FOR UPDATE OF s`,
      [req.idempotency_key],
    );
    let submissionId: string;
    const prior = existing.rows[0];
    if (prior) {
      // The same submission again: nothing new while its document is still the active version.
      if (prior.result_doc_id && prior.status !== 'failed' && prior.is_active_version) {
        return this.duplicateResult(tx, prior.submission_id, prior.status, prior.result_doc_id);
      }
      submissionId = prior.submission_id;
      await tx.query(
        `UPDATE ingest_submissions SET status = 'processing', error_details = NULL,
                batch_id = coalesce(batch_id, $2), updated_at = now() WHERE submission_id = $1`,
        [submissionId, batchId],
      );
    } else {
      submissionId = newId();
      const ins = await tx.query(
        `INSERT INTO ingest_submissions (submission_id, idempotency_key, source_type, source_id, content_sha256,
                                         status, batch_id)
         VALUES ($1, $2, $3, $4, $5, 'processing', $6) ON CONFLICT (idempotency_key) DO NOTHING`,
        [submissionId, req.idempotency_key, req.source_type, req.source_id, req.content_sha256, batchId],
      );
      // Another transaction inserted the same key first (it has committed by now): start over.
      if (ins.rowCount === 0) return this.ingestInTx(tx, req, batchId);
    }

    const text = normaliseText(req.text);
    const chunks = chunkText(text);
    if (chunks.length === 0) throw new CatalogError(422, 'INGEST.EMPTY_TEXT', 'Document produced no valid chunks');

    const externalId = req.external_id ?? req.source_id;
    const threadId = await upsertThread(tx, req);

    const latest = await tx.query<{ doc_id: string; version_number: number; is_active_version: boolean }>(
      `SELECT doc_id, version_number, is_active_version FROM documents
        WHERE source_type = $1 AND coalesce(source_provider, '') = coalesce($2, '')
          AND coalesce(source_account_id, '') = coalesce($3, '') AND external_id = $4
        ORDER BY version_number DESC LIMIT 1 FOR UPDATE`,
      [req.source_type, req.source_provider ?? null, req.source_account_id ?? null, externalId],
    );
    const docId = newId();
    const previous = latest.rows[0];
    if (previous?.is_active_version) {
      await this.supersede(tx, previous.doc_id, docId);
    }

    const metadata = this.buildMetadata(req);
    const facets = attachmentFacets(metadata.attachments);
    const hasAttachments = req.facet_overrides?.has_attachments ?? facets?.has ?? metadataFlag(metadata);
    const attachmentCount =
      req.facet_overrides?.attachment_count ?? facets?.count ?? metadataCount(metadata) ?? (hasAttachments ? 1 : 0);

    await tx.query(
      `INSERT INTO documents (doc_id, external_id, source_type, source_provider, source_account_id, version_number,
          previous_version_id, title, text, text_sha256, mime_type, canonical_uri, content_timestamp,
          content_timestamp_type, content_created_at, content_modified_at, people, thread_id, parent_doc_id,
          source_doc_ids, related_doc_ids, has_attachments, attachment_count, has_location, has_due_date, due_date,
          is_completed, completed_at, metadata, status, extraction_failed, error_details, intent, relevance_score)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22,
               $23, $24, $25, $26, $27, $28, $29, 'extracting', $30, $31, $32, $33)`,
      [
        docId, externalId, req.source_type, req.source_provider ?? null, req.source_account_id ?? null,
        (previous?.version_number ?? 0) + 1, previous?.doc_id ?? null, req.title ?? null, text, sha256Hex(text),
        req.mime_type ?? 'text/plain', req.canonical_uri ?? null, req.content_timestamp, req.content_timestamp_type,
        req.content_created_at ?? null, req.content_modified_at ?? null, JSON.stringify(req.people ?? []), threadId,
        validUuidOrNull(req.parent_doc_id), uuidList(req.source_doc_ids), uuidList(req.related_doc_ids),
        hasAttachments, attachmentCount, req.has_location ?? false, req.has_due_date ?? Boolean(req.due_date),
        req.due_date ?? null, req.is_completed ?? null, req.completed_at ?? null, JSON.stringify(metadata),
        req.extraction_failed ?? false, req.error_details ? JSON.stringify(req.error_details) : null,
        req.intent ? JSON.stringify(req.intent) : null, req.relevance_score ?? null,
      ],
    );

    const pendingChunks = await this.storeChunks(tx, docId, chunks, false);
    if (req.people?.length) {
      await linkDocumentPeople(tx, docId, req.people, req.source_type, this.phoneRegion);
    }
    if (req.file_sha256s?.length) {
      await tx.query(
        `INSERT INTO document_files (doc_id, file_sha256) SELECT $1, unnest($2::text[]) ON CONFLICT DO NOTHING`,
        [docId, req.file_sha256s],
      );
    }

    // Text documents need no extraction or enrichment step of their own: they are enriched once
    // cataloged, and indexed as soon as every chunk has its vector (at once when all are shared).
    const docStatus = pendingChunks === 0 ? 'indexed' : 'enriched';
    const subStatus = pendingChunks === 0 ? 'completed' : 'cataloged';
    await tx.query(`UPDATE documents SET status = $2, updated_at = now() WHERE doc_id = $1`, [docId, docStatus]);
    await tx.query(
      `UPDATE ingest_submissions SET status = $2, result_doc_id = $3, updated_at = now() WHERE submission_id = $1`,
      [submissionId, subStatus, docId],
    );
    return {
      submission_id: submissionId,
      doc_id: docId,
      external_id: externalId,
      version_number: (previous?.version_number ?? 0) + 1,
      status: subStatus,
      document_status: docStatus,
      thread_id: threadId,
      file_ids: req.file_sha256s ?? [],
      duplicate: false,
      total_chunks: chunks.length,
    };
  }

  private async duplicateResult(
    tx: Queryable,
    submissionId: string,
    status: string,
    docId: string,
  ): Promise<CatalogIngestResult> {
    const r = await tx.query<{
      external_id: string;
      version_number: number;
      thread_id: string | null;
      status: string;
      total: number;
      files: string[];
    }>(
      `SELECT d.external_id, d.version_number, d.thread_id, d.status,
              (SELECT count(*)::int FROM chunk_documents cd WHERE cd.doc_id = d.doc_id) AS total,
              coalesce((SELECT array_agg(file_sha256) FROM document_files f WHERE f.doc_id = d.doc_id), '{}') AS files
         FROM documents d WHERE d.doc_id = $1`,
      [docId],
    );
    const d = r.rows[0];
    return {
      submission_id: submissionId,
      doc_id: docId,
      external_id: d.external_id,
      version_number: d.version_number,
      status,
      document_status: d.status,
      thread_id: d.thread_id,
      file_ids: d.files,
      duplicate: true,
      total_chunks: d.total,
    };
  }

  /** Marks a version inactive in favour of its successor and drops its chunk links. */
  private async supersede(tx: Queryable, oldDocId: string, newDocId: string | null): Promise<void> {
    await tx.query(
      `UPDATE documents SET is_active_version = false, superseded_at = now(), superseded_by_id = $2,
              updated_at = now() WHERE doc_id = $1`,
      [oldDocId, newDocId],
    );
    await tx.query('DELETE FROM chunk_documents WHERE doc_id = $1', [oldDocId]);
  }

  private buildMetadata(req: CatalogDocumentRequest): Record<string, unknown> {
    const metadata: Record<string, unknown> = { ...(req.metadata ?? {}) };
    if (req.attachments) metadata.attachments = req.attachments;
    const timestamps = (metadata.timestamps && typeof metadata.timestamps === 'object'
      ? { ...(metadata.timestamps as Record<string, unknown>) }
      : {}) as Record<string, unknown>;
    // Rule of the data dictionary: timestamps.primary mirrors content_timestamp and its type.
    timestamps.primary = { value: req.content_timestamp, type: req.content_timestamp_type };
    const specific = { ...((timestamps.source_specific as Record<string, unknown>) ?? {}) };
    if (req.content_created_at) specific.created_at = req.content_created_at;
    if (req.content_modified_at) specific.modified_at = req.content_modified_at;
    timestamps.source_specific = specific;
    metadata.timestamps = timestamps;
    metadata.ingested_at = new Date().toISOString();
    return metadata;
  }

  /**
   * Stores the chunks of a document. Chunks are shared by text hash: text seen before reuses its
   * chunk (and its vector). Returns how many of the document's chunks still wait for a vector.
   */
  private async storeChunks(
    tx: Queryable,
    docId: string,
    chunks: { text: string; start: number; end: number }[],
    requeue: boolean,
  ): Promise<number> {
    const shas = chunks.map((c) => sha256Hex(c.text));
    const r = await tx.query<{ not_embedded: number }>(
      `WITH input AS (
         SELECT * FROM unnest($2::uuid[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[])
                AS t(chunk_id, text, sha, ordinal, start_char, end_char)),
       ins AS (
         INSERT INTO chunks (chunk_id, text, text_sha256, ordinal, source_ref)
         SELECT DISTINCT ON (sha) chunk_id, text, sha, ordinal,
                jsonb_build_object('type', 'text_span', 'start_char', start_char, 'end_char', end_char)
           FROM input ORDER BY sha, ordinal
         ON CONFLICT (text_sha256) DO NOTHING
         RETURNING chunk_id, text_sha256, embedding_status),
       allc AS (
         SELECT chunk_id, text_sha256, embedding_status FROM ins
         UNION ALL
         SELECT chunk_id, text_sha256, embedding_status FROM chunks WHERE text_sha256 = ANY($4::text[])),
       links AS (
         INSERT INTO chunk_documents (doc_id, ordinal, chunk_id, start_char, end_char)
         SELECT $1, i.ordinal, a.chunk_id, i.start_char, i.end_char FROM input i JOIN allc a ON a.text_sha256 = i.sha
         RETURNING chunk_id)
       SELECT count(*) FILTER (WHERE a.embedding_status <> 'embedded')::int AS not_embedded
         FROM input i JOIN allc a ON a.text_sha256 = i.sha`,
      [
        docId,
        chunks.map(() => newId()),
        chunks.map((c) => c.text),
        shas,
        chunks.map((_, i) => i),
        chunks.map((c) => c.start),
        chunks.map((c) => c.end),
      ],
    );
    if (!requeue) return r.rows[0].not_embedded;
    const q = await tx.query(
      `UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL, lease_expires_at = NULL,
              updated_at = now()
        WHERE text_sha256 = ANY($1::text[]) AND embedding_status <> 'pending'`,
      [shas],
    );
    return r.rows[0].not_embedded + q.rowCount;
  }

  // ---------------------------------------------------------------------------------------------
  // Versions, updates, deletes

  /**
   * A new version of a document with changed text, metadata, timestamp or attachments (spec 4.6
   * PATCH …/version). The old version becomes inactive and loses its chunk links; chunks are
   * rebuilt for the new one. Only the active version can be changed.
   */
  async createVersion(
    docId: string,
    changes: VersionChanges,
  ): Promise<{
    doc_id: string;
    previous_version_id: string;
    external_id: string;
    version_number: number;
    thread_id: string | null;
    status: string;
    file_ids: string[];
    chunks_queued: number;
  }> {
    if (!isUuid(docId)) throw new CatalogError(422, 'UPDATE.INVALID_DOC_ID', 'doc_id must be a UUID');
    const out = await this.db.transaction(async (tx) => {
      const cur = await tx.query<Record<string, any>>(`SELECT ${DOC_COLUMNS} FROM documents WHERE doc_id = $1 FOR UPDATE`, [
        docId,
      ]);
      const old = cur.rows[0];
      if (!old) throw new CatalogError(404, 'DOCUMENT.NOT_FOUND', 'Document not found');
      if (!old.is_active_version) {
        throw new CatalogError(
          409,
          'DOCUMENT.NOT_ACTIVE',
          old.superseded_by_id
            ? `Document is not the active version; the active one is ${await this.activeIdOf(tx, docId)}`
            : 'Document was deleted',
        );
      }
      const text = changes.text !== undefined ? normaliseText(changes.text) : old.text;
      const chunks = chunkText(text);
      if (chunks.length === 0) throw new CatalogError(422, 'INGEST.EMPTY_TEXT', 'text is empty after normalisation');
      const newDocId = newId();
      const metadata: Record<string, unknown> = { ...(old.metadata ?? {}), ...(changes.metadata ?? {}) };
      if (changes.attachments) metadata.attachments = changes.attachments;
      const ts = changes.content_timestamp ?? (old.content_timestamp as Date).toISOString();
      metadata.timestamps = {
        ...((metadata.timestamps as object) ?? {}),
        primary: { value: ts, type: old.content_timestamp_type },
      };
      metadata.ingested_at = new Date().toISOString();
      const facets = attachmentFacets(metadata.attachments);
      await this.supersede(tx, docId, newDocId);
      await tx.query(
        `INSERT INTO documents (${DOC_COLUMNS})
         SELECT $2, external_id, source_type, source_provider, source_account_id, version_number + 1, doc_id, true,
                NULL, NULL, NULL, $3, $4, $5, mime_type, canonical_uri, $6, content_timestamp_type, content_created_at,
                content_modified_at, people, thread_id, parent_doc_id, source_doc_ids, related_doc_ids,
                $7, $8, has_location, has_due_date, due_date, is_completed, completed_at, $9, 'extracting',
                extraction_failed, enrichment_failed, error_details, intent, relevance_score, intent_status,
                NULL, NULL, NULL, now(), now(), now()
           FROM documents WHERE doc_id = $1`,
        [
          docId, newDocId, changes.title !== undefined ? changes.title : old.title, text, sha256Hex(text), ts,
          facets ? facets.has : old.has_attachments, facets ? facets.count : old.attachment_count,
          JSON.stringify(metadata),
        ],
      );
      // People links and file links follow the new version.
      await tx.query(
        `INSERT INTO document_people (doc_id, person_id, role) SELECT $2, person_id, role FROM document_people
          WHERE doc_id = $1 ON CONFLICT DO NOTHING`,
        [docId, newDocId],
      );
      await tx.query(
        `INSERT INTO document_files (doc_id, file_sha256, role) SELECT $2, file_sha256, role FROM document_files
          WHERE doc_id = $1 ON CONFLICT DO NOTHING`,
        [docId, newDocId],
      );
      const queued = await this.storeChunks(tx, newDocId, chunks, changes.requeue ?? false);
      const status = queued === 0 ? 'indexed' : 'enriched';
      await tx.query('UPDATE documents SET status = $2 WHERE doc_id = $1', [newDocId, status]);
      const files = await tx.query<{ file_sha256: string }>('SELECT file_sha256 FROM document_files WHERE doc_id = $1', [
        newDocId,
      ]);
      return {
        doc_id: newDocId,
        previous_version_id: docId,
        external_id: old.external_id as string,
        version_number: (old.version_number as number) + 1,
        thread_id: old.thread_id as string | null,
        status,
        file_ids: files.rows.map((f) => f.file_sha256),
        chunks_queued: queued,
      };
    });
    if (out.chunks_queued > 0) this.opts.onChunksQueued?.();
    return out;
  }

  private async activeIdOf(tx: Queryable, docId: string): Promise<string | null> {
    const r = await tx.query<{ doc_id: string }>(
      `SELECT a.doc_id FROM documents d JOIN documents a
          ON a.source_type = d.source_type AND coalesce(a.source_provider, '') = coalesce(d.source_provider, '')
         AND coalesce(a.source_account_id, '') = coalesce(d.source_account_id, '') AND a.external_id = d.external_id
       WHERE d.doc_id = $1 AND a.is_active_version`,
      [docId],
    );
    return r.rows[0]?.doc_id ?? null;
  }

  /** Soft delete (spec 3, document versions): inactive, chunk and file links removed. */
  async deleteDocument(docId: string): Promise<{ doc_id: string; status: 'deleted' }> {
    if (!isUuid(docId)) throw new CatalogError(422, 'DOCUMENT.INVALID_ID', 'doc_id must be a UUID');
    return this.db.transaction(async (tx) => {
      const r = await tx.query<{ is_active_version: boolean }>(
        'SELECT is_active_version FROM documents WHERE doc_id = $1 FOR UPDATE',
        [docId],
      );
      if (!r.rows[0]) throw new CatalogError(404, 'DOCUMENT.NOT_FOUND', 'Document not found');
      await tx.query(
        `UPDATE documents SET is_active_version = false, deleted_at = coalesce(deleted_at, now()), updated_at = now()
          WHERE doc_id = $1`,
        [docId],
      );
      await tx.query('DELETE FROM chunk_documents WHERE doc_id = $1', [docId]);
      await tx.query('DELETE FROM document_files WHERE doc_id = $1', [docId]);
      return { doc_id: docId, status: 'deleted' as const };
    });
  }

  // ---------------------------------------------------------------------------------------------
  // Reads

  async getDocument(docId: string): Promise<Record<string, unknown> | null> {
    if (!isUuid(docId)) return null;
    const r = await this.db.query<Record<string, unknown>>(`SELECT ${DOC_COLUMNS} FROM documents WHERE doc_id = $1`, [
      docId,
    ]);
    if (!r.rows[0]) return null;
    const files = await this.db.query<{ file_sha256: string }>(
      'SELECT file_sha256 FROM document_files WHERE doc_id = $1',
      [docId],
    );
    return { ...isoRow(r.rows[0]), file_ids: files.rows.map((f) => f.file_sha256) };
  }

  /** Active documents, newest first. */
  async listDocuments(f: DocumentFilters): Promise<{ documents: Record<string, unknown>[]; total: number }> {
    const where = ['is_active_version'];
    const params: unknown[] = [];
    if (f.source_type !== undefined) {
      params.push(f.source_type);
      where.push(`source_type = $${params.length}`);
    }
    if (f.has_attachments !== undefined) {
      params.push(f.has_attachments);
      where.push(`has_attachments = $${params.length}`);
    }
    if (f.thread_id !== undefined) {
      params.push(f.thread_id);
      where.push(`thread_id = $${params.length}`);
    }
    const w = where.join(' AND ');
    const total = await this.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE ${w}`, params);
    const rows = await this.db.query<Record<string, unknown>>(
      `SELECT doc_id, metadata, text, title, source_type, external_id, version_number, content_timestamp,
              has_attachments, status
         FROM documents WHERE ${w}
        ORDER BY content_timestamp DESC, doc_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
      [...params, f.limit, f.offset],
    );
    return { documents: rows.rows.map(isoRow), total: total.rows[0].n };
  }

  async chunkCounts(docIds: string[]): Promise<Map<string, ChunkCounts>> {
    const out = new Map<string, ChunkCounts>();
    if (docIds.length === 0) return out;
    const r = await this.db.query<ChunkCounts & { doc_id: string }>(
      `SELECT cd.doc_id, count(*)::int AS total_chunks,
              count(*) FILTER (WHERE c.embedding_status = 'embedded')::int AS embedded_chunks,
              count(*) FILTER (WHERE c.embedding_status IN ('pending', 'processing'))::int AS pending_chunks,
              count(*) FILTER (WHERE c.embedding_status = 'failed')::int AS failed_chunks
         FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
        WHERE cd.doc_id = ANY($1::uuid[]) GROUP BY cd.doc_id`,
      [docIds],
    );
    for (const row of r.rows) out.set(row.doc_id, row);
    return out;
  }

  /** Per-document status with chunk counts (spec 4.6 GET …/documents/{id}/status). */
  async documentStatus(docId: string): Promise<({ doc_id: string; status: string } & ChunkCounts) | null> {
    if (!isUuid(docId)) return null;
    const r = await this.db.query<{ status: string }>('SELECT status FROM documents WHERE doc_id = $1', [docId]);
    if (!r.rows[0]) return null;
    const counts = (await this.chunkCounts([docId])).get(docId) ?? zeroCounts();
    return { doc_id: docId, status: r.rows[0].status, ...counts };
  }

  /**
   * Status of a submission, or of a batch when the id is a batch id (spec 4.1 rule 4): the
   * batch view lists every submission of the batch with its document's progress.
   */
  async submissionStatus(id: string): Promise<Record<string, any> | null> {
    if (!isUuid(id)) return null;
    const sub = await this.db.query<Record<string, any>>(
      `SELECT s.submission_id, s.status, s.result_doc_id, s.error_details, d.status AS document_status
         FROM ingest_submissions s LEFT JOIN documents d ON d.doc_id = s.result_doc_id WHERE s.submission_id = $1`,
      [id],
    );
    if (sub.rows[0]) {
      const s = sub.rows[0];
      const counts = s.result_doc_id ? ((await this.chunkCounts([s.result_doc_id])).get(s.result_doc_id) ?? zeroCounts()) : zeroCounts();
      return {
        submission_id: s.submission_id,
        status: s.status,
        document_status: s.document_status ?? null,
        doc_id: s.result_doc_id ?? null,
        total_chunks: counts.total_chunks,
        embedded_chunks: counts.embedded_chunks,
        pending_chunks: counts.pending_chunks,
        error: s.error_details ?? null,
      };
    }
    const batch = await this.db.query<Record<string, any>>('SELECT * FROM ingest_batches WHERE batch_id = $1', [id]);
    const b = batch.rows[0];
    if (!b) return null;
    const subs = await this.db.query<Record<string, any>>(
      `SELECT s.submission_id, s.status, s.result_doc_id, d.status AS document_status
         FROM ingest_submissions s LEFT JOIN documents d ON d.doc_id = s.result_doc_id
        WHERE s.batch_id = $1 ORDER BY s.created_at, s.submission_id`,
      [id],
    );
    const counts = await this.chunkCounts(subs.rows.map((s) => s.result_doc_id).filter(Boolean));
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
      };
    });
    const sum = (k: 'total_chunks' | 'embedded_chunks' | 'pending_chunks') => perSub.reduce((a, s) => a + s[k], 0);
    return {
      submission_id: b.batch_id,
      status: b.status,
      document_status: null,
      doc_id: null,
      total_chunks: sum('total_chunks'),
      embedded_chunks: sum('embedded_chunks'),
      pending_chunks: sum('pending_chunks'),
      error: b.error_details ?? null,
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
}

function zeroCounts(): ChunkCounts {
  return { total_chunks: 0, embedded_chunks: 0, pending_chunks: 0, failed_chunks: 0 };
}

function metadataFlag(metadata: Record<string, unknown>): boolean {
  return metadata.has_attachments === true || (typeof metadata.attachment_count === 'number' && metadata.attachment_count > 0);
}

function metadataCount(metadata: Record<string, unknown>): number | undefined {
  const n = metadata.attachment_count;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 ? n : undefined;
}

function validUuidOrNull(v: unknown): string | null {
  return isUuid(v) ? v : null;
}

/** Relationship ids that are not UUIDs are dropped (spec-notes A2.8). */
function uuidList(v: unknown): string[] {
  return Array.isArray(v) ? v.filter(isUuid) : [];
}

function toItemError(err: unknown): { code: string; message: string; status: number } {
  if (err instanceof CatalogError) return { code: err.code, message: err.message, status: err.status };
  const e = err as { code?: string; message?: string };
  // PostgreSQL constraint violations are the client's data, not a server fault.
  if (e.code && /^23/.test(e.code)) {
    return { code: 'INGEST.CONSTRAINT_VIOLATION', message: e.message ?? 'constraint violation', status: 422 };
  }
  return { code: 'INGEST.BATCH_UNEXPECTED_ERROR', message: 'unexpected error while cataloging', status: 500 };
}

