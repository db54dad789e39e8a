/**
 * Links documents' people[] to person records at ingest: each linkable identifier is
 * canonicalised, found (or a person is created for it) and linked with its role. Works on many
 * documents at once so a batch costs a handful of statements, not a handful per document.
 *
 * Entries with the role `contact` describe one human (a contact card), so the identifiers of one
 * document's contact entries end on one person: when they are owned by several persons, those are
 * merged (merge.ts; the older person survives). Every identifier has one owner (unique index,
 * migration 040): an identifier another transaction creates at the same moment collides, and the
 * person of that transaction is used instead (ownership.ts).
 */
import type { Queryable } from '../db/types.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { newId } from '../util/ids.ts';
import { canonicalIdentifier, identifierKindOf, type IdentifierKind } from './identifiers.ts';
import { mergePeople } from './merge.ts';
import { claimIdentifiers, idKey, identifierOwners, oldestPerson } from './ownership.ts';

interface Resolved {
  kind: IdentifierKind;
  value: string;
  raw: string;
  displayName: string | null;
  label: string | null;
  role: string;
  /** The mailing list this identifier is the address of (people[].metadata.list), or null. */
  list: string | null;
}

export interface PeopleLinkEntry {
  docId: string;
  people: DocumentPersonT[];
  /** Recorded as the person's source when the person is new (the document's source_type). */
  source: string;
}

/** A people[] entry's `metadata.list` (a mailing list's id, issue 40), bounded and lower-cased; null when absent. */
function listIdOf(metadata: Record<string, unknown> | null | undefined): string | null {
  const v = metadata?.list;
  if (typeof v !== 'string') return null;
  const id = v.trim().toLowerCase();
  return id !== '' && id.length <= 300 ? id : null;
}

/** Canonical identifiers of a people[] array; entries that identify nobody are dropped. */
export function resolvePeople(people: DocumentPersonT[], region: string): Resolved[] {
  const out: Resolved[] = [];
  for (const p of people) {
    const kind = identifierKindOf(p.identifier_type ?? null, p.identifier);
    if (!kind) continue;
    const canon = canonicalIdentifier(kind, p.identifier, region);
    if (!canon) continue;
    out.push({
      kind: canon.kind,
      value: canon.value,
      raw: p.identifier.trim(),
      displayName: p.display_name?.trim() || null,
      label: p.label?.trim().toLowerCase() || null,
      role: p.role ?? 'participant',
      list: listIdOf(p.metadata),
    });
  }
  return out;
}

/**
 * One card, one human: the identifiers of a document's `contact` entries are put on one person,
 * merging the persons that own them. Returns the person.
 */
async function settleCard(tx: Queryable, docId: string, card: Resolved[], owners: Map<string, string>, source: string) {
  const details = { via: 'document', doc_id: docId };
  const cardOwners = [...new Set(card.map((c) => owners.get(idKey(c))).filter((o): o is string => !!o))];
  if (cardOwners.length === 0) {
    const person = newId();
    const name = card.find((c) => c.displayName)?.displayName ?? card[0].raw;
    await tx.query('INSERT INTO people (person_id, display_name, source) VALUES ($1, $2, $3)', [person, name, source]);
    return claimIdentifiers(tx, person, card, { fresh: true, reasonDetails: details });
  }
  const person = await oldestPerson(tx, cardOwners);
  for (const other of cardOwners) {
    if (other === person) continue;
    const via = card.find((c) => owners.get(idKey(c)) === other)!;
    await mergePeople(tx, person, other, `shared_${via.kind}:${via.value}`, details);
  }
  return claimIdentifiers(tx, person, card, { reasonDetails: details });
}

/** The owner of each identifier that has one, with the owner's display name. */
async function ownersWithNames(tx: Queryable, ids: { kind: string; value: string }[]): Promise<Map<string, { person: string; name: string }>> {
  const r = await tx.query<{ kind: string; value_canonical: string; person_id: string; display_name: string }>(
    `SELECT i.kind, i.value_canonical, i.person_id, p.display_name
       FROM person_identifiers i JOIN people p ON p.person_id = i.person_id
      WHERE (i.kind, i.value_canonical) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [ids.map((i) => i.kind), ids.map((i) => i.value)],
  );
  return new Map(r.rows.map((row) => [idKey({ kind: row.kind, value: row.value_canonical }), { person: row.person_id, name: row.display_name }]));
}

/**
 * Finds or creates the person of every identifier of every entry and links them to the
 * documents. Identifiers are handled in sorted order so concurrent batches lock rows in the same
 * order. Returns the linked person ids per document.
 */
export async function linkPeople(tx: Queryable, entries: PeopleLinkEntry[], region: string): Promise<Map<string, string[]>> {
  const perDoc = entries.map((e) => ({ ...e, resolved: resolvePeople(e.people, region) }));
  const wanted = new Map<string, Resolved & { source: string }>();
  for (const e of perDoc) {
    for (const r of e.resolved) {
      const k = idKey(r);
      const prev = wanted.get(k);
      if (!prev || (!prev.displayName && r.displayName)) wanted.set(k, { ...r, source: e.source });
    }
  }
  const result = new Map<string, string[]>();
  if (wanted.size === 0) return result;
  const list = [...wanted.values()].sort((a, b) => (idKey(a) < idKey(b) ? -1 : 1));
  const owners = await ownersWithNames(tx, list);
  let personOf = new Map([...owners].map(([k, o]) => [k, o.person]));

  // Contact cards whose identifiers are not (yet) all on one person. The usual card — one the
  // contact sync has already upserted — is settled and costs nothing here.
  let merged = false;
  for (const e of perDoc) {
    const seen = new Set<string>();
    const card = e.resolved.filter((r) => r.role === 'contact' && !seen.has(idKey(r)) && seen.add(idKey(r)));
    if (card.length < 2) continue;
    const owned = card.map((c) => personOf.get(idKey(c)));
    if (owned.every((o) => o && o === owned[0])) continue;
    const person = await settleCard(tx, e.docId, card, personOf, e.source);
    merged = true;
    for (const c of card) personOf.set(idKey(c), person);
  }
  // Merges may have moved identifiers of other entries too: read their owners again.
  if (merged) personOf = new Map([...personOf, ...(await identifierOwners(tx, list))]);

  // A person first seen as a bare address gets a real name as soon as a source gives one. Without merges
  // the names just read tell which persons still carry the bare address (usually none: no statement).
  const named = list.filter((w) => {
    if (!w.displayName || !personOf.has(idKey(w))) return false;
    if (merged) return true;
    const current = owners.get(idKey(w))!.name;
    return (current === w.raw || current === w.value) && current !== w.displayName;
  });
  if (named.length > 0) {
    await tx.query(
      `UPDATE people p SET display_name = n.name, updated_at = now()
         FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[]) AS n(person_id, name, raw, value)
        WHERE p.person_id = n.person_id AND (p.display_name = n.raw OR p.display_name = n.value)
          AND p.display_name <> n.name`,
      [named.map((w) => personOf.get(idKey(w))), named.map((w) => w.displayName), named.map((w) => w.raw), named.map((w) => w.value)],
    );
  }

  // Unknown identifiers: one new person each, created in one statement. An identifier another
  // transaction created meanwhile collides on the unique index; that person is used instead.
  const created = list.filter((w) => !personOf.has(idKey(w)));
  if (created.length > 0) {
    const ids = created.map(() => newId());
    await tx.query(
      `INSERT INTO people (person_id, display_name, source) SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])`,
      [ids, created.map((c) => c.displayName ?? c.raw), created.map((c) => c.source)],
    );
    const ins = await tx.query<{ kind: string; value_canonical: string }>(
      `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical, label)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])
       ON CONFLICT DO NOTHING RETURNING kind, value_canonical`,
      [ids, created.map((c) => c.kind), created.map((c) => c.raw), created.map((c) => c.value), created.map((c) => c.label)],
    );
    const inserted = new Set(ins.rows.map((r) => idKey({ kind: r.kind, value: r.value_canonical })));
    for (let i = 0; i < created.length; i++) {
      const c = created[i];
      personOf.set(idKey(c), inserted.has(idKey(c)) ? ids[i] : await claimIdentifiers(tx, ids[i], [c], { fresh: true }));
    }
  }

  const links = new Map<string, { doc: string; person: string; role: string }>();
  for (const e of perDoc) {
    for (const r of e.resolved) {
      const person = personOf.get(idKey(r))!;
      links.set(`${e.docId}\u0000${person}\u0000${r.role}`, { doc: e.docId, person, role: r.role });
      const ids = result.get(e.docId) ?? [];
      if (!ids.includes(person)) ids.push(person);
      result.set(e.docId, ids);
    }
  }
  // A mailing list's address is a list, not a person (issue 40): its row says so once, and stays a list.
  const lists = new Map<string, string>();
  for (const w of list) if (w.list !== null && personOf.has(idKey(w))) lists.set(personOf.get(idKey(w))!, w.list);
  for (const e of perDoc) for (const r of e.resolved) if (r.list !== null) lists.set(personOf.get(idKey(r))!, r.list);
  if (lists.size > 0) {
    const ids = [...lists.keys()].sort(); // one lock order for concurrent batches
    await tx.query(
      `UPDATE people p SET list_id = x.list_id, updated_at = now()
         FROM unnest($1::uuid[], $2::text[]) AS x(person_id, list_id)
        WHERE p.person_id = x.person_id AND p.list_id IS NULL`,
      [ids, ids.map((id) => lists.get(id)!)],
    );
  }

  const rows = [...links.values()];
  await tx.query(
    `INSERT INTO document_people (doc_id, person_id, role)
     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[]) ON CONFLICT DO NOTHING`,
    [rows.map((r) => r.doc), rows.map((r) => r.person), rows.map((r) => r.role)],
  );
  return result;
}

/** One document's people (see linkPeople). */
export async function linkDocumentPeople(
  tx: Queryable,
  docId: string,
  people: DocumentPersonT[],
  source: string,
  region: string,
): Promise<string[]> {
  return (await linkPeople(tx, [{ docId, people, source }], region)).get(docId) ?? [];
}
