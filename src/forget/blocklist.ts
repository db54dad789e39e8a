/**
 * The block list a forget can leave behind (POST /v1/forget with block: true): documents of a
 * blocked source, and documents a blocked identifier sent or that only it and one other party
 * take part in, are skipped at ingestion and counted as skipped. In documents that are kept
 * (a group message), a blocked identifier's entries are left out of people[], so the forgotten
 * person is not created again. Identifiers are stored as SHA-256 of `kind:canonical value` only.
 */
import type { Queryable } from '../db/types.ts';
import { resolvePeople } from '../people/linking.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { sha256Hex } from '../util/hash.ts';
import { newId } from '../util/ids.ts';

export const identifierHash = (kind: string, value: string): string => sha256Hex(`${kind}:${value}`);

export interface BlockList {
  sources: { source_type: string; source_account_id: string | null }[];
  identifiers: Set<string>;
}

export interface BlockableDocument {
  source_type: string;
  source_account_id?: string | null;
  people?: DocumentPersonT[] | null;
}

export type BlockVerdict =
  | { skip: true; reason: 'blocked_source' | 'blocked_identifier' }
  | { skip: false; people?: DocumentPersonT[] };

/** The whole list (small: one row per forget with block: true); null when it is empty. */
export async function readBlockList(db: Queryable): Promise<BlockList | null> {
  const r = await db.query<{ kind: string; source_type: string | null; source_account_id: string | null; identifier_sha256: string | null }>(
    'SELECT kind, source_type, source_account_id, identifier_sha256 FROM forget_blocks',
    [],
    { name: 'memex_forget_blocks' },
  );
  if (r.rows.length === 0) return null;
  const list: BlockList = { sources: [], identifiers: new Set() };
  for (const row of r.rows) {
    if (row.kind === 'source') list.sources.push({ source_type: row.source_type!, source_account_id: row.source_account_id });
    else list.identifiers.add(row.identifier_sha256!);
  }
  return list;
}

/**
 * Whether a document is skipped, and otherwise its people[] without blocked identifiers (only
 * when something was removed). A blocked identifier that sent the document, is its contact card,
 * or is one of at most two parties (a one-to-one conversation) makes the whole document skipped.
 */
export function judge(list: BlockList, doc: BlockableDocument, region: string): BlockVerdict {
  const blockedSource = list.sources.some(
    (s) => s.source_type === doc.source_type && (s.source_account_id === null || s.source_account_id === (doc.source_account_id ?? null)),
  );
  if (blockedSource) return { skip: true, reason: 'blocked_source' };
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

export interface NewBlock {
  source?: { source_type: string; source_account_id: string | null };
  identifiers?: { kind: string; value: string }[];
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
  return added;
}
