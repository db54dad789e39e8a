/**
 * Person id resolution that respects merges: a merged person (people.merged_into set) stands for
 * its survivor, possibly through a chain of merges. Deleted persons resolve to nothing.
 */
import type { Queryable } from '../db/types.ts';
import { isUuid } from '../util/ids.ts';

/** Longest merge chain followed; a longer (or cyclic) chain resolves to nothing. */
export const MAX_MERGE_DEPTH = 32;

/**
 * The SQL of a CTE `merged(person_id, root)` for merged persons only (usually few): the end of
 * each merge chain. Join it LEFT and take coalesce(root, person_id), then join people to drop
 * persons whose end is deleted (or still merged: a chain longer than the limit).
 */
export const MERGED_CTE = `mchain(person_id, cur, depth) AS (
    SELECT person_id, merged_into, 1 FROM people WHERE merged_into IS NOT NULL
    UNION ALL
    SELECT c.person_id, p.merged_into, c.depth + 1 FROM mchain c JOIN people p ON p.person_id = c.cur
     WHERE p.merged_into IS NOT NULL AND c.depth < ${MAX_MERGE_DEPTH}
  ),
  merged AS (
    SELECT DISTINCT ON (person_id) person_id, cur AS root FROM mchain ORDER BY person_id, depth DESC
  )`;

/** The live survivor of one person id (itself when not merged), or null when unknown/deleted. */
export async function resolvePerson(db: Queryable, personId: string): Promise<string | null> {
  if (!isUuid(personId)) return null;
  const r = await db.query<{ root: string }>(
    `WITH RECURSIVE walk(cur, depth) AS (
        SELECT $1::uuid, 0
        UNION ALL
        SELECT p.merged_into, w.depth + 1 FROM walk w JOIN people p ON p.person_id = w.cur
         WHERE p.merged_into IS NOT NULL AND w.depth < ${MAX_MERGE_DEPTH}
      )
      SELECT p.person_id AS root FROM walk w JOIN people p ON p.person_id = w.cur
       WHERE p.merged_into IS NULL AND NOT p.deleted
       ORDER BY w.depth DESC LIMIT 1`,
    [personId],
  );
  return r.rows[0]?.root ?? null;
}

/** The display name of a person id (as stored, merges not followed), or null when there is no such person. */
export async function displayNameOf(db: Queryable, personId: string): Promise<string | null> {
  const r = await db.query<{ display_name: string }>('SELECT display_name FROM people WHERE person_id = $1', [personId]);
  return r.rows[0]?.display_name ?? null;
}

/** Live survivors of several ids (unknown and deleted ones dropped, duplicates removed). */
export async function resolvePersons(db: Queryable, ids: string[]): Promise<string[]> {
  const valid = [...new Set(ids.filter(isUuid))];
  if (valid.length === 0) return [];
  const r = await db.query<{ root: string }>(
    `WITH RECURSIVE walk(start, cur, depth) AS (
        SELECT x, x, 0 FROM unnest($1::uuid[]) AS x
        UNION ALL
        SELECT w.start, p.merged_into, w.depth + 1 FROM walk w JOIN people p ON p.person_id = w.cur
         WHERE p.merged_into IS NOT NULL AND w.depth < ${MAX_MERGE_DEPTH}
      )
      SELECT DISTINCT p.person_id AS root FROM walk w JOIN people p ON p.person_id = w.cur
       WHERE p.merged_into IS NULL AND NOT p.deleted`,
    [valid],
  );
  return r.rows.map((x) => x.root);
}
