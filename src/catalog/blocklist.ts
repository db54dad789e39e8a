/**
 * The block list a forget can leave behind (POST /v1/forget with block: true): documents of a
 * blocked source, and documents a blocked identifier sent or that only it and one other party
 * take part in, are skipped at ingestion and counted as skipped. In documents that are kept
 * (a group message), a blocked identifier's entries are left out of people[], so the forgotten
 * person is not created again. Identifiers are stored as SHA-256 of `kind:canonical value` only.
 * The Message-IDs of erased email are kept the same way: an attachment uploaded later with one of them
 * is skipped (`blocked_message`), as is the message itself.
 */
import { emailKeysOf, withMessagePeople } from './attachments.ts';
import type { BlockReason, CatalogIngestResult, SkipReason } from './types.ts';

export type { BlockReason };
import type { Queryable } from '../db/types.ts';
import { resolvePeople } from '../identity/linking.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { sha256Hex } from '../util/hash.ts';
import { newId } from '../util/ids.ts';

export const identifierHash = (kind: string, value: string): string => sha256Hex(`${kind}:${value}`);

export interface BlockList {
  sources: { source_type: string; source_account_id: string | null }[];
  identifiers: Set<string>;
  /** Blocked Message-IDs (hashed like identifiers) among those of the documents the list was read for. */
  messages: Set<string>;
}

export interface BlockableDocument {
  source_type: string;
  source_account_id?: string | null;
  people?: DocumentPersonT[] | null;
  metadata?: Record<string, unknown> | null;
}


export type BlockVerdict = { skip: true; reason: BlockReason } | { skip: false; people?: DocumentPersonT[] };

/** The block-list hash of a Message-ID (without blanks and angle brackets, src/catalog/attachments.ts). */
export const messageHash = (key: string): string => identifierHash('message', key);

/**
 * The list as far as these documents need it; null when nothing applies. Sources and identifiers are
 * read whole (one row per forget with block: true). Message-IDs are many (every message a block kept
 * out adds its own), so only those of the documents at hand are looked up.
 */
export async function readBlockList(db: Queryable, docs: BlockableDocument[] = []): Promise<BlockList | null> {
  const r = await db.query<{ kind: string; source_type: string | null; source_account_id: string | null; identifier_sha256: string | null }>(
    `SELECT kind, source_type, source_account_id, identifier_sha256 FROM forget_blocks WHERE kind <> 'message'`,
    [],
    { name: 'memex_forget_blocks_v2' },
  );
  const list: BlockList = { sources: [], identifiers: new Set(), messages: new Set() };
  for (const row of r.rows) {
    if (row.kind === 'source') list.sources.push({ source_type: row.source_type!, source_account_id: row.source_account_id });
    else list.identifiers.add(row.identifier_sha256!);
  }
  const hashes = [...new Set(docs.map(messageKeyOf).filter((k): k is string => k !== null).map(messageHash))];
  if (hashes.length > 0) {
    const m = await db.query<{ identifier_sha256: string }>(
      `SELECT identifier_sha256 FROM forget_blocks WHERE kind = 'message' AND identifier_sha256 = ANY($1::text[])`,
      [hashes],
    );
    for (const row of m.rows) list.messages.add(row.identifier_sha256);
  }
  return list.sources.length || list.identifiers.size || list.messages.size ? list : null;
}

/** The Message-ID a document is judged by: its own (a message) or its message's (an attachment). */
function messageKeyOf(doc: BlockableDocument): string | null {
  const keys = emailKeysOf(doc);
  return keys.message ?? keys.attachment;
}

/**
 * Whether a document is skipped, and otherwise its people[] without blocked identifiers (only
 * when something was removed). A blocked identifier that sent the document, is its contact card,
 * or is one of at most two parties (a one-to-one conversation) makes the whole document skipped.
 */
export function judge(list: BlockList, doc: BlockableDocument, region: string): BlockVerdict {
  if (sourceBlocked(list, doc)) return { skip: true, reason: 'blocked_source' };
  const key = list.messages.size > 0 ? messageKeyOf(doc) : null;
  if (key && list.messages.has(messageHash(key))) return { skip: true, reason: 'blocked_message' };
  const people = doc.people ?? [];
  if (list.identifiers.size === 0 || people.length === 0) return { skip: false };
  const blocked = people.map((p) => {
    const [resolved] = resolvePeople([p], region);
    return resolved ? list.identifiers.has(identifierHash(resolved.kind, resolved.value)) : false;
  });
  if (!blocked.includes(true)) return { skip: false };
  const roles = people.map((p) => p.role ?? 'participant');
  const others = new Set(people.filter((_, i) => !blocked[i]).map((p) => p.identifier.trim().toLowerCase()));
  if (roles.some((r, i) => blocked[i] && (r === 'sender' || r === 'contact')) || others.size <= 1) {
    return { skip: true, reason: 'blocked_identifier' };
  }
  return { skip: false, people: people.filter((_, i) => !blocked[i]) };
}

function sourceBlocked(list: BlockList, doc: { source_type: string; source_account_id?: string | null }): boolean {
  return list.sources.some(
    (s) => s.source_type === doc.source_type && (s.source_account_id === null || s.source_account_id === (doc.source_account_id ?? null)),
  );
}

/**
 * Whether a contact card (a person with their identifiers: contact sync, v2 person envelopes) is kept
 * out: its source is blocked, or one of its identifiers (canonical) is. A card is one person, so one
 * blocked identifier keeps the whole card out, as it keeps out the card's document.
 */
export function judgeCard(
  list: BlockList | null,
  source: { source_type: string; source_account_id?: string | null },
  identifiers: { kind: string; value: string }[],
): BlockReason | null {
  if (!list) return null;
  if (sourceBlocked(list, source)) return 'blocked_source';
  return identifiers.some((i) => list.identifiers.has(identifierHash(i.kind, i.value))) ? 'blocked_identifier' : null;
}

/** The answer for a document the block list kept out: nothing stored, `status: "skipped"` with the reason. */
export function skippedResult(externalId: string, reason: SkipReason): CatalogIngestResult {
  return {
    submission_id: '',
    doc_id: '',
    external_id: externalId,
    version_number: 0,
    status: 'skipped',
    document_status: 'skipped',
    thread_id: null,
    file_ids: [],
    duplicate: false,
    skipped: reason,
    total_chunks: 0,
  };
}

/**
 * Which of these documents the block list keeps out (null where none), for a caller that checks before
 * doing the work (a file upload, before extraction). Attachments are judged with their message's people.
 */
export async function blockedAmong(db: Queryable, docs: BlockableDocument[], region: string): Promise<(BlockReason | null)[]> {
  const list = await readBlockList(db, docs);
  if (!list) return docs.map(() => null);
  return (await withMessagePeople(db, docs)).map((d) => {
    const verdict = judge(list, d, region);
    return verdict.skip ? verdict.reason : null;
  });
}

export interface NewBlock {
  source?: { source_type: string; source_account_id: string | null };
  identifiers?: { kind: string; value: string }[];
  /** Message-IDs (src/catalog/attachments.ts messageKey). */
  messages?: string[];
}

/** Adds blocks (idempotent); returns how many rows are new. */
export async function addBlocks(tx: Queryable, block: NewBlock): Promise<number> {
  let added = 0;
  if (block.source) {
    const r = await tx.query(
      `INSERT INTO forget_blocks (block_id, kind, source_type, source_account_id) VALUES ($1, 'source', $2, $3)
       ON CONFLICT DO NOTHING`,
      [newId(), block.source.source_type, block.source.source_account_id],
    );
    added += r.rowCount;
  }
  for (const id of block.identifiers ?? []) {
    const r = await tx.query(
      `INSERT INTO forget_blocks (block_id, kind, identifier_sha256) VALUES ($1, 'identifier', $2) ON CONFLICT DO NOTHING`,
      [newId(), identifierHash(id.kind, id.value)],
    );
    added += r.rowCount;
  }
  for (const key of block.messages ?? []) {
    const r = await tx.query(
      `INSERT INTO forget_blocks (block_id, kind, identifier_sha256) VALUES ($1, 'message', $2) ON CONFLICT DO NOTHING`,
      [newId(), messageHash(key)],
    );
    added += r.rowCount;
  }
  return added;
}
