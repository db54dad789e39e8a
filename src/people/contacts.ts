/**
 * Contact synchronisation (gateway spec 4.4, spec-notes A4.4): every contact card is upserted into
 * the people tables by (source, external_id) and stored as a `contact` document through the
 * catalog. Versions, content hashes and deletions are kept per (source, external_id) in
 * people_source_map, so re-sending unchanged cards changes nothing and an older version never
 * overwrites a newer one. Identifiers that already belong to another person merge the two.
 *
 * This module is the sync call; the card's canonical form is in normalise.ts, the people upsert in upsert.ts,
 * the contact document in contact-document.ts, the device's change token in change-tokens.ts.
 */
import type { Catalog } from '../catalog/catalog.ts';
import type { CatalogDocumentRequest, CatalogIngestResult } from '../catalog/types.ts';
import type { Database, Queryable } from '../db/types.ts';
import type { ContactIngestRequestT, ContactIngestResponseT } from '../schemas/people.ts';
import { readBlockList } from '../catalog/blocklist.ts';
import { sha256Hex } from '../util/hash.ts';
import { canonicalIdentifier, type IdentifierKind } from '../identity/identifiers.ts';
import { identifierOwners } from '../identity/ownership.ts';
import { saveChangeToken } from './change-tokens.ts';
import { activeContactDoc, contactDocument } from './contact-document.ts';
import { normaliseContact } from './normalise.ts';
import { CONTACT_CARD_SOURCE, upsertPerson, type UpsertOutcome } from './upsert.ts';

export const DEFAULT_CONTACT_SOURCE = 'host_contacts';

export interface ContactSyncOptions {
  /** Cards per people transaction (each card in its own savepoint). */
  groupSize?: number;
  /** Called after each group with the number of cards done. */
  onProgress?: (done: number, total: number) => void;
  /** A card that failed (counted as a conflict); for logs, which must not carry the card's data. */
  onCardError?: (externalIndex: number, err: unknown) => void;
}

/**
 * POST /catalog/contacts/ingest. Counts (each card lands in exactly one):
 * upserts — the person or its contact document changed; skipped — nothing changed (same card
 * again, or a delete of a card never seen / already deleted); deletes — a card removed;
 * conflicts — a card older than the stored version, or one the catalog rejected.
 * since_token_next = the change_token of the last card that has one, else the request's
 * since_token; it is stored per (source, device_id) (a null never erases a stored token).
 */
export async function ingestContacts(
  catalog: Catalog,
  req: ContactIngestRequestT,
  opts: ContactSyncOptions = {},
): Promise<ContactIngestResponseT> {
  const db: Database = catalog.db;
  const source = req.source?.trim() || DEFAULT_CONTACT_SOURCE;
  const region = catalog.phoneRegion;
  const counts = { accepted: 0, upserts: 0, deletes: 0, conflicts: 0, skipped: 0 };
  const blocked: ContactIngestResponseT['blocked'] = [];
  let tokenNext: string | null = req.since_token ?? null;
  const cards = req.people.map((p) => normaliseContact(p, region));
  for (const c of cards) if (c.change_token) tokenNext = c.change_token;
  const groupSize = opts.groupSize ?? 100;

  for (let g = 0; g < cards.length; g += groupSize) {
    const group = cards.slice(g, g + groupSize);
    const failures: { i: number; err: unknown }[] = [];
    const outcomes = await db.transaction(async (tx) => {
      const out: (UpsertOutcome | null)[] = [];
      const blocks = await readBlockList(tx);
      for (const card of group) {
        await tx.query('SAVEPOINT contact_card');
        try {
          out.push(await upsertPerson(tx, source, card, CONTACT_CARD_SOURCE, blocks));
          await tx.query('RELEASE SAVEPOINT contact_card');
        } catch (err) {
          await tx.query('ROLLBACK TO SAVEPOINT contact_card');
          failures.push({ i: out.length, err });
          out.push(null);
        }
      }
      return out;
    });
    // Concurrent syncs that merge the same people can deadlock; the victim's card is retried on
    // its own once the group's locks are gone.
    for (const f of failures) {
      let err = f.err;
      for (let attempt = 0; attempt < 4 && isRetryable(err); attempt++) {
        await sleep(10 + Math.random() * 40 * (attempt + 1));
        try {
          outcomes[f.i] = await db.transaction((tx) => upsertPerson(tx, source, group[f.i], CONTACT_CARD_SOURCE));
          err = null;
        } catch (e) {
          err = e;
        }
      }
      if (err) opts.onCardError?.(g + f.i, err);
    }

    const docs: { index: number; request: CatalogDocumentRequest }[] = [];
    for (let i = 0; i < group.length; i++) {
      const card = group[i];
      const o = outcomes[i];
      counts.accepted += 1;
      if (!o || o.status === 'stale') {
        counts.conflicts += 1;
      } else if (o.status === 'delete_unknown') {
        counts.skipped += 1;
      } else if (o.status === 'blocked') {
        counts.skipped += 1;
        blocked.push({ index: g + i, external_id: card.external_id, skipped: o.skipped! });
      } else if (o.status === 'deleted') {
        const docId = await activeContactDoc(db, source, card.external_id);
        if (docId) await catalog.deleteDocument(docId).catch(() => undefined);
        counts.deletes += 1;
      } else {
        docs.push({ index: i, request: contactDocument(source, card) });
      }
    }
    const results = await ingestDocuments(catalog, docs);
    for (const d of docs) {
      const r = results.get(d.index);
      if (!r) counts.conflicts += 1;
      else if (r.duplicate && outcomes[d.index]!.status === 'unchanged') counts.skipped += 1;
      else counts.upserts += 1;
    }
    opts.onProgress?.(Math.min(g + groupSize, cards.length), cards.length);
  }

  // A sync without any token does not erase the one stored before.
  await saveChangeToken(db, source, req.device_id, tokenNext);
  if (req.self_identifier) await rememberSelf(db, req.self_identifier, source, region);
  return { ...counts, blocked, since_token_next: tokenNext };
}

async function ingestDocuments(
  catalog: Catalog,
  docs: { index: number; request: CatalogDocumentRequest }[],
): Promise<Map<number, CatalogIngestResult>> {
  const out = new Map<number, CatalogIngestResult>();
  if (docs.length === 0) return out;
  if (docs.length > 1) {
    const key = sha256Hex(docs.map((d) => d.request.idempotency_key).sort().join('|'));
    const batch = await catalog.ingestBatch(docs, `contacts:${key}`);
    for (const item of batch.items) if (item.ok && item.result) out.set(item.index, item.result);
  }
  // Single documents, and batch items that failed (a deadlock with a concurrent merge looks
  // like any unexpected error there), go one by one with retries on deadlocks.
  for (const d of docs) {
    if (out.has(d.index)) continue;
    for (let attempt = 0; attempt < 4; attempt++) {
      try {
        out.set(d.index, await catalog.ingest(d.request));
        break;
      } catch (err) {
        if (!isRetryable(err)) break; // counted as a conflict by the caller
        await sleep(10 + Math.random() * 40 * (attempt + 1));
      }
    }
  }
  return out;
}

/** PostgreSQL deadlock and serialization failures: the transaction may simply be run again. */
function isRetryable(err: unknown): boolean {
  const code = (err as { code?: string } | null)?.code;
  return code === '40P01' || code === '40001';
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** self_identifier of a sync: the owner of that email or phone becomes the self person, if none is set. */
async function rememberSelf(db: Queryable, identifier: string, source: string, region: string): Promise<void> {
  const candidates = [canonicalIdentifier('email', identifier, region), canonicalIdentifier('phone', identifier, region)]
    .filter((c): c is { kind: IdentifierKind; value: string } => !!c);
  const owners = await identifierOwners(db, candidates);
  const owner = candidates.map((c) => owners.get(`${c.kind}\u0000${c.value}`)).find(Boolean);
  if (!owner) return;
  await db.query(
    `INSERT INTO system_settings (key, value) VALUES ('self_person_id', $1) ON CONFLICT (key) DO NOTHING`,
    [JSON.stringify({ self_person_id: owner, source, detected_at: new Date().toISOString() })],
  );
}
