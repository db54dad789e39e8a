/**
 * One contact card into the people tables (spec-notes A4.4 "people upsert rules"): by (source, external_id) in
 * people_source_map, with versions and content hashes so an unchanged card changes nothing and an older one never
 * overwrites a newer; identifiers that already belong to another person merge the two; a deleted card takes away
 * only what it gave, or the person when nothing else knows it.
 */
import type { Queryable } from '../db/types.ts';
import { judgeCard, readBlockList, type BlockList, type BlockReason } from '../catalog/blocklist.ts';
import { newId } from '../util/ids.ts';
import { applyCard, asCardFields, type CardFields } from '../identity/card-fields.ts';
import { resolvePersonId } from '../identity/merge.ts';
import { claimIdentifiers, identifierOwners, oldestPerson } from '../identity/ownership.ts';
import { contentHash, fieldsOf, identifiersOf, type PersonInput } from './normalise.ts';

export type UpsertStatus = 'upserted' | 'unchanged' | 'stale' | 'deleted' | 'delete_unknown' | 'blocked';

export interface UpsertOutcome {
  status: UpsertStatus;
  person_id: string | null;
  version: number;
  content_sha256: string;
  /** Why a `blocked` card was kept out (a forget with block: true). */
  skipped?: BlockReason;
}

/** The source a card is judged by on the block list: contact cards are `contact` documents. */
export const CONTACT_CARD_SOURCE = { source_type: 'contact', source_account_id: null };

/**
 * Is the person known other than through this card: another live source record, or a link from
 * an active document that is not a contact card?
 */
async function knownElsewhere(tx: Queryable, personId: string, source: string, externalId: string): Promise<boolean> {
  const r = await tx.query<{ known: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM people_source_map
                     WHERE person_id = $1 AND NOT deleted AND NOT (source = $2 AND external_id = $3))
         OR EXISTS (SELECT 1 FROM document_people dp JOIN documents d ON d.doc_id = dp.doc_id
                     WHERE dp.person_id = $1 AND d.is_active_version AND d.source_type <> 'contact') AS known`,
    [personId, source, externalId],
  );
  return r.rows[0].known;
}

/**
 * Upserts one card into the people tables inside the caller's transaction (spec-notes A4.4
 * "people upsert rules", with merge on overlap instead of Haven's append-only ownership).
 * A card the block list keeps out (`blockedAs`: the source it is judged by; `blocks`: the list when
 * the caller has read it) changes nothing and comes back `blocked`; deleting a card is always allowed.
 */
export async function upsertPerson(
  tx: Queryable,
  source: string,
  p: PersonInput,
  blockedAs: { source_type: string; source_account_id?: string | null },
  blocks?: BlockList | null,
): Promise<UpsertOutcome> {
  const hash = contentHash(p);
  const mapRow = await tx.query<{
    person_id: string;
    version: number;
    content_sha256: string | null;
    deleted: boolean;
    fields: Partial<CardFields> | null;
  }>(
    `SELECT person_id, version, content_sha256, deleted, fields FROM people_source_map
      WHERE source = $1 AND external_id = $2 FOR UPDATE`,
    [source, p.external_id],
  );
  const map = mapRow.rows[0];
  let person = map ? await resolvePersonId(tx, map.person_id) : null;
  const out = (status: UpsertStatus, personId: string | null): UpsertOutcome => ({
    status,
    person_id: personId,
    version: p.version,
    content_sha256: hash,
  });
  if (map && p.version < map.version) return out('stale', person);
  if (!p.deleted) {
    const reason = judgeCard(blocks === undefined ? await readBlockList(tx) : blocks, blockedAs, identifiersOf(p));
    if (reason) return { ...out('blocked', null), skipped: reason };
  }

  if (p.deleted) {
    if (!map || map.deleted) return out('delete_unknown', person);
    await tx.query(
      `UPDATE people_source_map SET deleted = true, version = $3, content_sha256 = $4, updated_at = now()
        WHERE source = $1 AND external_id = $2`,
      [source, p.external_id, p.version, hash],
    );
    const kept = person && (await knownElsewhere(tx, person, source, p.external_id));
    if (person && kept && map.fields) {
      // The person stays (other cards or documents know it): it loses only what this card gave.
      await writeFields(tx, person, await cardChange(tx, person, source, p.external_id, asCardFields(map.fields), null));
    } else if (person && !kept) {
      // Nobody else knows this person: it goes, and its identifiers are free for whoever comes next.
      await tx.query('UPDATE people SET deleted = true, version = $2, updated_at = now() WHERE person_id = $1', [
        person,
        p.version,
      ]);
      await tx.query('DELETE FROM person_identifiers WHERE person_id = $1', [person]);
      await tx.query('DELETE FROM person_addresses WHERE person_id = $1', [person]);
      await tx.query('DELETE FROM person_urls WHERE person_id = $1', [person]);
    }
    return out('deleted', person);
  }

  if (map && !map.deleted && map.content_sha256 === hash && person) {
    const live = await tx.query('SELECT 1 FROM people WHERE person_id = $1 AND NOT deleted', [person]);
    if (live.rows.length > 0) {
      if (p.version !== map.version) {
        await tx.query('UPDATE people_source_map SET version = $3 WHERE source = $1 AND external_id = $2', [
          source,
          p.external_id,
          p.version,
        ]);
      }
      return out('unchanged', person);
    }
  }

  const ids = identifiersOf(p);
  const fields = fieldsOf(p);
  let fresh = false;
  if (!person) {
    const owners = [...new Set((await identifierOwners(tx, ids)).values())];
    const oldest = owners.length > 0 ? await oldestPerson(tx, owners) : null;
    if (oldest && !(await hasLiveCards(tx, [oldest]))) {
      // A person known only from documents: the card describes it (other owners merge into it).
      person = oldest;
    } else {
      // New, or sharing identifiers with another card's person: a person of its own, which the
      // identifier claim below merges into that person (recorded in person_merges).
      person = newId();
      fresh = true;
      await tx.query('INSERT INTO people (person_id, display_name, source, version) VALUES ($1, $2, $3, $4)', [
        person,
        p.display_name,
        source,
        p.version,
      ]);
    }
  }
  // The source map row first, so a merge below carries it to the survivor.
  await tx.query(
    `INSERT INTO people_source_map (source, external_id, person_id, version, content_sha256, deleted, fields)
     VALUES ($1, $2, $3, $4, $5, false, $6)
     ON CONFLICT (source, external_id) DO UPDATE
       SET person_id = EXCLUDED.person_id, version = EXCLUDED.version, content_sha256 = EXCLUDED.content_sha256,
           deleted = false, fields = EXCLUDED.fields, updated_at = now()`,
    [source, p.external_id, person, p.version, hash, JSON.stringify(fields)],
  );
  person = await claimIdentifiers(tx, person, ids, {
    refresh: true,
    reasonDetails: { via: 'contact', source, external_id: p.external_id, fresh },
  });
  // What this card said before (a record from before migration 080: the person's fields, as the
  // card then overwrote them); nothing when the card is new to the person or was deleted.
  const current = await readFields(tx, person);
  const old = map && !map.deleted && !fresh ? (map.fields ? asCardFields(map.fields) : current) : null;
  await writeFields(tx, person, await cardChange(tx, person, source, p.external_id, old, fields, current));
  await tx.query(
    'UPDATE people SET version = GREATEST(version, $2), deleted = false, updated_at = now() WHERE person_id = $1',
    [person, p.version],
  );
  if (p.addresses.length > 0) {
    await tx.query(
      `INSERT INTO person_addresses (person_id, label, street, city, region, postal_code, country)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[])
       ON CONFLICT (person_id, label) DO UPDATE SET street = EXCLUDED.street, city = EXCLUDED.city,
         region = EXCLUDED.region, postal_code = EXCLUDED.postal_code, country = EXCLUDED.country`,
      [
        person,
        p.addresses.map((a) => a.label),
        p.addresses.map((a) => a.street),
        p.addresses.map((a) => a.city),
        p.addresses.map((a) => a.region),
        p.addresses.map((a) => a.postal_code),
        p.addresses.map((a) => a.country),
      ],
    );
  }
  if (p.urls.length > 0) {
    await tx.query(
      `INSERT INTO person_urls (person_id, label, url) SELECT $1, * FROM unnest($2::text[], $3::text[])
       ON CONFLICT (person_id, label) DO UPDATE SET url = EXCLUDED.url`,
      [person, p.urls.map((u) => u.label), p.urls.map((u) => u.url)],
    );
  }
  return out('upserted', person);
}

async function hasLiveCards(tx: Queryable, personIds: string[]): Promise<boolean> {
  const r = await tx.query('SELECT 1 FROM people_source_map WHERE person_id = ANY($1::uuid[]) AND NOT deleted LIMIT 1', [
    personIds,
  ]);
  return r.rows.length > 0;
}

async function readFields(tx: Queryable, personId: string): Promise<CardFields> {
  const r = await tx.query<Record<string, any>>(
    'SELECT display_name, given_name, family_name, organization, nicknames, notes, photo_hash FROM people WHERE person_id = $1',
    [personId],
  );
  return asCardFields(r.rows[0]);
}

/** The person's fields once one card's contribution changes from `old` to `next`. */
async function cardChange(
  tx: Queryable,
  personId: string,
  source: string,
  externalId: string,
  old: CardFields | null,
  next: CardFields | null,
  current?: CardFields,
): Promise<CardFields> {
  const others = await tx.query<{ fields: Partial<CardFields> | null }>(
    `SELECT fields FROM people_source_map
      WHERE person_id = $1 AND NOT deleted AND NOT (source = $2 AND external_id = $3)
      ORDER BY created_at, source, external_id`,
    [personId, source, externalId],
  );
  return applyCard(current ?? (await readFields(tx, personId)), old, next, {
    sole: others.rows.length === 0,
    others: others.rows.filter((r) => r.fields).map((r) => asCardFields(r.fields)),
  });
}

async function writeFields(tx: Queryable, personId: string, f: CardFields): Promise<void> {
  await tx.query(
    `UPDATE people SET display_name = $2, given_name = $3, family_name = $4, organization = $5, nicknames = $6,
            notes = $7, photo_hash = $8, updated_at = now()
      WHERE person_id = $1`,
    [personId, f.display_name, f.given_name, f.family_name, f.organization, f.nicknames, f.notes, f.photo_hash],
  );
}
