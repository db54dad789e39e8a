/**
 * Identifier ownership: every (kind, canonical value) belongs to one person (unique index, migration
 * 040). Adding an identifier that another person owns means both are the same human, so they are
 * merged; the older person survives. Concurrent transactions that create the same identifier
 * collide on the index: the loser waits for the winner, sees its row and links or merges.
 */
import type { Queryable } from '../db/types.ts';
import type { IdentifierKind } from './identifiers.ts';
import { mergePeople } from './merge.ts';

export interface IdentifierInput {
  kind: IdentifierKind;
  /** Canonical value (E.164, lower-cased email, …). */
  value: string;
  raw: string;
  label?: string | null;
  priority?: number | null;
  verified?: boolean | null;
}

export const idKey = (i: { kind: string; value: string }) => `${i.kind}\u0000${i.value}`;

/** Sorted so that concurrent inserts of overlapping sets take index locks in the same order. */
function sortIdentifiers(ids: IdentifierInput[]): IdentifierInput[] {
  const unique = new Map<string, IdentifierInput>();
  for (const i of ids) if (!unique.has(idKey(i))) unique.set(idKey(i), i);
  return [...unique.values()].sort((a, b) => (idKey(a) < idKey(b) ? -1 : idKey(a) > idKey(b) ? 1 : 0));
}

/** Owners of identifiers, keyed by idKey. */
export async function identifierOwners(tx: Queryable, ids: { kind: string; value: string }[]): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  if (ids.length === 0) return out;
  const r = await tx.query<{ kind: string; value_canonical: string; person_id: string }>(
    `SELECT kind, value_canonical, person_id FROM person_identifiers
      WHERE (kind, value_canonical) IN (SELECT * FROM unnest($1::text[], $2::text[]))`,
    [ids.map((i) => i.kind), ids.map((i) => i.value)],
  );
  for (const row of r.rows) out.set(idKey({ kind: row.kind, value: row.value_canonical }), row.person_id);
  return out;
}

/** The person created first (ties: lowest id) survives a merge: old links stay where they are. */
export async function oldestPerson(tx: Queryable, ids: string[]): Promise<string> {
  const r = await tx.query<{ person_id: string }>(
    'SELECT person_id FROM people WHERE person_id = ANY($1::uuid[]) ORDER BY created_at, person_id LIMIT 1',
    [[...new Set(ids)]],
  );
  return r.rows[0]?.person_id ?? ids[0];
}

/**
 * Inserts identifiers for a person (with `refresh`, label, priority and raw value are updated
 * when the person already has them: a contact card is the authority on those). Identifiers owned by someone else trigger a merge (older person survives);
 * `fresh` marks a person created by this transaction: if every identifier turns out to be owned
 * already, the fresh row is dropped and the owner returned, so no empty person is left behind.
 * Returns the person id that finally holds the identifiers.
 */
export async function claimIdentifiers(
  tx: Queryable,
  personId: string,
  ids: IdentifierInput[],
  opts: { fresh?: boolean; refresh?: boolean; reasonDetails?: Record<string, unknown> } = {},
): Promise<string> {
  const wanted = sortIdentifiers(ids);
  if (wanted.length === 0) return personId;
  let current = personId;
  for (let attempt = 0; attempt < 3; attempt++) {
    const ins = await tx.query<{ kind: string; value_canonical: string }>(
      `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical, label, priority, verified)
       SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::bool[])
       ON CONFLICT (kind, value_canonical) DO UPDATE
         SET value_raw = CASE WHEN $8 THEN EXCLUDED.value_raw ELSE person_identifiers.value_raw END,
             label = CASE WHEN $8 THEN coalesce(EXCLUDED.label, person_identifiers.label) ELSE person_identifiers.label END,
             priority = CASE WHEN $8 THEN EXCLUDED.priority ELSE person_identifiers.priority END,
             verified = CASE WHEN $8 THEN EXCLUDED.verified ELSE person_identifiers.verified END
         WHERE person_identifiers.person_id = EXCLUDED.person_id
       RETURNING kind, value_canonical`,
      [
        current,
        wanted.map((w) => w.kind),
        wanted.map((w) => w.raw),
        wanted.map((w) => w.value),
        wanted.map((w) => w.label ?? null),
        wanted.map((w) => w.priority ?? 100),
        wanted.map((w) => w.verified ?? true),
        opts.refresh ?? false,
      ],
    );
    const mine = new Set(ins.rows.map((r) => idKey({ kind: r.kind, value: r.value_canonical })));
    const contested = wanted.filter((w) => !mine.has(idKey(w)));
    if (contested.length === 0) return current;
    const owners = await identifierOwners(tx, contested);
    const others = new Map<string, IdentifierInput>();
    for (const w of contested) {
      const owner = owners.get(idKey(w));
      if (owner && owner !== current && !others.has(owner)) others.set(owner, w);
    }
    if (others.size === 0) continue; // the owner let go in the meantime (contact deleted): try again
    if (opts.fresh && mine.size === 0 && others.size === 1 && attempt === 0) {
      // Nobody can know our fresh person yet: hand everything to the existing owner.
      const [owner] = others.keys();
      await tx.query('DELETE FROM people WHERE person_id = $1', [current]);
      current = owner;
      opts = { ...opts, fresh: false };
      continue;
    }
    const survivor = await oldestPerson(tx, [current, ...others.keys()]);
    for (const [owner, via] of [[current, wanted[0]] as const, ...others.entries()]) {
      if (owner === survivor) continue;
      const shared = owner === current ? [...others.values()][0] : via;
      await mergePeople(tx, survivor, owner, `shared_${shared.kind}:${shared.value}`, opts.reasonDetails ?? {});
    }
    current = survivor;
  }
  return current;
}
