/**
 * Contact synchronisation (gateway spec 4.4, spec-notes A4.4): every contact card is upserted into
 * the people tables by (source, external_id) and stored as a `contact` document through the
 * catalog. Versions, content hashes and deletions are kept per (source, external_id) in
 * people_source_map, so re-sending unchanged cards changes nothing and an older version never
 * overwrites a newer one. Identifiers that already belong to another person merge the two.
 */
import type { Catalog } from '../catalog/catalog.ts';
import type { CatalogDocumentRequest, CatalogIngestResult } from '../catalog/types.ts';
import type { Database, Queryable } from '../db/types.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import type {
  ContactAddressT,
  ContactIngestRequestT,
  ContactIngestResponseT,
  ContactUrlT,
  ContactValueT,
  PersonPayloadT,
} from '../schemas/people.ts';
import { judgeCard, readBlockList, type BlockList, type BlockReason } from '../catalog/blocklist.ts';
import { canonicalJson, sha256Hex } from '../util/hash.ts';
import { newId } from '../util/ids.ts';
import { canonicalEmail, canonicalIdentifier, canonicalPhone, type IdentifierKind } from '../identity/identifiers.ts';
import { applyCard, asCardFields, type CardFields } from '../identity/card-fields.ts';
import { resolvePersonId } from '../identity/merge.ts';
import { claimIdentifiers, identifierOwners, oldestPerson, type IdentifierInput } from '../identity/ownership.ts';

export const DEFAULT_CONTACT_SOURCE = 'host_contacts';

/** A contact card in the form the people tables keep; emails/phones already canonical. */
export interface PersonInput {
  external_id: string;
  display_name: string;
  given_name: string | null;
  family_name: string | null;
  organization: string | null;
  nicknames: string[];
  notes: string | null;
  photo_hash: string | null;
  emails: NormalisedValue[];
  phones: NormalisedValue[];
  /** Other identifiers (chat handles, social ids, short codes). */
  others: IdentifierInput[];
  addresses: Required<{ [K in keyof ContactAddressT]: string | null }>[];
  urls: { label: string; url: string }[];
  version: number;
  deleted: boolean;
  change_token: string | null;
}

export interface NormalisedValue {
  value: string;
  value_raw: string;
  label: string | null;
  priority: number;
  verified: boolean;
  /** Kind of the canonical identifier (a phone may turn out to be a short code); null if unusable. */
  kind: IdentifierKind | null;
}

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

const clean = (s: string | null | undefined): string | null => {
  const t = s?.trim();
  return t ? t : null;
};
const labelOf = (s: string | null | undefined) => clean(s)?.toLowerCase() ?? null;

function normaliseValues(values: ContactValueT[] | null | undefined, kind: 'email' | 'phone', region: string) {
  const out: NormalisedValue[] = [];
  const seen = new Set<string>();
  for (const v of values ?? []) {
    const raw = clean(v.value_raw) ?? v.value.trim();
    let canon: { kind: IdentifierKind; value: string } | null = null;
    if (kind === 'email') {
      const e = canonicalEmail(v.value) ?? canonicalEmail(raw);
      canon = e ? { kind: 'email', value: e } : null;
    } else {
      canon = canonicalPhone(v.value, region) ?? canonicalPhone(raw, region);
    }
    const value = canon?.value ?? v.value.trim();
    if (seen.has(value)) continue;
    seen.add(value);
    out.push({
      value,
      value_raw: raw,
      label: labelOf(v.label),
      priority: v.priority ?? 100,
      verified: v.verified ?? true,
      kind: canon?.kind ?? null,
    });
  }
  return out;
}

/** A PersonPayloadModel in canonical form; the display name falls back to the name parts. */
export function normaliseContact(p: PersonPayloadT, region: string): PersonInput {
  const emails = normaliseValues(p.emails, 'email', region);
  const phones = normaliseValues(p.phones, 'phone', region);
  const given = clean(p.given_name);
  const family = clean(p.family_name);
  const organization = clean(p.organization);
  const display =
    clean(p.display_name) ??
    (clean([given, family].filter(Boolean).join(' ')) || organization || emails[0]?.value || phones[0]?.value_raw || p.external_id);
  const labels = new Map<string, number>();
  const uniqueLabel = (l: string | null) => {
    const base = l ?? 'other';
    const n = (labels.get(base) ?? 0) + 1;
    labels.set(base, n);
    return n === 1 ? base : `${base}_${n}`;
  };
  const addresses = (p.addresses ?? [])
    .map((a) => ({
      label: labelOf(a.label),
      street: clean(a.street),
      city: clean(a.city),
      region: clean(a.region),
      postal_code: clean(a.postal_code),
      country: clean(a.country),
    }))
    .filter((a) => a.street || a.city || a.region || a.postal_code || a.country)
    .map((a) => ({ ...a, label: uniqueLabel(a.label) }));
  labels.clear();
  const urls = (p.urls ?? [])
    .map((u: ContactUrlT) => ({ label: labelOf(u.label), url: clean(u.url) ?? clean(u.value) }))
    .filter((u): u is { label: string | null; url: string } => !!u.url)
    .map((u) => ({ label: uniqueLabel(u.label), url: u.url }));
  return {
    external_id: p.external_id.trim(),
    display_name: display,
    given_name: given,
    family_name: family,
    organization,
    nicknames: [...new Set((p.nicknames ?? []).map((n) => n.trim()).filter(Boolean))],
    notes: clean(p.notes),
    photo_hash: clean(p.photo_hash),
    emails,
    phones,
    others: [],
    addresses,
    urls,
    version: p.version ?? 1,
    deleted: p.deleted ?? false,
    change_token: clean(p.change_token),
  };
}

/** What the card says, without version and change token: equal hashes mean nothing changed. */
export function contentHash(p: PersonInput): string {
  const { version: _v, change_token: _c, ...content } = p;
  return sha256Hex(canonicalJson(content));
}

function identifiersOf(p: PersonInput): IdentifierInput[] {
  const out: IdentifierInput[] = [];
  for (const v of [...p.emails, ...p.phones]) {
    if (!v.kind) continue;
    out.push({ kind: v.kind, value: v.value, raw: v.value_raw, label: v.label, priority: v.priority, verified: v.verified });
  }
  return [...out, ...p.others];
}

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

/** The person fields a card states. */
function fieldsOf(p: PersonInput): CardFields {
  return {
    display_name: p.display_name,
    given_name: p.given_name,
    family_name: p.family_name,
    organization: p.organization,
    nicknames: p.nicknames,
    notes: p.notes,
    photo_hash: p.photo_hash,
  };
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

// -------------------------------------------------------------------------------------------------
// Contact documents

/** The contact document's text (spec-notes A4.4 layout). */
export function contactText(p: PersonInput): string {
  const lines: string[] = [];
  if (p.display_name) lines.push(p.display_name);
  const name = [p.given_name, p.family_name].filter(Boolean).join(' ');
  if (name) lines.push(`Name: ${name}`);
  if (p.organization) lines.push(`Organization: ${p.organization}`);
  if (p.nicknames.length) lines.push(`Nicknames: ${p.nicknames.join(', ')}`);
  for (const e of p.emails) lines.push(`Email: ${e.value}`);
  for (const ph of p.phones) lines.push(`Phone: ${ph.value}`);
  for (const a of p.addresses) {
    const parts = [a.street, a.city, a.region, a.postal_code, a.country].filter(Boolean);
    if (parts.length) lines.push(`Address: ${parts.join(', ')}`);
  }
  for (const u of p.urls) lines.push(`URL: ${u.url}`);
  if (p.notes) lines.push(`Notes: ${p.notes}`);
  return lines.length ? lines.join('\n') : `Contact ${p.external_id}`;
}

export function contactExternalId(source: string, externalId: string): string {
  return `contact:${source}:${externalId}`;
}

/** The catalog request of a contact card: source_type contact, metadata.contact, people from identifiers. */
export function contactDocument(source: string, p: PersonInput, now = new Date()): CatalogDocumentRequest {
  const externalId = contactExternalId(source, p.external_id);
  const text = contactText(p);
  const textSha = sha256Hex(text);
  const contact = {
    display_name: p.display_name,
    given_name: p.given_name,
    family_name: p.family_name,
    organization: p.organization,
    nicknames: p.nicknames,
    notes: p.notes,
    photo_hash: p.photo_hash,
    version: p.version,
    deleted: p.deleted,
    emails: p.emails.map(({ kind: _k, ...v }) => v),
    phones: p.phones.map(({ kind: _k, ...v }) => v),
    addresses: p.addresses,
    urls: p.urls,
  };
  const people: DocumentPersonT[] = [
    ...p.emails.map((e) => ({ identifier: e.value_raw, identifier_type: 'email', role: 'contact' as const, label: e.label, display_name: p.display_name })),
    ...p.phones.map((ph) => ({ identifier: ph.value_raw, identifier_type: ph.kind === 'shortcode' ? 'shortcode' : 'phone', role: 'contact' as const, label: ph.label, display_name: p.display_name })),
    { identifier: p.display_name, identifier_type: 'name', role: 'contact' as const, display_name: p.display_name },
  ];
  // Haven keys on text, version and deletion only; the card's hash is added so that a change the
  // text does not show (a label, a priority) still makes a new version.
  const idempotency = sha256Hex(`${externalId}:${textSha}:${p.version}:${p.deleted ? 'True' : 'False'}:${contentHash(p)}`);
  return {
    idempotency_key: idempotency,
    source_type: 'contact',
    source_id: externalId,
    external_id: externalId,
    source_provider: source,
    content_sha256: textSha,
    text,
    title: p.display_name || p.organization || p.external_id,
    content_timestamp: now.toISOString(),
    content_timestamp_type: 'modified',
    mime_type: 'text/plain',
    people,
    metadata: { source: 'contacts', text_sha256: textSha, contact, change_token: p.change_token },
    facet_overrides: { has_attachments: false, attachment_count: 0 },
  };
}

/** The active contact document of a card, if any. */
async function activeContactDoc(db: Queryable, source: string, externalId: string): Promise<string | null> {
  const r = await db.query<{ doc_id: string }>(
    `SELECT doc_id FROM documents WHERE source_type = 'contact' AND external_id = $1 AND is_active_version LIMIT 1`,
    [contactExternalId(source, externalId)],
  );
  return r.rows[0]?.doc_id ?? null;
}

// -------------------------------------------------------------------------------------------------
// The sync call

export interface ContactSyncOptions {
  /** Cards per people transaction (each card in its own savepoint). */
  groupSize?: number;
  /** Called after each group with the number of cards done. */
  onProgress?: (done: number, total: number) => void;
  /** A card that failed (counted as a conflict); for logs, which must not carry the card's data. */
  onCardError?: (externalIndex: number, err: unknown) => void;
}

export async function getChangeToken(db: Queryable, source: string, deviceId: string) {
  const r = await db.query<{ change_token_b64: string | null; updated_at: Date }>(
    'SELECT change_token_b64, updated_at FROM source_change_tokens WHERE source = $1 AND device_id = $2',
    [source, deviceId],
  );
  const row = r.rows[0];
  return row ? { change_token: row.change_token_b64, updated_at: new Date(row.updated_at).toISOString() } : null;
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
  await db.query(
    `INSERT INTO source_change_tokens (source, device_id, change_token_b64, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (source, device_id) DO UPDATE
       SET change_token_b64 = coalesce(EXCLUDED.change_token_b64, source_change_tokens.change_token_b64),
           updated_at = now()`,
    [source, req.device_id, tokenNext],
  );
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

// -------------------------------------------------------------------------------------------------
// v2 person envelopes

export interface PersonPayloadV2 {
  external_id: string;
  display_name: string;
  given_name?: string | null;
  family_name?: string | null;
  organization?: string | null;
  nicknames?: string[] | null;
  notes?: string | null;
  photo_hash?: string | null;
  change_token?: string | null;
  version?: number;
  deleted?: boolean;
  identifiers?: { kind: string; value_raw: string; value_canonical?: string | null; label?: string | null; priority?: number | null; verified?: boolean | null }[] | null;
}

/**
 * A v2 person payload as a card (spec-notes A2.5): phone and chat-handle identifiers that read as
 * phones become phones, email-like ones emails, short codes and social ids stay identifiers of
 * their kind, and kinds we cannot link are kept in the notes as `<kind>:<raw>`.
 */
export function personFromV2(p: PersonPayloadV2, region: string): PersonInput {
  const base = normaliseContact(
    { external_id: p.external_id, display_name: p.display_name, given_name: p.given_name, family_name: p.family_name,
      organization: p.organization, nicknames: p.nicknames, notes: p.notes, photo_hash: p.photo_hash,
      change_token: p.change_token, version: p.version ?? 1, deleted: p.deleted ?? false },
    region,
  );
  const unlinkable: string[] = [];
  for (const i of p.identifiers ?? []) {
    const kind = i.kind.trim().toLowerCase();
    const given = (i.value_canonical ?? '').trim() || i.value_raw;
    const value = { value: given, value_raw: i.value_raw, label: i.label ?? null, priority: i.priority ?? 100, verified: i.verified ?? true };
    if (kind === 'email' || ((kind === 'imessage' || kind === 'chatapp') && given.includes('@'))) {
      base.emails.push(...normaliseValues([value], 'email', region));
    } else if (kind === 'phone' || kind === 'shortcode' || ((kind === 'imessage' || kind === 'chatapp') && canonicalPhone(given, region))) {
      base.phones.push(...normaliseValues([value], 'phone', region));
    } else if (kind === 'chatapp' || kind === 'imessage' || kind === 'social') {
      const c = canonicalIdentifier(kind === 'social' ? 'social' : 'chatapp', given, region);
      if (c) base.others.push({ kind: c.kind, value: c.value, raw: i.value_raw, label: value.label, priority: value.priority, verified: value.verified });
    } else {
      unlinkable.push(`${kind}:${i.value_raw}`);
    }
  }
  if (unlinkable.length) base.notes = [base.notes, unlinkable.join('; ')].filter(Boolean).join('\n');
  return base;
}

/** `<source_type>:<provider or default>:<account or default>` (spec-notes A2.5). */
export function v2PeopleSource(s: { source_type: string; source_provider?: string | null; source_account_id?: string | null }): string {
  return `${s.source_type}:${s.source_provider || 'default'}:${s.source_account_id || 'default'}`;
}
