/**
 * Media of imported chat messages and their message (issue 43: "media in the zip stored as attachments of their
 * message"). `memex import` uploads each file a message names (POST /v1/ingest/file, source `chatapp`, under the
 * path the message's `metadata.attachments[].source_ref.path` names, with the message's id as `chat_message`,
 * src/imports/chats/import.ts). A message's view names each file's own document (its text, OCR, versions), and a
 * file's view names its message (`attached_to`), as an email's attachments do (src/catalog/attachments.ts).
 */
import type { Queryable } from '../db/types.ts';
import type { AttachedToT, DocumentAttachmentT } from '../schemas/documents.ts';

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null);
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);

/** Fills `doc_id` (and OCR text) of a chat message's attachments with the documents of their uploaded files. */
export async function linkChatMedia(db: Queryable, doc: { source_type: string; metadata: unknown }, list: DocumentAttachmentT[]): Promise<void> {
  const entries = doc.source_type === 'chatapp' ? obj(doc.metadata)?.attachments : null;
  if (!Array.isArray(entries) || obj(obj(doc.metadata)?.file)) return; // not a message, or itself a file
  const paths = new Map<string, number>();
  entries.forEach((e, i) => {
    const p = str(obj(obj(e)?.source_ref)?.path);
    if (p) paths.set(`chatapp:${p}`, i);
  });
  if (paths.size === 0) return;
  const r = await db.query<{ doc_id: string; external_id: string; metadata: Json }>(
    `SELECT doc_id::text AS doc_id, external_id, metadata FROM documents
      WHERE source_type = 'chatapp' AND source_provider = 'chatapp' AND external_id = ANY($1::text[]) AND is_active_version AND deleted_at IS NULL`,
    [[...paths.keys()]],
  );
  for (const row of r.rows) {
    const i = paths.get(row.external_id)!;
    const entry = list.find((a) => a.index === i && a.doc_id === null);
    if (!entry) continue;
    entry.doc_id = row.doc_id;
    const own = obj(Array.isArray(row.metadata?.attachments) ? row.metadata.attachments[0] : null);
    const ocr = typeof own?.ocr === 'string' ? { text: own.ocr } : obj(own?.ocr);
    if (!entry.ocr && ocr && typeof ocr.text === 'string') entry.ocr = { text: ocr.text, truncated: ocr.truncated === true };
  }
}

/** The chat message a media file imported with it belongs to; null for any other document. */
export async function chatMessageOfFile(db: Queryable, doc: { source_type: string; metadata: unknown }): Promise<AttachedToT | null> {
  const extra = obj(obj(obj(doc.metadata)?.localfs)?.extra);
  const message = str(extra?.chat_message);
  const provider = str(extra?.chat_provider);
  if (doc.source_type !== 'chatapp' || !message || !provider) return null;
  const r = await db.query<{ doc_id: string; title: string | null; content_timestamp: Date | string }>(
    `SELECT doc_id::text AS doc_id, title, content_timestamp FROM documents
      WHERE source_type = 'chatapp' AND source_provider = $1 AND external_id = $2 AND is_active_version AND deleted_at IS NULL
      ORDER BY content_timestamp, doc_id LIMIT 1`,
    [provider, message],
  );
  const m = r.rows[0];
  return m ? { doc_id: m.doc_id, title: m.title, content_timestamp: new Date(m.content_timestamp).toISOString() } : null;
}
