/**
 * The way to leave memex: every active document (with its metadata and people), every thread and
 * every live person, as NDJSON, read in pages by id so memory stays flat on any archive.
 *
 * The first line is a header with the counts (so a client can show progress); then one object per
 * line, `{"type": "document" | "thread" | "person" | "tag_rule" | "saved_search", ...}`; documents and
 * threads carry their `tags` (name and origin).
 *
 * A message's original (its raw RFC 5322 bytes, src/catalog/originals.ts) is the one thing a person leaving
 * needs that no row holds: each document lists its `originals`, and with the object store at hand their bytes
 * come along in `data_base64` (one message at a time, so memory stays bounded by the largest message).
 */
import type { Database } from '../db/types.ts';
import { readObject, type ObjectStore } from '../files/object-store.ts';

export const EXPORT_FORMAT_VERSION = 1;
const PAGE = 500;

export interface ExportHeader {
  type: 'memex-export';
  format_version: number;
  exported_at: string;
  counts: { documents: number; threads: number; people: number };
}

/** Rows with uuid keys, in key order, a page at a time. */
async function* pages<T extends Record<string, unknown>>(db: Database, sql: string, key: string): AsyncIterable<T> {
  let after = '00000000-0000-0000-0000-000000000000';
  for (;;) {
    const r = await db.query<T>(sql, [after, PAGE]);
    for (const row of r.rows) yield row;
    if (r.rows.length < PAGE) return;
    after = String(r.rows[r.rows.length - 1][key]);
  }
}

const iso = (v: unknown) => (v instanceof Date ? v.toISOString() : v);
function plain(row: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(row)) out[k] = iso(v);
  return out;
}

export async function exportHeader(db: Database): Promise<ExportHeader> {
  const r = await db.query<{ documents: number; threads: number; people: number }>(
    `SELECT (SELECT count(*)::int FROM documents WHERE is_active_version) AS documents,
            (SELECT count(*)::int FROM threads) AS threads,
            (SELECT count(*)::int FROM people WHERE merged_into IS NULL AND NOT deleted) AS people`,
  );
  return { type: 'memex-export', format_version: EXPORT_FORMAT_VERSION, exported_at: new Date().toISOString(), counts: r.rows[0] };
}

/** The export as NDJSON lines (each ends with a newline). */
export interface ExportOptions {
  /** The object store: the originals' bytes are included (else only their hashes and sizes). */
  store?: ObjectStore;
  /** Largest object read into the export (FILE_MAX_BYTES). */
  maxObjectBytes?: number;
}

export async function* exportNdjson(db: Database, opts: ExportOptions = {}): AsyncIterable<string> {
  yield `${JSON.stringify(await exportHeader(db))}\n`;
  for await (const d of pages(
    db,
    `SELECT d.doc_id, d.source_type, d.source_provider, d.source_account_id, d.external_id, d.version_number, d.title,
            d.text, d.mime_type, d.canonical_uri, d.content_timestamp, d.content_timestamp_type, d.content_created_at,
            d.content_modified_at, d.thread_id, d.people, d.metadata, d.has_attachments, d.attachment_count,
            d.due_date, d.is_completed, d.completed_at, d.ingested_at,
            coalesce((SELECT json_agg(json_build_object('person_id', dp.person_id, 'role', dp.role) ORDER BY dp.person_id, dp.role)
                        FROM document_people dp WHERE dp.doc_id = d.doc_id), '[]') AS linked_people,
            coalesce((SELECT json_agg(json_build_object('file_sha256', f.file_sha256, 'filename', f.filename, 'mime_type', f.mime_type,
                                                        'size_bytes', f.size_bytes, 'role', df.role))
                        FROM document_files df JOIN files f ON f.file_sha256 = df.file_sha256 WHERE df.doc_id = d.doc_id), '[]') AS files,
            coalesce((SELECT json_agg(json_build_object('file_sha256', o.file_sha256, 'object_key', f.object_key, 'kind', o.kind,
                                                        'mime_type', f.mime_type, 'size_bytes', o.size_bytes) ORDER BY o.created_at)
                        FROM document_originals o JOIN files f ON f.file_sha256 = o.file_sha256 WHERE o.doc_id = d.doc_id), '[]') AS originals,
            coalesce((SELECT json_agg(json_build_object('name', t.tag, 'origin', t.origin) ORDER BY t.tag)
                        FROM document_tags t WHERE t.doc_id = d.doc_id), '[]') AS tags
       FROM documents d WHERE d.is_active_version AND d.doc_id > $1 ORDER BY d.doc_id LIMIT $2`,
    'doc_id',
  )) {
    d.originals = await withBytes(d.originals as ExportedOriginal[], opts);
    yield `${JSON.stringify({ type: 'document', ...plain(d) })}\n`;
  }
  for await (const t of pages(
    db,
    `SELECT thread_id, external_id, source_type, source_provider, source_account_id, title, participants, thread_type,
            is_group, participant_count, metadata, first_message_at, last_message_at,
            coalesce((SELECT json_agg(json_build_object('name', g.tag, 'origin', g.origin) ORDER BY g.tag)
                        FROM thread_tags g WHERE g.thread_id = threads.thread_id), '[]') AS tags
       FROM threads WHERE thread_id > $1 ORDER BY thread_id LIMIT $2`,
    'thread_id',
  )) {
    yield `${JSON.stringify({ type: 'thread', ...plain(t) })}\n`;
  }
  for await (const p of pages(
    db,
    `SELECT p.person_id, p.display_name, p.given_name, p.family_name, p.organization, p.nicknames, p.notes, p.source,
            coalesce((SELECT json_agg(json_build_object('kind', i.kind, 'value', i.value_canonical, 'raw', i.value_raw, 'label', i.label)
                                      ORDER BY i.kind, i.value_canonical)
                        FROM person_identifiers i WHERE i.person_id = p.person_id), '[]') AS identifiers,
            coalesce((SELECT json_agg(json_build_object('label', a.label, 'street', a.street, 'city', a.city, 'region', a.region,
                                                        'postal_code', a.postal_code, 'country', a.country))
                        FROM person_addresses a WHERE a.person_id = p.person_id), '[]') AS addresses,
            coalesce((SELECT json_agg(json_build_object('label', u.label, 'url', u.url))
                        FROM person_urls u WHERE u.person_id = p.person_id), '[]') AS urls,
            coalesce((SELECT array_agg(m.person_id ORDER BY m.person_id) FROM people m WHERE m.merged_into = p.person_id), '{}') AS merged_ids
       FROM people p WHERE p.merged_into IS NULL AND NOT p.deleted AND p.person_id > $1 ORDER BY p.person_id LIMIT $2`,
    'person_id',
  )) {
    yield `${JSON.stringify({ type: 'person', ...plain(p) })}\n`;
  }
  // The user's own order (issue 44): tagging rules and saved searches (tags are on their documents and threads above).
  for (const r of (await db.query('SELECT rule_id, tag, query, created_at, updated_at FROM tag_rules ORDER BY created_at, rule_id')).rows) {
    yield `${JSON.stringify({ type: 'tag_rule', ...plain(r) })}\n`;
  }
  for (const r of (await db.query('SELECT name, query, filters, seen_at, created_at, updated_at FROM saved_searches ORDER BY name')).rows) {
    yield `${JSON.stringify({ type: 'saved_search', ...plain(r) })}\n`;
  }
}

interface ExportedOriginal {
  file_sha256: string;
  object_key?: string;
  kind: string;
  mime_type: string | null;
  size_bytes: number;
  data_base64?: string;
  missing?: boolean;
}

/** The originals with their bytes (base64) when the store is at hand; one gone from the store says so. */
async function withBytes(originals: ExportedOriginal[], opts: ExportOptions): Promise<ExportedOriginal[]> {
  const out: ExportedOriginal[] = [];
  for (const { object_key, ...o } of originals) {
    if (!opts.store || !object_key) {
      out.push(o);
      continue;
    }
    try {
      out.push({ ...o, data_base64: (await readObject(opts.store, object_key, opts.maxObjectBytes ?? Number.MAX_SAFE_INTEGER)).toString('base64') });
    } catch {
      out.push({ ...o, missing: true }); // erased or collected since the row was read
    }
  }
  return out;
}
