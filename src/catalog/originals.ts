/**
 * The originals of collected messages (issue 40 item 1): each message's raw RFC 5322 bytes, stored once by
 * SHA-256 in the object store and linked to the document version built from them (migration 170).
 *
 * An original is an object like an attachment: a `files` row names it (enrichment `skipped`: there is
 * nothing to extract, the message's text is the document), so a backup carries it, `GET /v1/files/{sha}`
 * serves it, and gc collects it once neither `document_files` nor `document_originals` names it. The same
 * message read from a Maildir and from an mbox is the same bytes, so it is one object.
 */
import type { Queryable } from '../db/types.ts';
import type { ErrorCode } from '../util/error-codes.ts';
import { isUuid } from '../util/ids.ts';
import { ORIGINAL_MIME_TYPE } from '../schemas/originals.ts';

/** The kinds of original kept: the message as sent (an .emlx file's message part, without Apple's wrapper). */
export const ORIGINAL_KINDS = ['rfc822'] as const;
export type OriginalKind = (typeof ORIGINAL_KINDS)[number];

/** Source types whose documents are built from a message and so can have an original. */
export const ORIGINAL_SOURCE_TYPES = ['email', 'email_local'] as const;

// The download's type, which the API states (GET /v1/documents/{doc_id}/original): declared in src/schemas.
export { ORIGINAL_MIME_TYPE };

/** The largest original kept: the collectors' largest message (MAX_EMAIL_FILE_BYTES, src/mail/parse.ts). */
export const ORIGINAL_MAX_BYTES = 64 * 1024 * 1024;

export interface OriginalToLink {
  /** The document version (a `documents` row) built from these bytes. */
  docId: string;
  kind: OriginalKind;
  /** The object written for it (the object store's put result: files sit above the catalog, so its shape here). */
  stored: { sha256: string; objectKey: string; sizeBytes: number; existed: boolean };
}

export type LinkOutcome =
  | { ok: true; sha256: string; sizeBytes: number; /** This document version already had this original. */ duplicate: boolean }
  | { ok: false; status: 404 | 422; code: ErrorCode; message: string };

/**
 * Links stored objects to their document versions, in one transaction: the `files` rows (new ones
 * `skipped`), then the links. A document that is not there (forgotten meanwhile, a wrong id) or not a
 * message gets its own refusal; the caller removes the objects nothing names then.
 */
export async function linkOriginals(db: Queryable, backend: string, items: OriginalToLink[]): Promise<LinkOutcome[]> {
  const ids = [...new Set(items.map((i) => i.docId).filter(isUuid))];
  const docs = new Map(
    (
      await db.query<{ doc_id: string; source_type: string }>('SELECT doc_id, source_type FROM documents WHERE doc_id = ANY($1::uuid[])', [ids])
    ).rows.map((r) => [r.doc_id, r.source_type]),
  );
  const outcomes: LinkOutcome[] = items.map((it) => {
    if (!isUuid(it.docId)) return { ok: false, status: 422, code: 'ORIGINAL.INVALID_DOC_ID', message: 'doc_id must be a UUID' };
    const type = docs.get(it.docId);
    if (type === undefined) return { ok: false, status: 404, code: 'DOCUMENT.NOT_FOUND', message: 'Document not found' };
    if (!(ORIGINAL_SOURCE_TYPES as readonly string[]).includes(type)) {
      return { ok: false, status: 422, code: 'ORIGINAL.NOT_A_MESSAGE', message: `an original is kept for messages (${ORIGINAL_SOURCE_TYPES.join(', ')}), not for ${type} documents` };
    }
    return { ok: true, sha256: it.stored.sha256, sizeBytes: it.stored.sizeBytes, duplicate: false };
  });
  const good = items.filter((_, i) => outcomes[i].ok);
  if (good.length === 0) return outcomes;
  const files = new Map(good.map((g) => [g.stored.sha256, g.stored]));
  await db.query(
    `INSERT INTO files (file_sha256, object_key, storage_backend, filename, mime_type, size_bytes, enrichment_status)
     SELECT sha, key, $3, NULL, $4, size, 'skipped' FROM unnest($1::text[], $2::text[], $5::bigint[]) AS x(sha, key, size)
     ON CONFLICT (file_sha256) DO NOTHING`,
    [[...files.keys()], [...files.values()].map((f) => f.objectKey), backend, ORIGINAL_MIME_TYPE, [...files.values()].map((f) => f.sizeBytes)],
  );
  const inserted = await db.query<{ doc_id: string; file_sha256: string }>(
    `INSERT INTO document_originals (doc_id, file_sha256, kind, size_bytes)
     SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::bigint[])
     ON CONFLICT DO NOTHING RETURNING doc_id, file_sha256`,
    [good.map((g) => g.docId), good.map((g) => g.stored.sha256), good.map((g) => g.kind), good.map((g) => g.stored.sizeBytes)],
  );
  const fresh = new Set(inserted.rows.map((r) => `${r.doc_id} ${r.file_sha256}`));
  items.forEach((it, i) => {
    const o = outcomes[i];
    if (o.ok) o.duplicate = !fresh.has(`${it.docId} ${it.stored.sha256}`);
  });
  return outcomes;
}

export interface StoredOriginal {
  /** The version the original is linked to (the asked one, else the newest of the document that has one). */
  doc_id: string;
  file_sha256: string;
  object_key: string;
  size_bytes: number;
  kind: OriginalKind;
}

/**
 * The original of a document: the one linked to this version, else the newest linked to another version of
 * the same document (a version made by an edit, or stored before originals were kept, has none of its own).
 */
export async function originalOf(db: Queryable, docId: string): Promise<StoredOriginal | null> {
  if (!isUuid(docId)) return null;
  const r = await db.query<StoredOriginal & { size_bytes: string | number }>(
    `SELECT o.doc_id, o.file_sha256, f.object_key, f.size_bytes, o.kind
       FROM documents d
       JOIN documents v ON v.source_type = d.source_type AND coalesce(v.source_provider, '') = coalesce(d.source_provider, '')
        AND coalesce(v.source_account_id, '') = coalesce(d.source_account_id, '') AND v.external_id = d.external_id
       JOIN document_originals o ON o.doc_id = v.doc_id
       JOIN files f ON f.file_sha256 = o.file_sha256
      WHERE d.doc_id = $1
      ORDER BY (v.doc_id = d.doc_id) DESC, v.version_number DESC, o.created_at DESC
      LIMIT 1`,
    [docId],
  );
  const row = r.rows[0];
  return row ? { ...row, size_bytes: Number(row.size_bytes) } : null;
}

/** The files the originals of these document versions name (forget erases the versions, then these when nothing else names them). */
export async function originalFilesOf(db: Queryable, docIds: string[]): Promise<string[]> {
  if (docIds.length === 0) return [];
  const r = await db.query<{ file_sha256: string }>('SELECT DISTINCT file_sha256 FROM document_originals WHERE doc_id = ANY($1::uuid[])', [docIds]);
  return r.rows.map((x) => x.file_sha256);
}

/** SQL condition "no original names file row `alias`", for the statements that delete unused files (forget, gc). */
export function notAnOriginal(alias: string): string {
  return `NOT EXISTS (SELECT 1 FROM document_originals o WHERE o.file_sha256 = ${alias}.file_sha256)`;
}

/** Active email documents that have no original: stored before memex kept them, their text possibly cut. */
export async function emailWithoutOriginals(db: Queryable): Promise<number> {
  const r = await db.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM documents d
      WHERE d.is_active_version AND d.source_type = ANY($1::text[])
        AND NOT EXISTS (SELECT 1 FROM document_originals o WHERE o.doc_id = d.doc_id)`,
    [[...ORIGINAL_SOURCE_TYPES]],
  );
  return r.rows[0].n;
}
