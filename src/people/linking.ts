/**
 * Links documents' people[] to person records at ingest: each linkable identifier is
 * canonicalised, found (or a person is created for it) and linked with its role. Works on many
 * documents at once so a batch costs a handful of statements, not a handful per document.
 */
import type { Queryable } from '../db/types.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { newId } from '../util/ids.ts';
import { canonicalIdentifier, identifierKindOf, type IdentifierKind } from './identifiers.ts';

interface Resolved {
  kind: IdentifierKind;
  value: string;
  raw: string;
  displayName: string | null;
  label: string | null;
  role: string;
}

export interface PeopleLinkEntry {
  docId: string;
  people: DocumentPersonT[];
  /** Recorded as the person's source when the person is new (the document's source_type). */
  source: string;
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

const keyOf = (r: { kind: string; value: string }) => `${r.kind}\u0000${r.value}`;

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
      const k = keyOf(r);
      const prev = wanted.get(k);
      if (!prev || (!prev.displayName && r.displayName)) wanted.set(k, { ...r, source: e.source });
    }
  }
  const result = new Map<string, string[]>();
  if (wanted.size === 0) return result;
  const list = [...wanted.values()].sort((a, b) => (keyOf(a) < keyOf(b) ? -1 : 1));

  const found = await tx.query<{ kind: string; value_canonical: string; person_id: string; display_name: string }>(
    `SELECT DISTINCT ON (pi.kind, pi.value_canonical) pi.kind, pi.value_canonical, p.person_id, p.display_name
       FROM person_identifiers pi JOIN people p ON p.person_id = pi.person_id
      WHERE (pi.kind, pi.value_canonical) IN (SELECT * FROM unnest($1::text[], $2::text[]))
        AND p.merged_into IS NULL AND NOT p.deleted
      ORDER BY pi.kind, pi.value_canonical, pi.priority, p.created_at`,
    [list.map((w) => w.kind), list.map((w) => w.value)],
  );
  const personOf = new Map<string, string>();
  const renames: { id: string; name: string }[] = [];
  for (const row of found.rows) {
    const k = keyOf({ kind: row.kind, value: row.value_canonical });
    personOf.set(k, row.person_id);
    // A person first seen as a bare address gets a real name as soon as a source gives one.
    const w = wanted.get(k);
    if (w?.displayName && (row.display_name === w.raw || row.display_name === w.value)) {
      renames.push({ id: row.person_id, name: w.displayName });
    }
  }
  if (renames.length > 0) {
    await tx.query(
      `UPDATE people p SET display_name = x.name, updated_at = now()
         FROM unnest($1::uuid[], $2::text[]) AS x(id, name) WHERE p.person_id = x.id`,
      [renames.map((r) => r.id), renames.map((r) => r.name)],
    );
  }

  const created = list.filter((w) => !personOf.has(keyOf(w)));
  if (created.length > 0) {
    const ids = created.map(() => newId());
    await tx.query(
      `INSERT INTO people (person_id, display_name, source) SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])`,
      [ids, created.map((c) => c.displayName ?? c.raw), created.map((c) => c.source)],
    );
    await tx.query(
      `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical, label)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[]) ON CONFLICT DO NOTHING`,
      [ids, created.map((c) => c.kind), created.map((c) => c.raw), created.map((c) => c.value), created.map((c) => c.label)],
    );
    created.forEach((c, i) => personOf.set(keyOf(c), ids[i]));
  }

  const links = new Map<string, { doc: string; person: string; role: string }>();
  for (const e of perDoc) {
    for (const r of e.resolved) {
      const person = personOf.get(keyOf(r))!;
      links.set(`${e.docId}\u0000${person}\u0000${r.role}`, { doc: e.docId, person, role: r.role });
      const ids = result.get(e.docId) ?? [];
      if (!ids.includes(person)) ids.push(person);
      result.set(e.docId, ids);
    }
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
