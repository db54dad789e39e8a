/**
 * Set-based document insertion: any number of prepared documents in a few statements per group
 * (submissions, threads, versions, documents, chunks, people, files, status). The single-document
 * route uses it with one item; batches use it per group and fall back to one item at a time only
 * when a group fails, so one bad item never stops the others.
 *
 * Callers guarantee that no two items of one call share an idempotency key or a source identity
 * (see planRounds); the version logic relies on it.
 */
import { storeIngestTags } from './ingest-tags.ts';
import type { Queryable } from '../db/types.ts';
import { linkPeople } from '../identity/linking.ts';
import { boundTitle, URI_MAX_CHARS } from '../schemas/bounds.ts';
import { SOURCE_STATE_KEYS } from '../schemas/sources.ts';
import { normaliseText, sha256Hex } from '../util/hash.ts';
import { isUuid, newId } from '../util/ids.ts';
import { attachmentColumns, emailKeysOf, linkAttachments, withMessagePeople } from './attachments.ts';
import { addBlocks, judge, readBlockList, skippedResult } from './blocklist.ts';
import { chunkText, type TextChunk } from './chunking.ts';
import { refreshEmailThreads } from './email-threads.ts';
import { resolveThreads } from './threads.ts';
import { normaliseMimeType, normaliseOptionalMimeType } from '../util/mime-type.ts';
import {
  CatalogError,
  type BatchItemOutcome,
  type CatalogDocumentRequest,
  type CatalogIngestResult,
} from './types.ts';

export interface IngestItem {
  index: number;
  request: CatalogDocumentRequest;
}

/** Identity of a source document across its versions (NULL-safe, like the unique index). */
export function sourceIdentity(r: CatalogDocumentRequest): string {
  return [r.source_type, r.source_provider ?? '', r.source_account_id ?? '', r.external_id ?? r.source_id].join('\u001f');
}

/**
 * Most UTF-8 bytes in one document or thread identity (source type, provider, account, external id). The unique
 * btree indexes over these columns hold rows of at most 2704 bytes; the schemas bound each field in characters,
 * and this bounds what 4-byte characters or a long file path could still add up to.
 */
export const MAX_IDENTITY_BYTES = 2400;

/** Why the document's or its thread's identity is too long to index, or null. */
export function identityTooLong(r: CatalogDocumentRequest): string | null {
  const bytes = (parts: (string | null | undefined)[]) => parts.reduce((n, p) => n + Buffer.byteLength(p ?? ''), 0);
  const doc = bytes([r.source_type, r.source_provider, r.source_account_id, r.external_id ?? r.source_id]);
  if (doc > MAX_IDENTITY_BYTES) {
    return `source identity (source_type, source_provider, source_account_id, external_id) is ${doc} bytes of UTF-8; the limit is ${MAX_IDENTITY_BYTES}`;
  }
  const t = r.thread;
  if (t) {
    const thread = bytes([t.source_type ?? r.source_type, t.source_provider ?? r.source_provider, t.source_account_id ?? r.source_account_id, t.external_id]);
    if (thread > MAX_IDENTITY_BYTES) {
      return `thread identity (source_type, source_provider, source_account_id, external_id) is ${thread} bytes of UTF-8; the limit is ${MAX_IDENTITY_BYTES}`;
    }
  }
  return null;
}

/**
 * Splits items into rounds in which no idempotency key and no source identity repeats, keeping
 * request order: the second edit of a document in one batch lands after the first.
 */
export function planRounds(items: IngestItem[]): IngestItem[][] {
  const rounds: { items: IngestItem[]; keys: Set<string> }[] = [];
  const lastRoundOf = new Map<string, number>();
  for (const item of items) {
    const keys = [`k:${item.request.idempotency_key}`, `i:${sourceIdentity(item.request)}`];
    const after = Math.max(-1, ...keys.map((k) => lastRoundOf.get(k) ?? -1));
    const round = after + 1;
    if (!rounds[round]) rounds[round] = { items: [], keys: new Set() };
    rounds[round].items.push(item);
    for (const k of keys) lastRoundOf.set(k, round);
  }
  return rounds.map((r) => r.items);
}

export function documentMetadata(req: CatalogDocumentRequest, now: string): Record<string, unknown> {
  const metadata: Record<string, unknown> = { ...(req.metadata ?? {}) };
  if (req.attachments) metadata.attachments = req.attachments;
  // A sender's Content-Type is kept only as the server reads it (src/util/mime-type.ts).
  if (Array.isArray(metadata.attachments)) metadata.attachments = metadata.attachments.map(withNormalisedMimeType);
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
  metadata.ingested_at = now;
  return metadata;
}

/** An attachment entry with its `mime_type` (when it has one) in the stored form. */
function withNormalisedMimeType(entry: unknown): unknown {
  if (!entry || typeof entry !== 'object' || Array.isArray(entry) || !('mime_type' in entry)) return entry;
  const e = entry as Record<string, unknown>;
  return { ...e, mime_type: normaliseOptionalMimeType(e.mime_type) };
}

/** Most attachment text added to one document's chunks (OCR of a long scan is already in a file document's text). */
export const MAX_ATTACHMENT_TEXT_CHARS = 200_000;

const squash = (s: string): string => s.replace(/\s+/g, ' ').trim();

/**
 * The text that is chunked and searched: the document text plus the OCR text and captions of its attachments
 * (metadata.attachments[], gateway spec 2.1), so a message is found by the words in its screenshot. documents.text
 * and text_sha256 stay the main text only; chunk offsets past the end of documents.text point into this appendix.
 * Attachment text the document text already contains (file documents carry their OCR in the text) is not repeated.
 */
export function searchableText(text: string, attachments: unknown): string {
  if (!Array.isArray(attachments) || attachments.length === 0) return text;
  const haystack = squash(text);
  const parts: string[] = [];
  let budget = MAX_ATTACHMENT_TEXT_CHARS;
  const add = (label: string, value: unknown) => {
    if (typeof value !== 'string' || budget <= 0) return;
    const v = normaliseText(value).slice(0, budget);
    if (!v || haystack.includes(squash(v))) return;
    parts.push(`${label}: ${v}`);
    budget -= v.length;
  };
  attachments.forEach((a, i) => {
    if (!a || typeof a !== 'object') return;
    const att = a as Record<string, unknown>;
    const name = typeof att.filename === 'string' && att.filename ? att.filename : `#${typeof att.index === 'number' ? att.index : i}`;
    add(`Attachment ${name} caption`, att.caption);
    const ocr = att.ocr;
    add(`Attachment ${name} text`, typeof ocr === 'string' ? ocr : ocr && typeof ocr === 'object' ? (ocr as Record<string, unknown>).text : undefined);
  });
  return parts.length ? `${text}\n\n${parts.join('\n\n')}` : text;
}

/** Relationship ids that are not UUIDs are dropped (spec-notes A2.8). */
const uuidList = (v: unknown): string[] => (Array.isArray(v) ? v.filter(isUuid) : []);

export interface ChunkInput {
  docId: string;
  chunks: TextChunk[];
  /** The document's content_timestamp: new chunks join the embedding queue at this time, newest first. */
  at: string;
}

export interface StoredChunks {
  /** Per document: how many of its chunks still wait for a vector. */
  pending: Map<string, number>;
  /**
   * Documents linked to a chunk that existed before and was not embedded yet. A worker may embed
   * that chunk before this transaction commits, and its status refresh cannot see these new links:
   * the caller re-checks these documents after commit (refreshDocumentStatus).
   */
  recheck: Set<string>;
}

/**
 * Stores the chunks of documents. Chunks are shared by text hash: text seen before reuses its
 * chunk (and its vector). With `requeue`, already embedded chunks go back to the queue.
 */
export async function storeChunks(tx: Queryable, docs: ChunkInput[], requeue = false): Promise<StoredChunks> {
  const docIds: string[] = [];
  const ids: string[] = [];
  const texts: string[] = [];
  const shas: string[] = [];
  const ordinals: number[] = [];
  const starts: number[] = [];
  const ends: number[] = [];
  const ats: string[] = [];
  for (const d of docs) {
    d.chunks.forEach((c, i) => {
      docIds.push(d.docId);
      ats.push(d.at);
      ids.push(newId());
      texts.push(c.text);
      shas.push(sha256Hex(c.text));
      ordinals.push(i);
      starts.push(c.start);
      ends.push(c.end);
    });
  }
  const pending = new Map<string, number>(docs.map((d) => [d.docId, 0]));
  const recheck = new Set<string>();
  if (ids.length === 0) return { pending, recheck };
  if (requeue) {
    await tx.query(
      `UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL, lease_expires_at = NULL, updated_at = now()
        WHERE text_sha256 = ANY($1::text[]) AND embedding_status <> 'pending'`,
      [[...new Set(shas)].sort()],
    );
  }
  const r = await tx.query<{ doc_id: string; not_embedded: number; shared_pending: number }>(
    `WITH input AS (
       SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::int[], $6::int[], $7::int[], $8::timestamptz[])
              AS t(doc_id, chunk_id, text, sha, ordinal, start_char, end_char, at)),
     ins AS (
       -- newest_at: the queue's order (migration 143); a time after now (an event next year) counts as now.
       INSERT INTO chunks (chunk_id, text, text_sha256, ordinal, source_ref, newest_at)
       SELECT DISTINCT ON (sha) chunk_id, text, sha, ordinal,
              jsonb_build_object('type', 'text_span', 'start_char', start_char, 'end_char', end_char), least(at, now())
         FROM input ORDER BY sha, at DESC
       ON CONFLICT (text_sha256) DO NOTHING
       RETURNING chunk_id, text_sha256, embedding_status),
     -- A chunk already stored and not yet embedded that a newer document now uses too (a quoted reply, a list
     -- footer) takes that document's time, so the newest-first queue reaches it with the newest mail (issue 48).
     -- Best effort without waits: rows another transaction holds (the worker's claim, another batch) are left.
     newer AS (
       SELECT c.chunk_id, b.at FROM chunks c
         JOIN (SELECT sha, max(least(at, now())) AS at FROM input GROUP BY sha) b ON b.sha = c.text_sha256
        WHERE c.text_sha256 = ANY($4::text[]) AND c.embedding_status <> 'embedded' AND (c.newest_at IS NULL OR c.newest_at < b.at)
        ORDER BY c.chunk_id FOR UPDATE OF c SKIP LOCKED),
     bumped AS (
       UPDATE chunks c SET newest_at = newer.at FROM newer WHERE c.chunk_id = newer.chunk_id RETURNING c.chunk_id),
     allc AS (
       SELECT chunk_id, text_sha256, embedding_status, true AS fresh FROM ins
       UNION ALL
       SELECT chunk_id, text_sha256, embedding_status, false FROM chunks WHERE text_sha256 = ANY($4::text[])),
     links AS (
       INSERT INTO chunk_documents (doc_id, ordinal, chunk_id, start_char, end_char)
       SELECT i.doc_id, i.ordinal, a.chunk_id, i.start_char, i.end_char FROM input i JOIN allc a ON a.text_sha256 = i.sha
       RETURNING chunk_id)
     SELECT i.doc_id, count(*) FILTER (WHERE a.embedding_status <> 'embedded')::int AS not_embedded,
            count(*) FILTER (WHERE a.embedding_status <> 'embedded' AND NOT a.fresh)::int AS shared_pending
       FROM input i JOIN allc a ON a.text_sha256 = i.sha GROUP BY i.doc_id`,
    [docIds, ids, texts, shas, ordinals, starts, ends, ats],
  );
  for (const row of r.rows) {
    pending.set(row.doc_id, row.not_embedded);
    if (row.shared_pending > 0) recheck.add(row.doc_id);
  }
  return { pending, recheck };
}

/**
 * Items a forget blocked (POST /v1/forget with block: true) come back as skipped, never stored;
 * kept items lose the blocked identifiers from their people. One or two small reads per call.
 */
async function applyBlockList(
  tx: Queryable,
  items: IngestItem[],
  outcomes: Map<number, BatchItemOutcome>,
  phoneRegion: string,
): Promise<IngestItem[]> {
  const list = await readBlockList(tx, items.map((i) => i.request));
  if (!list) return items;
  const kept: IngestItem[] = [];
  const blockedMessages: string[] = [];
  for (const item of items) {
    const r = item.request;
    const verdict = judge(list, r, phoneRegion);
    if (verdict.skip) {
      // A message kept out for its sender keeps its attachments out too, whichever comes first: its
      // Message-ID joins the block list, and the caller has attachments that came before it erased.
      const message = verdict.reason === 'blocked_identifier' ? emailKeysOf(r).message : null;
      if (message) blockedMessages.push(message);
      outcomes.set(item.index, {
        index: item.index,
        ok: true,
        result: skippedResult(r.external_id ?? r.source_id, verdict.reason),
        ...(message ? { blockedMessage: message } : {}),
      });
      continue;
    }
    if (verdict.people) {
      const blockedThread = r.thread?.participants ? judge(list, { ...r, people: r.thread.participants }, phoneRegion) : null;
      const thread = r.thread && blockedThread && !blockedThread.skip && blockedThread.people
        ? { ...r.thread, participants: blockedThread.people }
        : r.thread;
      kept.push({ ...item, request: { ...r, people: verdict.people, thread } });
    } else kept.push(item);
  }
  if (blockedMessages.length > 0) await addBlocks(tx, { messages: blockedMessages });
  return kept;
}

interface Prepared {
  item: IngestItem;
  text: string;
  chunks: TextChunk[];
  externalId: string;
}

/**
 * Ingests items whose keys and identities are all distinct. Items that cannot be stored (no
 * text) come back as failed outcomes; a database error throws and rolls the caller's savepoint.
 */
export async function ingestMany(
  tx: Queryable,
  items: IngestItem[],
  batchId: string | null,
  phoneRegion: string,
): Promise<BatchItemOutcome[]> {
  const outcomes = new Map<number, BatchItemOutcome>();
  const now = new Date().toISOString();
  // Titles are stored cut at TITLE_MAX_CHARS (documents and threads), on every path that stores one.
  items = items.map((item) => {
    const r = item.request;
    const title = boundTitle(r.title);
    const thread = r.thread && boundTitle(r.thread.title) !== r.thread.title ? { ...r.thread, title: boundTitle(r.thread.title) } : r.thread;
    return title === r.title && thread === r.thread ? item : { ...item, request: { ...r, title, thread } };
  });
  const all = items;
  // Attachments whose message is already stored take its people first: the block list judges them with them.
  const adopted = await withMessagePeople(tx, items.map((i) => i.request));
  items = items.map((item, i) => (adopted[i] === item.request ? item : { ...item, request: adopted[i] }));
  items = await applyBlockList(tx, items, outcomes, phoneRegion);
  if (items.length === 0) return all.map((i) => outcomes.get(i.index)!);

  // 1. Submissions seen before: a duplicate while their document is still the active version.
  const existing = await tx.query<{
    idempotency_key: string;
    submission_id: string;
    status: string;
    result_doc_id: string | null;
    is_active_version: boolean | null;
    external_id: string | null;
    version_number: number | null;
    thread_id: string | null;
    doc_status: string | null;
    total: number;
    files: string[];
  }>(
    `SELECT s.idempotency_key, s.submission_id, s.status, s.result_doc_id, d.is_active_version, d.external_id,
            d.version_number, d.thread_id, d.status AS doc_status,
            (SELECT count(*)::int FROM chunk_documents cd WHERE cd.doc_id = d.doc_id) AS total,
            coalesce((SELECT array_agg(f.file_sha256) FROM document_files f WHERE f.doc_id = d.doc_id), '{}') AS files
       FROM ingest_submissions s LEFT JOIN documents d ON d.doc_id = s.result_doc_id
      WHERE s.idempotency_key = ANY($1::text[]) ORDER BY s.idempotency_key FOR UPDATE OF s`,
    [items.map((i) => i.request.idempotency_key)],
  );
  const prior = new Map(existing.rows.map((r) => [r.idempotency_key, r]));
  const todo: Prepared[] = [];
  for (const item of items) {
    const tooLong = identityTooLong(item.request);
    if (tooLong) {
      outcomes.set(item.index, { index: item.index, ok: false, error: { code: 'INGEST.IDENTITY_TOO_LONG', message: tooLong, status: 422 } });
      continue;
    }
    if ((item.request.canonical_uri?.length ?? 0) > URI_MAX_CHARS) {
      const message = `canonical_uri is longer than ${URI_MAX_CHARS} characters`;
      outcomes.set(item.index, { index: item.index, ok: false, error: { code: 'INGEST.FIELD_TOO_LONG', message, status: 422 } });
      continue;
    }
    const p = prior.get(item.request.idempotency_key);
    if (p && p.result_doc_id && p.status !== 'failed' && p.is_active_version) {
      outcomes.set(item.index, {
        index: item.index,
        ok: true,
        result: {
          submission_id: p.submission_id,
          doc_id: p.result_doc_id,
          external_id: p.external_id!,
          version_number: p.version_number!,
          status: p.status,
          document_status: p.doc_status!,
          thread_id: p.thread_id,
          file_ids: p.files,
          duplicate: true,
          total_chunks: p.total,
        },
      });
      continue;
    }
    const text = normaliseText(item.request.text);
    const chunks = chunkText(
      searchableText(text, item.request.attachments ?? (item.request.metadata as Record<string, unknown> | null)?.attachments),
    );
    if (chunks.length === 0) {
      outcomes.set(item.index, {
        index: item.index,
        ok: false,
        error: { code: 'INGEST.EMPTY_TEXT', message: 'Document produced no valid chunks', status: 422 },
      });
      continue;
    }
    todo.push({ item, text, chunks, externalId: item.request.external_id ?? item.request.source_id });
  }
  if (todo.length === 0) return all.map((i) => outcomes.get(i.index)!);

  // 2. Threads.
  const { ids: threadIds, emailThreads } = await resolveThreads(tx, todo.map((t) => t.item.request));

  // 3. The latest version of each source identity, locked; the active ones get superseded.
  const idents = todo.map((t) => {
    const r = t.item.request;
    return [r.source_type, r.source_provider ?? '', r.source_account_id ?? '', t.externalId];
  });
  const latest = await tx.query<{ doc_id: string; version_number: number; is_active_version: boolean; k: string }>(
    `SELECT d.doc_id, d.version_number, d.is_active_version,
            concat_ws(chr(31), d.source_type, coalesce(d.source_provider, ''), coalesce(d.source_account_id, ''),
                      d.external_id) AS k
       FROM documents d
      WHERE d.doc_id IN (
        SELECT DISTINCT ON (source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id) doc_id
          FROM documents
         WHERE (source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id)
               IN (SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]))
         ORDER BY source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id,
                  version_number DESC)
      ORDER BY d.doc_id FOR UPDATE`,
    [idents.map((i) => i[0]), idents.map((i) => i[1]), idents.map((i) => i[2]), idents.map((i) => i[3])],
  );
  const latestOf = new Map(latest.rows.map((r) => [r.k, r]));
  const docIds = todo.map(() => newId());
  const previous = todo.map((_, i) => latestOf.get(idents[i].join('\u001f')) ?? null);
  const superseded = previous.map((p, i) => (p?.is_active_version ? [p.doc_id, docIds[i]] : null)).filter(Boolean) as string[][];
  if (superseded.length > 0) {
    await tx.query(
      `UPDATE documents d SET is_active_version = false, superseded_at = now(), superseded_by_id = x.new_id,
              updated_at = now()
         FROM unnest($1::uuid[], $2::uuid[]) AS x(old_id, new_id) WHERE d.doc_id = x.old_id`,
      [superseded.map((s) => s[0]), superseded.map((s) => s[1])],
    );
    await tx.query('DELETE FROM chunk_documents WHERE doc_id = ANY($1::uuid[])', [superseded.map((s) => s[0])]);
  }

  // 4. Documents.
  const rows = todo.map((t, i) => {
    const r = t.item.request;
    const metadata = documentMetadata(r, now);
    return {
      doc_id: docIds[i],
      external_id: t.externalId,
      source_type: r.source_type,
      source_provider: r.source_provider ?? null,
      source_account_id: r.source_account_id ?? null,
      version_number: (previous[i]?.version_number ?? 0) + 1,
      previous_version_id: previous[i]?.doc_id ?? null,
      title: r.title ?? null,
      text: t.text,
      text_sha256: sha256Hex(t.text),
      mime_type: normaliseMimeType(r.mime_type ?? 'text/plain'),
      canonical_uri: r.canonical_uri ?? null,
      content_timestamp: r.content_timestamp,
      content_timestamp_type: r.content_timestamp_type,
      content_created_at: r.content_created_at ?? null,
      content_modified_at: r.content_modified_at ?? null,
      people: r.people ?? [],
      thread_id: threadIds[i],
      parent_doc_id: isUuid(r.parent_doc_id) ? r.parent_doc_id : null,
      source_doc_ids: uuidList(r.source_doc_ids),
      related_doc_ids: uuidList(r.related_doc_ids),
      ...attachmentColumns(metadata, r.facet_overrides),
      has_location: r.has_location ?? false,
      has_due_date: r.has_due_date ?? Boolean(r.due_date),
      due_date: r.due_date ?? null,
      is_completed: r.is_completed ?? null,
      completed_at: r.completed_at ?? null,
      metadata,
      extraction_failed: r.extraction_failed ?? false,
      error_details: r.error_details ?? null,
      intent: r.intent ?? null,
      relevance_score: r.relevance_score ?? null,
    };
  });
  await tx.query(
    `INSERT INTO documents (doc_id, external_id, source_type, source_provider, source_account_id, version_number,
        previous_version_id, title, text, text_sha256, mime_type, canonical_uri, content_timestamp,
        content_timestamp_type, content_created_at, content_modified_at, people, thread_id, parent_doc_id,
        source_doc_ids, related_doc_ids, has_attachments, attachment_count, has_location, has_due_date, due_date,
        is_completed, completed_at, metadata, status, extraction_failed, error_details, intent, relevance_score,
        ingested_at)
     SELECT doc_id, external_id, source_type, source_provider, source_account_id, version_number,
        previous_version_id, title, text, text_sha256, mime_type, canonical_uri, content_timestamp,
        content_timestamp_type, content_created_at, content_modified_at, people, thread_id, parent_doc_id,
        source_doc_ids, related_doc_ids, has_attachments, attachment_count, has_location, has_due_date, due_date,
        is_completed, completed_at, metadata, 'enriched', extraction_failed, error_details, intent, relevance_score,
        $2::timestamptz
       FROM jsonb_to_recordset($1::jsonb) AS x(doc_id uuid, external_id text, source_type text, source_provider text,
        source_account_id text, version_number int, previous_version_id uuid, title text, text text,
        text_sha256 text, mime_type text, canonical_uri text, content_timestamp timestamptz,
        content_timestamp_type text, content_created_at timestamptz, content_modified_at timestamptz, people jsonb,
        thread_id uuid, parent_doc_id uuid, source_doc_ids uuid[], related_doc_ids uuid[], has_attachments boolean,
        attachment_count int, has_location boolean, has_due_date boolean, due_date timestamptz,
        is_completed boolean, completed_at timestamptz, metadata jsonb, extraction_failed boolean,
        error_details jsonb, intent jsonb, relevance_score double precision)`,
    [JSON.stringify(rows), now],
  );

  // 4a. What the source said of the message since it was stored (POST /v1/documents/source-state: folder, flags,
  // labels, deleted there) is the message's, not the version's: a new version (an edit, a re-parse from the
  // original) keeps it unless it says otherwise itself.
  const carried = rows.filter((r) => r.previous_version_id).map((r) => r.doc_id);
  if (carried.length > 0) {
    await tx.query(
      `UPDATE documents d
          SET metadata = (SELECT coalesce(jsonb_object_agg(key, value), '{}'::jsonb) FROM jsonb_each(p.metadata)
                           WHERE key = ANY($2::text[])) || coalesce(d.metadata, '{}'::jsonb)
         FROM documents p
        WHERE d.doc_id = ANY($1::uuid[]) AND p.doc_id = d.previous_version_id AND p.metadata ?| $2::text[]`,
      [carried, [...SOURCE_STATE_KEYS]],
    );
  }

  // 4b. Tags (issue 44): a new version keeps its document's tags; upload tags and an importer's
  // metadata.tags become tags; rules look at the new documents after commit (src/organize/rules.ts).
  await storeIngestTags(
    tx,
    rows.map((r) => ({ docId: r.doc_id, previousId: r.previous_version_id, metadata: r.metadata })),
  );

  // 5. Chunks, people, files.
  const { pending, recheck } = await storeChunks(
    tx,
    todo.map((t, i) => ({ docId: docIds[i], chunks: t.chunks, at: t.item.request.content_timestamp })),
  );
  const withPeople = todo
    .map((t, i) => ({ docId: docIds[i], people: t.item.request.people ?? [], source: t.item.request.source_type }))
    .filter((e) => e.people.length > 0);
  if (withPeople.length > 0) await linkPeople(tx, withPeople, phoneRegion);
  const fileLinks = todo.flatMap((t, i) => (t.item.request.file_sha256s ?? []).map((sha) => [docIds[i], sha]));
  if (fileLinks.length > 0) {
    await tx.query(
      `INSERT INTO document_files (doc_id, file_sha256) SELECT * FROM unnest($1::uuid[], $2::text[]) ON CONFLICT DO NOTHING`,
      [fileLinks.map((f) => f[0]), fileLinks.map((f) => f[1])],
    );
  }

  await refreshEmailThreads(tx, emailThreads);
  // Attachments that were waiting for these messages take their people; messages count their attachments.
  await linkAttachments(tx, todo.map((t) => t.item.request), phoneRegion);

  // 6. Status: text documents need no extraction or enrichment of their own, so they are enriched
  // once cataloged and indexed as soon as every chunk has a vector (at once when all are shared).
  const indexed = docIds.filter((id) => (pending.get(id) ?? 0) === 0);
  if (indexed.length > 0) {
    await tx.query(`UPDATE documents SET status = 'indexed' WHERE doc_id = ANY($1::uuid[])`, [indexed]);
  }
  const subStatus = docIds.map((id) => ((pending.get(id) ?? 0) === 0 ? 'completed' : 'cataloged'));
  const reused = todo.map((t) => prior.get(t.item.request.idempotency_key)?.submission_id ?? null);
  const submissionIds = reused.map((id) => id ?? newId());
  const fresh = todo.map((_, i) => i).filter((i) => !reused[i]);
  if (fresh.length > 0) {
    const ins = await tx.query(
      `INSERT INTO ingest_submissions (submission_id, idempotency_key, source_type, source_id, content_sha256,
                                       status, result_doc_id, batch_id)
       SELECT s, k, st, si, c, x.status, d, $8::uuid
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::uuid[])
              AS x(s, k, st, si, c, status, d)
       ON CONFLICT (idempotency_key) DO NOTHING`,
      [
        fresh.map((i) => submissionIds[i]),
        fresh.map((i) => todo[i].item.request.idempotency_key),
        fresh.map((i) => todo[i].item.request.source_type),
        fresh.map((i) => todo[i].item.request.source_id),
        fresh.map((i) => todo[i].item.request.content_sha256),
        fresh.map((i) => subStatus[i]),
        fresh.map((i) => docIds[i]),
        batchId,
      ],
    );
    // Another transaction stored one of these submissions meanwhile: undo and let the caller retry.
    if (ins.rowCount !== fresh.length) throw new ConcurrentSubmissionError();
  }
  const again = todo.map((_, i) => i).filter((i) => reused[i]);
  if (again.length > 0) {
    await tx.query(
      `UPDATE ingest_submissions s SET status = x.status, result_doc_id = x.d, error_details = NULL,
              batch_id = coalesce(s.batch_id, $4::uuid), updated_at = now()
         FROM unnest($1::uuid[], $2::text[], $3::uuid[]) AS x(id, status, d) WHERE s.submission_id = x.id`,
      [again.map((i) => submissionIds[i]), again.map((i) => subStatus[i]), again.map((i) => docIds[i]), batchId],
    );
  }

  todo.forEach((t, i) => {
    outcomes.set(t.item.index, {
      index: t.item.index,
      ok: true,
      recheck: recheck.has(docIds[i]),
      result: {
        submission_id: submissionIds[i],
        doc_id: docIds[i],
        external_id: t.externalId,
        version_number: rows[i].version_number,
        status: subStatus[i],
        document_status: (pending.get(docIds[i]) ?? 0) === 0 ? 'indexed' : 'enriched',
        thread_id: threadIds[i],
        file_ids: t.item.request.file_sha256s ?? [],
        duplicate: false,
        total_chunks: t.chunks.length,
      } satisfies CatalogIngestResult,
    });
  });
  return all.map((i) => outcomes.get(i.index)!);
}

export class ConcurrentSubmissionError extends CatalogError {
  constructor() {
    super(409, 'INGEST.CONCURRENT_SUBMISSION', 'the same submission is being ingested concurrently; retry');
  }
}

/** Errors worth retrying the whole transaction for (deadlocks, serialization, concurrent inserts). */
export function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string }).code;
  return err instanceof ConcurrentSubmissionError || code === '40P01' || code === '40001' || code === '23505';
}
