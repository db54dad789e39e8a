/**
 * Links a document's people[] to person records at ingest: each linkable identifier is
 * canonicalised, found (or a person is created for it) and linked with its role.
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
  const key = (r: { kind: string; value: string }) => `${r.kind}\u0000${r.value}`;
  const unique = new Map<string, Resolved>();
  for (const r of resolved) if (!unique.has(key(r))) unique.set(key(r), r);
  const wanted = [...unique.values()];

  const found = await tx.query<{ kind: string; value_canonical: string; person_id: string; display_name: string }>(
    `SELECT DISTINCT ON (pi.kind, pi.value_canonical) pi.kind, pi.value_canonical, p.person_id, p.display_name
       FROM person_identifiers pi JOIN people p ON p.person_id = pi.person_id
      WHERE (pi.kind, pi.value_canonical) IN (SELECT * FROM unnest($1::text[], $2::text[]))
        AND p.merged_into IS NULL AND NOT p.deleted
      ORDER BY pi.kind, pi.value_canonical, pi.priority, p.created_at`,
    [wanted.map((w) => w.kind), wanted.map((w) => w.value)],
  );
  const personOf = new Map<string, string>();
  for (const row of found.rows) {
    personOf.set(key({ kind: row.kind, value: row.value_canonical }), row.person_id);
    // A person first seen as a bare address gets a real name as soon as a source gives one.
    const w = unique.get(key({ kind: row.kind, value: row.value_canonical }));
    if (w?.displayName && (row.display_name === w.raw || row.display_name === w.value)) {
      await tx.query('UPDATE people SET display_name = $2, updated_at = now() WHERE person_id = $1', [
        row.person_id,
        w.displayName,
      ]);
    }
  }

  const created = wanted.filter((w) => !personOf.has(key(w)));
  if (created.length > 0) {
    const ids = created.map(() => newId());
    await tx.query(
      `INSERT INTO people (person_id, display_name, source)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[])`,
      [ids, created.map((c) => c.displayName ?? c.raw), created.map(() => source)],
    );
    await tx.query(
      `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical, label)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])
       ON CONFLICT DO NOTHING`,
      [ids, created.map((c) => c.kind), created.map((c) => c.raw), created.map((c) => c.value), created.map((c) => c.label)],
    );
    created.forEach((c, i) => personOf.set(key(c), ids[i]));
  }

  const links = new Map<string, { person: string; role: string }>();
  for (const r of resolved) {
    const person = personOf.get(key(r))!;
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
