/**
 * Links a document's people[] to person records at ingest: each linkable identifier is
 * canonicalised, found (or a person is created for it) and linked with its role. Entries with the
 * role `contact` describe one human (a contact card), so their identifiers are one person: when
 * they are owned by several persons, those are merged (ownership.ts).
 */
import type { Queryable } from '../db/types.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { newId } from '../util/ids.ts';
import { canonicalIdentifier, identifierKindOf, type IdentifierKind } from './identifiers.ts';
import { claimIdentifiers, idKey, identifierOwners, oldestPerson } from './ownership.ts';
import { mergePeople } from './merge.ts';

interface Resolved {
  kind: IdentifierKind;
  value: string;
  raw: string;
  displayName: string | null;
  label: string | null;
  role: string;
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
    });
  }
  return out;
}

/**
 * Finds or creates the person of every identifier and links them to the document.
 * Returns the person ids in people[] order (deduplicated).
 */
export async function linkDocumentPeople(
  tx: Queryable,
  docId: string,
  people: DocumentPersonT[],
  source: string,
  region: string,
): Promise<string[]> {
  const resolved = resolvePeople(people, region);
  if (resolved.length === 0) return [];
  const unique = new Map<string, Resolved>();
  for (const r of resolved) if (!unique.has(idKey(r))) unique.set(idKey(r), r);
  const owners = await identifierOwners(tx, [...unique.values()]);
  const personOf = new Map<string, string>(owners);

  // One card, one human: every identifier of the `contact` entries ends on one person.
  const card = [...unique.values()].filter((r) => resolved.some((x) => x.role === 'contact' && idKey(x) === idKey(r)));
  const cardOwned = card.map((c) => owners.get(idKey(c)));
  // The usual case (a card the contact sync has already upserted): one owner holds them all.
  const settled = cardOwned.every((o) => o && o === cardOwned[0]);
  if (card.length > 1 && !settled) {
    const cardOwners = [...new Set(card.map((c) => owners.get(idKey(c))).filter((o): o is string => !!o))];
    let person: string;
    if (cardOwners.length === 0) {
      person = newId();
      const name = card.find((c) => c.displayName)?.displayName ?? card[0].raw;
      await tx.query('INSERT INTO people (person_id, display_name, source) VALUES ($1, $2, $3)', [person, name, source]);
      person = await claimIdentifiers(tx, person, card, { fresh: true, reasonDetails: { via: 'document', doc_id: docId } });
    } else {
      person = await oldestPerson(tx, cardOwners);
      for (const other of cardOwners) {
        if (other === person) continue;
        const via = card.find((c) => owners.get(idKey(c)) === other)!;
        await mergePeople(tx, person, other, `shared_${via.kind}:${via.value}`, { via: 'document', doc_id: docId });
      }
      person = await claimIdentifiers(tx, person, card, { reasonDetails: { via: 'document', doc_id: docId } });
    }
    for (const c of card) personOf.set(idKey(c), person);
    // Merges may have moved other identifiers of this document too: read their owners again.
    for (const [k, owner] of await identifierOwners(tx, [...unique.values()])) personOf.set(k, owner);
  }

  // A person first seen as a bare address gets a real name as soon as a source gives one.
  const named = [...unique.values()].filter((w) => w.displayName && personOf.has(idKey(w)));
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
  const created = [...unique.values()].filter((w) => !personOf.has(idKey(w)));
  if (created.length > 0) {
    created.sort((a, b) => (idKey(a) < idKey(b) ? -1 : 1));
    const ids = created.map(() => newId());
    await tx.query(
      `INSERT INTO people (person_id, display_name, source)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])`,
      [ids, created.map((c) => c.displayName ?? c.raw), created.map(() => source)],
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
      if (inserted.has(idKey(c))) {
        personOf.set(idKey(c), ids[i]);
      } else {
        personOf.set(idKey(c), await claimIdentifiers(tx, ids[i], [c], { fresh: true }));
      }
    }
  }

  const links = new Map<string, { person: string; role: string }>();
  for (const r of resolved) {
    const person = personOf.get(idKey(r))!;
    links.set(`${person}\u0000${r.role}`, { person, role: r.role });
  }
  const rows = [...links.values()];
  await tx.query(
    `INSERT INTO document_people (doc_id, person_id, role)
     SELECT $1, * FROM unnest($2::uuid[], $3::text[]) ON CONFLICT DO NOTHING`,
    [docId, rows.map((r) => r.person), rows.map((r) => r.role)],
  );
  return [...new Set(rows.map((r) => r.person))];
}
