/**
 * Reads of the catalog: a document by id and the filtered document listing (the internal API and
 * GET /v1/documents); timestamps as ISO strings the way every response carries them.
 */
import type { Queryable } from '../db/types.ts';
import { isUuid } from '../util/ids.ts';
import { filterSql, type SearchFilters } from './filters.ts';

/** The search filters (dates, person, source…: the same rules as GET /v1/search) and a page. */
export interface DocumentFilters extends SearchFilters {
  /** Documents this person (after merges, the surviving id) sent, received or took part in. */
  person_id?: string;
  limit: number;
  offset: number;
}

/** Every column of a document row (reads and the new-version copy in catalog.ts). */
export const DOC_COLUMNS = `doc_id, external_id, source_type, source_provider, source_account_id, version_number,
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

/** One document version (active or not) with its file ids; null for an unknown or malformed id. */
export async function getDocument(db: Queryable, docId: string): Promise<Record<string, unknown> | null> {
  if (!isUuid(docId)) return null;
  const r = await db.query<Record<string, unknown>>(`SELECT ${DOC_COLUMNS} FROM documents WHERE doc_id = $1`, [
    docId,
  ]);
  if (!r.rows[0]) return null;
  const files = await db.query<{ file_sha256: string }>(
    'SELECT file_sha256 FROM document_files WHERE doc_id = $1',
    [docId],
  );
  return { ...isoRow(r.rows[0]), file_ids: files.rows.map((f) => f.file_sha256) };
}

/** Active documents, newest first. */
export async function listDocuments(db: Queryable, f: DocumentFilters): Promise<{ documents: Record<string, unknown>[]; total: number }> {
  const params: unknown[] = [];
  let where = `d.is_active_version${filterSql(f, params)}`;
  if (f.person_id !== undefined) {
    params.push(f.person_id);
    where += ` AND EXISTS (SELECT 1 FROM document_people dp WHERE dp.doc_id = d.doc_id AND dp.person_id = $${params.length})`;
  }
  const total = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents d WHERE ${where}`, params);
  const rows = await db.query<Record<string, unknown>>(
    `SELECT doc_id, metadata, text, title, source_type, external_id, version_number, content_timestamp,
            has_attachments, status, thread_id
       FROM documents d WHERE ${where}
      ORDER BY content_timestamp DESC, doc_id LIMIT $${params.length + 1} OFFSET $${params.length + 2}`,
    [...params, f.limit, f.offset],
  );
  return { documents: rows.rows.map(isoRow), total: total.rows[0].n };
}
