/**
 * Email attachments and their message. The email collectors send a message as one document
 * (`metadata.message_id`) and upload each attachment as a file document of its own
 * (POST /v1/ingest/file with `meta.source` "email" or "email_local" and the message's `message_id`, kept
 * as `metadata.email.message_id`). The two meet by Message-ID, whichever arrives first:
 *
 * - the attachment takes the message's people (`people[]` and the person links), so the person filter,
 *   forget, the block list and the identifier rule reach it as they reach the message;
 * - the message counts it (`has_attachments`, `attachment_count`) and its document view lists it
 *   (`attachments`, src/schemas/documents.ts `DocumentAttachment`); the attachment's view names its
 *   message (`attached_to`);
 * - forgetting the message erases its attachments (src/forget/forget.ts).
 *
 * A Message-ID is compared without surrounding blanks and angle brackets (`<a@b>` is `a@b`), through
 * the md5 expression indexes of migration 115; every SQL expression here is the indexed one.
 */
import crypto from 'node:crypto';
import type { Queryable } from '../db/types.ts';
import { isEmailAttachmentSql, isEmailSql } from '../db/document-predicates.ts';
import { linkPeople } from '../identity/linking.ts';
import type { AttachedToT, DocumentAttachmentT } from '../schemas/documents.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import type { AttachmentEntry, CatalogDocumentRequest } from './types.ts';
import { normaliseOptionalMimeType } from '../util/mime-type.ts';

const EMAIL_TYPES = ['email', 'email_local'];
/** The Message-ID of a message, without blanks and angle brackets. */
const messageKeySql = (a: string) => `btrim(${a}.metadata->>'message_id', E' \\t\\r\\n<>')`;
/** The Message-ID an attachment belongs to. */
const attachmentKeySql = (a: string) => `btrim(${a}.metadata->'email'->>'message_id', E' \\t\\r\\n<>')`;
/** A message: an email document with a Message-ID that is not itself an attachment. */
const isMessage = (a: string) => `${isEmailSql(a)} AND ${a}.metadata->'email'->>'message_id' IS NULL`;

/** `<id@host>` -> `id@host`: the Message-ID without surrounding blanks and angle brackets (btrim in SQL). */
export function messageKey(raw: unknown): string | null {
  if (typeof raw !== 'string') return null;
  const key = raw.replace(/^[ \t\r\n<>]+|[ \t\r\n<>]+$/g, '');
  return key === '' ? null : key;
}

const md5 = (s: string) => crypto.createHash('md5').update(s, 'utf8').digest('hex');

export interface EmailKeys {
  /** The Message-ID of a message document. */
  message: string | null;
  /** The Message-ID of the message an attachment document belongs to. */
  attachment: string | null;
}

/** Which side of the link a document is on, from its source type and metadata. */
export function emailKeysOf(doc: { source_type: string; metadata?: Record<string, unknown> | null }): EmailKeys {
  if (!EMAIL_TYPES.includes(doc.source_type) || !doc.metadata) return { message: null, attachment: null };
  const email = doc.metadata.email;
  const attachment = email && typeof email === 'object' ? messageKey((email as Record<string, unknown>).message_id) : null;
  return { message: attachment ? null : messageKey(doc.metadata.message_id), attachment };
}

const personKey = (p: DocumentPersonT) => `${p.identifier.trim().toLowerCase()}\u0000${p.role ?? 'participant'}`;

/** The people of the active messages with these Message-IDs (every copy of a message, first occurrence wins). */
export async function messagePeople(tx: Queryable, keys: string[]): Promise<Map<string, DocumentPersonT[]>> {
  const out = new Map<string, DocumentPersonT[]>();
  const wanted = [...new Set(keys)];
  if (wanted.length === 0) return out;
  const r = await tx.query<{ key: string; people: unknown }>(
    `SELECT ${messageKeySql('m')} AS key, m.people FROM documents m
      WHERE ${isMessage('m')} AND md5(${messageKeySql('m')}) = ANY($1::text[]) AND m.is_active_version
      ORDER BY m.content_timestamp, m.doc_id`,
    [wanted.map(md5)],
  );
  const seen = new Map<string, Set<string>>();
  for (const row of r.rows) {
    if (!wanted.includes(row.key) || !Array.isArray(row.people)) continue;
    const list = out.get(row.key) ?? [];
    const keys = seen.get(row.key) ?? new Set<string>();
    for (const p of row.people as DocumentPersonT[]) {
      if (!p || typeof p.identifier !== 'string' || keys.has(personKey(p))) continue;
      keys.add(personKey(p));
      list.push(p);
    }
    out.set(row.key, list);
    seen.set(row.key, keys);
  }
  return out;
}

/**
 * Attachments about to be stored take the people of their message when it is already there (before the
 * block list judges them: an attachment of a blocked sender's message is skipped like the message).
 */
export async function withMessagePeople<T extends { source_type: string; metadata?: Record<string, unknown> | null; people?: DocumentPersonT[] | null }>(
  tx: Queryable,
  docs: T[],
): Promise<T[]> {
  const keys = docs.map((d) => (d.people?.length ? null : emailKeysOf(d).attachment));
  if (keys.every((k) => k === null)) return docs;
  const people = await messagePeople(tx, keys.filter((k): k is string => k !== null));
  return docs.map((d, i) => {
    const found = keys[i] ? people.get(keys[i]!) : undefined;
    return found?.length ? { ...d, people: found } : d;
  });
}

/**
 * After documents were stored: attachments that arrived before their message take its people now, and
 * the messages count their attachments. `docs` are the stored documents (messages and attachments).
 */
export async function linkAttachments(
  tx: Queryable,
  docs: { source_type: string; metadata?: Record<string, unknown> | null }[],
  region: string,
): Promise<void> {
  const messageKeys = new Set<string>();
  const facetKeys = new Set<string>();
  for (const d of docs) {
    const k = emailKeysOf(d);
    if (k.message) messageKeys.add(k.message);
    if (k.attachment) facetKeys.add(k.attachment);
  }
  if (messageKeys.size > 0) {
    const waiting = await tx.query<{ doc_id: string; key: string; people: unknown; source_type: string }>(
      `SELECT a.doc_id, ${attachmentKeySql('a')} AS key, a.people, a.source_type FROM documents a
        WHERE ${isEmailSql('a')} AND md5(${attachmentKeySql('a')}) = ANY($1::text[]) AND a.is_active_version`,
      [[...messageKeys].map(md5)],
    );
    const rows = waiting.rows.filter((w) => messageKeys.has(w.key));
    if (rows.length > 0) {
      for (const w of rows) facetKeys.add(w.key);
      const people = await messagePeople(tx, rows.map((w) => w.key));
      const changed = rows.filter((w) => JSON.stringify(w.people ?? []) !== JSON.stringify(people.get(w.key) ?? []));
      if (changed.length > 0) {
        const ids = changed.map((w) => w.doc_id);
        await tx.query(
          `UPDATE documents d SET people = x.people::jsonb, updated_at = now()
             FROM unnest($1::uuid[], $2::text[]) AS x(doc_id, people) WHERE d.doc_id = x.doc_id`,
          [ids, changed.map((w) => JSON.stringify(people.get(w.key) ?? []))],
        );
        await tx.query('DELETE FROM document_people WHERE doc_id = ANY($1::uuid[])', [ids]);
        const entries = changed.map((w) => ({ docId: w.doc_id, people: people.get(w.key) ?? [], source: w.source_type }));
        await linkPeople(tx, entries.filter((e) => e.people.length > 0), region);
      }
    }
  }
  await refreshMessageFacets(tx, [...facetKeys]);
}

/**
 * `has_attachments` / `attachment_count` of the active messages with these Message-IDs: what their own
 * metadata lists, or the attachments uploaded for them when there are more.
 */
export async function refreshMessageFacets(tx: Queryable, keys: string[]): Promise<void> {
  if (keys.length === 0) return;
  const r = await tx.query<{ doc_id: string; key: string; metadata: Record<string, unknown>; has_attachments: boolean; attachment_count: number; linked: number }>(
    `SELECT m.doc_id, ${messageKeySql('m')} AS key, m.metadata, m.has_attachments, m.attachment_count,
            (SELECT count(*)::int FROM documents a
              WHERE ${isEmailSql('a')} AND md5(${attachmentKeySql('a')}) = md5(${messageKeySql('m')})
                AND ${attachmentKeySql('a')} = ${messageKeySql('m')} AND a.is_active_version) AS linked
       FROM documents m
      WHERE ${isMessage('m')} AND md5(${messageKeySql('m')}) = ANY($1::text[]) AND m.is_active_version`,
    [[...new Set(keys)].map(md5)],
  );
  const updates = r.rows.flatMap((m) => {
    const own = attachmentColumns(m.metadata ?? {});
    const has = own.has_attachments || m.linked > 0;
    const count = Math.max(own.attachment_count, m.linked);
    return has === m.has_attachments && count === m.attachment_count ? [] : [{ id: m.doc_id, has, count }];
  });
  if (updates.length === 0) return;
  await tx.query(
    `UPDATE documents d SET has_attachments = x.has, attachment_count = x.n, updated_at = now()
       FROM unnest($1::uuid[], $2::boolean[], $3::int[]) AS x(doc_id, has, n) WHERE d.doc_id = x.doc_id`,
    [updates.map((u) => u.id), updates.map((u) => u.has), updates.map((u) => u.count)],
  );
}

/**
 * The attachments a forget of these documents takes along: every version of the attachments of erased
 * messages that no other message with the same Message-ID keeps. Also returns the Message-IDs of the
 * erased email (messages and attachments), for the block list.
 */
export async function attachmentsOfErased(tx: Queryable, docIds: string[]): Promise<{ docIds: string[]; keys: string[] }> {
  if (docIds.length === 0) return { docIds: [], keys: [] };
  const erased = await tx.query<{ message: string | null; attachment: string | null }>(
    `SELECT DISTINCT CASE WHEN ${isMessage('d')} THEN ${messageKeySql('d')} END AS message,
            CASE WHEN ${isEmailSql('d')} THEN ${attachmentKeySql('d')} END AS attachment
       FROM documents d WHERE d.doc_id = ANY($1::uuid[])`,
    [docIds],
  );
  const messages = [...new Set(erased.rows.map((r) => r.message).filter((k): k is string => !!k))];
  const keys = new Set([...messages, ...erased.rows.map((r) => r.attachment).filter((k): k is string => !!k)]);
  return { docIds: await attachmentsWithoutMessage(tx, messages, docIds), keys: [...keys] };
}

/**
 * Every version of the attachments uploaded with these Message-IDs whose message is not (or, with
 * `except`, no longer) there.
 */
export async function attachmentsWithoutMessage(tx: Queryable, keys: string[], except: string[] = []): Promise<string[]> {
  if (keys.length === 0) return [];
  const kept = await tx.query<{ key: string }>(
    `SELECT DISTINCT ${messageKeySql('m')} AS key FROM documents m
      WHERE ${isMessage('m')} AND md5(${messageKeySql('m')}) = ANY($1::text[]) AND NOT m.doc_id = ANY($2::uuid[])`,
    [keys.map(md5), except],
  );
  const keptKeys = new Set(kept.rows.map((r) => r.key));
  const orphaned = new Set(keys.filter((k) => !keptKeys.has(k)));
  if (orphaned.size === 0) return [];
  const attachments = await tx.query<{ doc_id: string; key: string }>(
    `SELECT a.doc_id, ${attachmentKeySql('a')} AS key FROM documents a
      WHERE ${isEmailSql('a')} AND md5(${attachmentKeySql('a')}) = ANY($1::text[])`,
    [[...orphaned].map(md5)],
  );
  return attachments.rows.filter((a) => orphaned.has(a.key)).map((a) => a.doc_id);
}

/**
 * The message each of these attachment documents belongs to (the earliest active copy when several
 * sources hold it); documents that are no attachment, or whose message is not there, are absent.
 */
export async function messagesOfAttachments(db: Queryable, docIds: string[]): Promise<Map<string, AttachedToT>> {
  const out = new Map<string, AttachedToT>();
  if (docIds.length === 0) return out;
  const r = await db.query<{ attachment_id: string; doc_id: string; title: string | null; content_timestamp: Date | string }>(
    `SELECT a.doc_id::text AS attachment_id, m.doc_id::text AS doc_id, m.title, m.content_timestamp
       FROM documents a
       JOIN LATERAL (
         SELECT m.doc_id, m.title, m.content_timestamp FROM documents m
          WHERE ${isMessage('m')} AND md5(${messageKeySql('m')}) = md5(${attachmentKeySql('a')})
            AND ${messageKeySql('m')} = ${attachmentKeySql('a')} AND m.is_active_version
          ORDER BY m.content_timestamp, m.doc_id LIMIT 1) m ON true
      WHERE a.doc_id = ANY($1::uuid[]) AND ${isEmailAttachmentSql('a')}`,
    [docIds],
  );
  for (const row of r.rows) {
    out.set(row.attachment_id, { doc_id: row.doc_id, title: row.title, content_timestamp: new Date(row.content_timestamp).toISOString() });
  }
  return out;
}

type Json = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const int = (v: unknown): number | null => (typeof v === 'number' && Number.isSafeInteger(v) ? v : null);
const obj = (v: unknown): Json | null => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : null);

/** One metadata.attachments entry in the view's shape (the stored file and the document filled in later). */
function fromEntry(e: Json, i: number): DocumentAttachmentT {
  const ocr = typeof e.ocr === 'string' ? { text: e.ocr } : obj(e.ocr);
  return {
    index: int(e.index) ?? i,
    filename: str(e.filename),
    // Stored before types were normalised at ingest: read the same way (src/util/mime-type.ts).
    mime_type: normaliseOptionalMimeType(str(e.mime_type)),
    size_bytes: int(e.size_bytes),
    kind: str(e.kind),
    role: str(e.role) ?? 'attachment',
    // Email collectors put the hash at the top of the entry, file documents under `file`.
    sha256: str(e.sha256) ?? str(obj(e.file)?.sha256),
    stored: false,
    doc_id: null,
    caption: str(e.caption),
    ocr: ocr && typeof ocr.text === 'string' ? { text: ocr.text, truncated: ocr.truncated === true } : null,
  };
}

/**
 * The attachments a document view lists: the entries of its own `metadata.attachments` (a file
 * document's entry is its own file, `doc_id` itself), and for a message the attachment documents
 * uploaded with its Message-ID, matched to its entries by SHA-256 (else file name); uploads the message
 * does not list come last with `index` null. `stored` says whether the bytes can be downloaded.
 */
export async function attachmentsOf(db: Queryable, doc: { doc_id: string; source_type: string; metadata: unknown }): Promise<DocumentAttachmentT[]> {
  const metadata = obj(doc.metadata) ?? {};
  const list = (Array.isArray(metadata.attachments) ? metadata.attachments : []).flatMap((e, i) => (obj(e) ? [fromEntry(obj(e)!, i)] : []));
  const keys = emailKeysOf({ source_type: doc.source_type, metadata });
  // A file document (an upload): its entry is this document's own file.
  const ownFile = str(obj(metadata.file)?.sha256);
  for (const a of list) if (ownFile !== null && a.sha256 === ownFile) a.doc_id = doc.doc_id;
  if (keys.message) {
    const uploads = await db.query<{ doc_id: string; title: string | null; metadata: Json }>(
      `SELECT a.doc_id::text AS doc_id, a.title, a.metadata FROM documents a
        WHERE ${isEmailSql('a')} AND md5(${attachmentKeySql('a')}) = $1 AND ${attachmentKeySql('a')} = $2 AND a.is_active_version
        ORDER BY a.ingested_at, a.doc_id`,
      [md5(keys.message), keys.message],
    );
    for (const u of uploads.rows) {
      const own = Array.isArray(u.metadata?.attachments) && obj(u.metadata.attachments[0]) ? fromEntry(obj(u.metadata.attachments[0])!, 0) : null;
      const sha = str(obj(u.metadata?.file)?.sha256) ?? own?.sha256 ?? null;
      const filename = own?.filename ?? u.title;
      const match =
        list.find((a) => a.doc_id === null && sha !== null && a.sha256 === sha) ??
        list.find((a) => a.doc_id === null && a.sha256 === null && filename !== null && a.filename === filename);
      if (match) {
        match.doc_id = u.doc_id;
        match.sha256 ??= sha;
        match.ocr ??= own?.ocr ?? null;
        match.caption ??= own?.caption ?? null;
      } else if (own) {
        list.push({ ...own, index: null, sha256: sha, doc_id: u.doc_id });
      }
    }
  }
  const shas = [...new Set(list.map((a) => a.sha256).filter((s): s is string => s !== null))];
  if (shas.length > 0) {
    const held = await db.query<{ file_sha256: string }>('SELECT file_sha256 FROM files WHERE file_sha256 = ANY($1::text[])', [shas]);
    const stored = new Set(held.rows.map((r) => r.file_sha256));
    for (const a of list) a.stored = a.sha256 !== null && stored.has(a.sha256);
  }
  return list;
}

function attachmentFacets(attachments: unknown): { has: boolean; count: number } | null {
  if (!Array.isArray(attachments)) return null;
  const count = attachments.filter(
    (a) => a && typeof a === 'object' && ((a as AttachmentEntry).role ?? 'attachment') === 'attachment',
  ).length;
  return { has: count > 0, count };
}

/** has_attachments / attachment_count: explicit overrides, else the attachment list, else metadata hints. */
export function attachmentColumns(
  metadata: Record<string, unknown>,
  overrides?: CatalogDocumentRequest['facet_overrides'],
): { has_attachments: boolean; attachment_count: number } {
  const facets = attachmentFacets(metadata.attachments);
  const hinted =
    typeof metadata.attachment_count === 'number' && Number.isInteger(metadata.attachment_count) && metadata.attachment_count >= 0
      ? (metadata.attachment_count as number)
      : undefined;
  const has =
    overrides?.has_attachments ?? facets?.has ?? (metadata.has_attachments === true || (hinted ?? 0) > 0);
  const count = overrides?.attachment_count ?? facets?.count ?? hinted ?? (has ? 1 : 0);
  return { has_attachments: has, attachment_count: count };
}
