/**
 * The same person under several addresses (issue 40, item 5): live people with the same display name and
 * different identifiers are offered for merging — on the People page, by `memex people merge`, through MCP —
 * and never merged silently (two Pauls may be two people; only the owner knows). A manual merge is an ordinary
 * merge (src/identity/merge.ts) with the reason `manual`, recorded in person_merges like every other.
 */
import type { Database, Queryable } from '../db/types.ts';
import { mergePeople, resolvePersonId, type MergeRecord } from '../identity/merge.ts';
import { canonicalLookupValues } from '../identity/identifiers.ts';
import { MemexError } from '../util/errors.ts';

export interface MergeCandidatePerson {
  person_id: string;
  display_name: string;
  emails: string[];
  phones: string[];
  message_count: number;
}

export interface MergeCandidateGroup {
  /** The name they share, as the first of them writes it. */
  display_name: string;
  people: MergeCandidatePerson[];
}

/**
 * Groups of live people (not merged, not deleted, not mailing lists) whose display names are the same once
 * case and spaces are ignored; names that are an address or a number are no names. `onlyWith`: groups that
 * hold this person (the owner's other addresses for the "This is me" step). Largest groups first.
 */
export async function mergeCandidates(
  db: Queryable,
  opts: { limit?: number; onlyWith?: string; exclude?: string[] } = {},
): Promise<MergeCandidateGroup[]> {
  const limit = opts.limit ?? 50;
  const r = await db.query<{ key: string; people: MergeCandidatePerson[] }>(
    `WITH live AS (
       SELECT p.person_id, p.display_name, lower(regexp_replace(btrim(p.display_name), '\\s+', ' ', 'g')) AS key
         FROM people p
        WHERE p.merged_into IS NULL AND NOT p.deleted AND p.list_id IS NULL
          AND NOT (p.person_id = ANY($2::uuid[]))
          AND strpos(p.display_name, '@') = 0 AND p.display_name !~ '^[+0-9 ().-]*$' AND length(btrim(p.display_name)) >= 2),
     groups AS (
       SELECT key FROM live GROUP BY key HAVING count(*) > 1
          AND ($3::uuid IS NULL OR bool_or(person_id = $3::uuid))),
     members AS (
       SELECT l.key, l.person_id, l.display_name,
              coalesce((SELECT array_agg(pi.value_canonical ORDER BY pi.value_canonical) FROM person_identifiers pi
                         WHERE pi.person_id = l.person_id AND pi.kind = 'email'), '{}') AS emails,
              coalesce((SELECT array_agg(pi.value_canonical ORDER BY pi.value_canonical) FROM person_identifiers pi
                         WHERE pi.person_id = l.person_id AND pi.kind = 'phone'), '{}') AS phones,
              (SELECT count(DISTINCT dp.doc_id)::int FROM document_people dp JOIN documents d ON d.doc_id = dp.doc_id
                WHERE dp.person_id = l.person_id AND d.is_active_version AND d.deleted_at IS NULL) AS message_count
         FROM live l JOIN groups g ON g.key = l.key)
     SELECT key, json_agg(json_build_object('person_id', person_id, 'display_name', display_name, 'emails', emails,
                                            'phones', phones, 'message_count', message_count)
                          ORDER BY message_count DESC, person_id) AS people
       FROM members GROUP BY key
      ORDER BY count(*) DESC, max(message_count) DESC, key
      LIMIT $1`,
    [limit, opts.exclude ?? [], opts.onlyWith ?? null],
  );
  return r.rows.map((row) => ({ display_name: row.people[0].display_name, people: row.people }));
}

export class MergeError extends MemexError {
  constructor(message: string, status: number, field: string) {
    super(message, status === 404 ? 'NOT_FOUND' : 'VALIDATION', status, { loc: ['body', field] });
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A person id, or an address / phone / handle some person owns, as the live person; null when none. */
export async function personNamed(db: Queryable, value: string, region = 'US'): Promise<string | null> {
  const v = value.trim();
  if (UUID.test(v)) return resolvePersonId(db, v.toLowerCase());
  const r = await db.query<{ person_id: string }>(
    'SELECT person_id::text AS person_id FROM person_identifiers WHERE value_canonical = ANY($1::text[]) ORDER BY priority LIMIT 1',
    [canonicalLookupValues(v, region)],
  );
  return r.rows[0] ? resolvePersonId(db, r.rows[0].person_id) : null;
}

/**
 * Merges `source` into `target` because the owner said they are one person. Both are ids or identifiers;
 * unknown ones are a 404, the same person twice or a mailing list a 422. The target keeps its name and
 * fields and takes the source's identifiers, documents and relationships.
 */
export async function mergeByHand(db: Database, target: string, source: string, region = 'US'): Promise<MergeRecord> {
  const t = await personNamed(db, target, region);
  if (!t) throw new MergeError(`no person ${target.slice(0, 80)}`, 404, 'target');
  const s = await personNamed(db, source, region);
  if (!s) throw new MergeError(`no person ${source.slice(0, 80)}`, 404, 'source');
  if (t === s) throw new MergeError('these are already one person', 422, 'source');
  const lists = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM people WHERE person_id = ANY($1::uuid[]) AND list_id IS NOT NULL', [[t, s]]);
  if (lists.rows[0].n > 0) throw new MergeError('a mailing list is not a person and cannot be merged with one', 422, 'source');
  const rec = await db.transaction((tx) => mergePeople(tx, t, s, 'manual', { via: 'manual' }));
  if (!rec) throw new MergeError('nothing to merge', 422, 'source');
  return rec;
}
