/**
 * Everything the web UI's document view shows in one read: the document, its linked people (with
 * names), its versions and the neighbouring messages of its thread. Read-only, parameterised.
 */
import { originalOf } from './originals.ts';
import type { Queryable } from '../db/types.ts';
import type { DocumentViewResponseT, StoredDocumentT } from '../schemas/documents.ts';
import { isUuid } from '../util/ids.ts';
import { attachmentsOf, messagesOfAttachments } from './attachments.ts';
import { isoRow } from './reads.ts';
import { relatedNotes } from './related-notes.ts';
import { chatMessageOfFile, linkChatMedia } from './chat-media.ts';

/** Messages shown on each side of the document in its thread. */
export const THREAD_NEIGHBOURS = 5;
const EXCERPT_CHARS = 200;

/** GET /v1/doc/{doc_id}/view's answer (the schema describes every part); the document is the stored record. */
export type DocumentView = DocumentViewResponseT;

function excerpt(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS - 1)}…` : flat;
}

export async function documentView(db: Queryable, docId: string, citedChunkId?: string): Promise<DocumentView | null> {
  if (!isUuid(docId)) return null;
  const d = await db.query<Record<string, unknown>>(
    `SELECT doc_id, external_id, source_type, source_provider, source_account_id, version_number, previous_version_id,
            is_active_version, superseded_at, title, text, mime_type, canonical_uri, content_timestamp,
            content_timestamp_type, people, thread_id, has_attachments, attachment_count, metadata, status, ingested_at,
            has_due_date, due_date, is_completed, completed_at
       FROM documents WHERE doc_id = $1 AND deleted_at IS NULL`,
    [docId],
  );
  const doc = d.rows[0];
  if (!doc) return null;

  // Linked people, merges followed to the surviving person.
  const people = await db.query<{ person_id: string; display_name: string; role: string }>(
    `SELECT DISTINCT coalesce(m.person_id, p.person_id)::text AS person_id, coalesce(m.display_name, p.display_name) AS display_name, dp.role
       FROM document_people dp
       JOIN people p ON p.person_id = dp.person_id
       LEFT JOIN people m ON m.person_id = p.merged_into
      WHERE dp.doc_id = $1
      ORDER BY dp.role, display_name`,
    [docId],
  );

  const versions = await db.query<{ doc_id: string; version_number: number; is_active_version: boolean; ingested_at: Date }>(
    `SELECT v.doc_id::text AS doc_id, v.version_number, v.is_active_version, v.ingested_at
       FROM documents v
      WHERE v.source_type = $1 AND coalesce(v.source_provider, '') = coalesce($2, '')
        AND coalesce(v.source_account_id, '') = coalesce($3, '') AND v.external_id = $4 AND v.deleted_at IS NULL
      ORDER BY v.version_number DESC`,
    [doc.source_type, doc.source_provider, doc.source_account_id, doc.external_id],
  );

  let cited: DocumentView['cited'] = null;
  if (citedChunkId && isUuid(citedChunkId)) {
    const c = await db.query<{ chunk_id: string; start_char: number; end_char: number }>(
      `SELECT chunk_id::text AS chunk_id, start_char, end_char FROM chunk_documents
        WHERE doc_id = $1 AND chunk_id = $2 ORDER BY ordinal LIMIT 1`,
      [docId, citedChunkId],
    );
    cited = c.rows[0] ?? null;
  }

  let thread: DocumentView['thread'] = null;
  if (doc.thread_id) {
    const t = await db.query<{ title: string | null; total: number }>(
      `SELECT t.title, (SELECT count(*)::int FROM documents WHERE thread_id = t.thread_id AND is_active_version) AS total
         FROM threads t WHERE t.thread_id = $1`,
      [doc.thread_id],
    );
    // The neighbours on each side by content time (ties broken by id), and the document itself.
    const rows = await db.query<{ doc_id: string; title: string | null; text: string; content_timestamp: Date; sender: string | null }>(
      `WITH around AS (
         (SELECT doc_id, content_timestamp FROM documents
           WHERE thread_id = $1 AND is_active_version AND (content_timestamp, doc_id) < ($2::timestamptz, $3::uuid)
           ORDER BY content_timestamp DESC, doc_id DESC LIMIT $4)
         UNION ALL
         (SELECT doc_id, content_timestamp FROM documents
           WHERE thread_id = $1 AND is_active_version AND (content_timestamp, doc_id) > ($2::timestamptz, $3::uuid)
           ORDER BY content_timestamp, doc_id LIMIT $4)
       )
       SELECT d.doc_id::text AS doc_id, d.title,
              -- A message stored whole (issue 40) is excerpted by its own words (the snippet), not its quote.
              coalesce(CASE WHEN d.metadata ? 'body_parts' AND jsonb_typeof(d.metadata->'snippet') = 'string' THEN d.metadata->>'snippet' END,
                       left(d.text, 400)) AS text, d.content_timestamp,
              coalesce(
                (SELECT p.display_name FROM document_people dp JOIN people p ON p.person_id = dp.person_id
                  WHERE dp.doc_id = d.doc_id AND dp.role = 'sender' LIMIT 1),
                (SELECT coalesce(pe->>'display_name', pe->>'identifier')
                   FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) pe
                  WHERE pe->>'role' = 'sender' LIMIT 1)) AS sender
         FROM documents d
        WHERE d.doc_id IN (SELECT doc_id FROM around) OR d.doc_id = $3::uuid
        ORDER BY d.content_timestamp, d.doc_id`,
      [doc.thread_id, new Date(doc.content_timestamp as string).toISOString(), docId, THREAD_NEIGHBOURS],
    );
    thread = {
      thread_id: String(doc.thread_id),
      title: t.rows[0]?.title ?? null,
      total: t.rows[0]?.total ?? rows.rows.length,
      messages: rows.rows.map((r) => ({
        doc_id: r.doc_id,
        title: r.title,
        excerpt: excerpt(r.text),
        content_timestamp: new Date(r.content_timestamp).toISOString(),
        sender: r.sender,
      })),
    };
  }

  const attachments = await attachmentsOf(db, { doc_id: docId, source_type: String(doc.source_type), metadata: doc.metadata });
  await linkChatMedia(db, { source_type: String(doc.source_type), metadata: doc.metadata }, attachments);
  const attachedTo = (await messagesOfAttachments(db, [docId])).get(docId) ?? (await chatMessageOfFile(db, { source_type: String(doc.source_type), metadata: doc.metadata }));
  const original = await originalOf(db, docId);
  const related = await relatedNotes(db, { doc_id: docId, source_type: String(doc.source_type), source_provider: doc.source_provider, metadata: doc.metadata });

  return {
    document: isoRow(doc) as StoredDocumentT,
    people: people.rows,
    attachments,
    has_attachments: attachments.some((a) => a.role === 'attachment'),
    attached_to: attachedTo,
    related,
    original: original ? { url: `/v1/documents/${docId}/original`, sha256: original.file_sha256, size_bytes: original.size_bytes } : null,
    versions: versions.rows.map((v) => ({ ...v, ingested_at: new Date(v.ingested_at).toISOString() })),
    cited,
    thread,
  };
}
