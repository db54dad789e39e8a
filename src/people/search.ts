/**
 * People search (gateway spec 4.3, GET /search/people): display, given and family names,
 * nicknames, organisation (the person's and each of its cards'), emails and phones of live people (not merged, not deleted), ranked
 * exact > prefix (of the value or of one of its words) > substring. A phone query matches whatever
 * format the user types: its digits are compared with the digits of the stored E.164 numbers, and
 * a number that canonicalises (national or international form) matches exactly.
 */
import type { Queryable } from '../db/types.ts';
import type { PeopleSearchHitT } from '../schemas/people.ts';
import { canonicalEmail, canonicalPhone } from './identifiers.ts';

export interface PeopleSearchParams {
  q?: string | null;
  limit: number;
  offset: number;
  region: string;
}

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export async function searchPeople(
  db: Queryable,
  p: PeopleSearchParams,
): Promise<{ results: PeopleSearchHitT[]; total: number }> {
  const q = (p.q ?? '').trim().toLowerCase();
  let ranked: { person_id: string }[];
  let total: number;
  if (!q) {
    const r = await db.query<{ person_id: string; n: number }>(
      `SELECT person_id, count(*) OVER ()::int AS n FROM people WHERE merged_into IS NULL AND NOT deleted
        ORDER BY lower(display_name), person_id LIMIT $1 OFFSET $2`,
      [p.limit, p.offset],
    );
    ranked = r.rows;
    total = r.rows[0]?.n ?? (await countLive(db));
  } else {
    // Digits typed in a phone-like query ("508.410", "(508) 410-9572", "+44 20 7946") are matched
    // against stored numbers' digits; national numbers also against the number without country code.
    const phoneLike = /^[+\d\s().\-\/]+$/.test(q) && (q.match(/\d/g)?.length ?? 0) >= 3;
    const digits = phoneLike ? q.replace(/\D/g, '') : '';
    // A national number typed with its trunk 0 (UK "020 …", FR "01 …") is stored after the country code.
    const trunkless = digits.startsWith('0') && digits.replace(/^0+/, '').length >= 3 ? digits.replace(/^0+/, '') : digits;
    const phoneExact = phoneLike ? (canonicalPhone(q, p.region)?.value ?? '') : '';
    const emailExact = canonicalEmail(q) ?? '';
    const esc = likeEscape(q);
    const r = await db.query<{ person_id: string; n: number }>(
      `WITH live AS (
         SELECT person_id, display_name FROM people WHERE merged_into IS NULL AND NOT deleted),
       vals AS (
         SELECT l.person_id, lower(v) AS v, 'name' AS kind
           FROM live l JOIN people p ON p.person_id = l.person_id
           CROSS JOIN LATERAL unnest(ARRAY[p.display_name, p.given_name, p.family_name, p.organization] || p.nicknames) AS v
          WHERE v IS NOT NULL
         UNION ALL
         -- Every live card's organisation (a person merged from two cards keeps only one in its row).
         SELECT m.person_id, lower(m.fields->>'organization'), 'name'
           FROM people_source_map m JOIN live l ON l.person_id = m.person_id
          WHERE NOT m.deleted AND m.fields->>'organization' IS NOT NULL
         UNION ALL
         SELECT pi.person_id, pi.value_canonical, pi.kind
           FROM person_identifiers pi JOIN live l ON l.person_id = pi.person_id
          WHERE pi.kind IN ('email', 'phone', 'shortcode')),
       scored AS (
         SELECT person_id, max(CASE
           WHEN kind = 'name' AND v = $1 THEN 3
           WHEN kind = 'name' AND (v LIKE $2 || '%' ESCAPE '\\' OR v LIKE '%' || ' ' || $2 || '%' ESCAPE '\\'
                                   OR v LIKE '%-' || $2 || '%' ESCAPE '\\') THEN 2
           WHEN kind = 'name' AND v LIKE '%' || $2 || '%' ESCAPE '\\' THEN 1
           WHEN kind = 'email' AND (v = $1 OR v = $3) THEN 3
           WHEN kind = 'email' AND v LIKE $2 || '%' ESCAPE '\\' THEN 2
           WHEN kind = 'email' AND v LIKE '%' || $2 || '%' ESCAPE '\\' THEN 1
           WHEN kind IN ('phone', 'shortcode') AND (v = $4 OR ($5 <> '' AND v = $5)) THEN 3
           WHEN kind IN ('phone', 'shortcode') AND $5 <> '' AND regexp_replace(v, '\\D', '', 'g') LIKE $5 || '%' THEN 2
           WHEN kind IN ('phone', 'shortcode') AND $5 <> '' AND (regexp_replace(v, '\\D', '', 'g') LIKE '%' || $5 || '%'
                                                              OR regexp_replace(v, '\\D', '', 'g') LIKE '%' || $8 || '%') THEN 1
           WHEN kind IN ('phone', 'shortcode') AND v LIKE '%' || $2 || '%' ESCAPE '\\' THEN 1
           ELSE 0 END) AS score
           FROM vals GROUP BY person_id)
       SELECT s.person_id, count(*) OVER ()::int AS n
         FROM scored s JOIN live l ON l.person_id = s.person_id
        WHERE s.score > 0
        ORDER BY s.score DESC, lower(l.display_name), s.person_id
        LIMIT $6 OFFSET $7`,
      [q, esc, emailExact, phoneExact, digits, p.limit, p.offset, trunkless],
    );
    ranked = r.rows;
    total = r.rows[0]?.n ?? 0;
    if (r.rows.length === 0 && p.offset > 0) total = await countMatches(db, q, p, r.rows.length);
  }
  return { results: await hits(db, ranked.map((r) => r.person_id)), total };
}

async function countLive(db: Queryable): Promise<number> {
  const r = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM people WHERE merged_into IS NULL AND NOT deleted');
  return r.rows[0].n;
}

/** A page past the end still reports how many matched. */
async function countMatches(db: Queryable, q: string, p: PeopleSearchParams, _seen: number): Promise<number> {
  const all = await searchPeople(db, { ...p, q, offset: 0, limit: 1 });
  return all.total;
}

async function hits(db: Queryable, ids: string[]): Promise<PeopleSearchHitT[]> {
  if (ids.length === 0) return [];
  const [people, idents, addrs] = await Promise.all([
    db.query<Record<string, any>>(
      `SELECT person_id, display_name, given_name, family_name, organization, nicknames FROM people
        WHERE person_id = ANY($1::uuid[])`,
      [ids],
    ),
    db.query<{ person_id: string; kind: string; value_canonical: string }>(
      `SELECT person_id, kind, value_canonical FROM person_identifiers
        WHERE person_id = ANY($1::uuid[]) AND kind IN ('email', 'phone', 'shortcode')
        ORDER BY priority, value_canonical`,
      [ids],
    ),
    db.query<Record<string, any>>(
      `SELECT person_id, label, city, region, country FROM person_addresses WHERE person_id = ANY($1::uuid[])
        ORDER BY label`,
      [ids],
    ),
  ]);
  const byId = new Map(people.rows.map((r) => [r.person_id as string, r]));
  return ids
    .filter((id) => byId.has(id))
    .map((id) => {
      const p = byId.get(id)!;
      return {
        person_id: id,
        display_name: p.display_name,
        given_name: p.given_name ?? null,
        family_name: p.family_name ?? null,
        organization: p.organization ?? null,
        nicknames: p.nicknames ?? [],
        emails: idents.rows.filter((i) => i.person_id === id && i.kind === 'email').map((i) => i.value_canonical),
        phones: idents.rows.filter((i) => i.person_id === id && i.kind !== 'email').map((i) => i.value_canonical),
        addresses: addrs.rows
          .filter((a) => a.person_id === id)
          .map((a) => ({ label: a.label ?? null, city: a.city ?? null, region: a.region ?? null, country: a.country ?? null })),
      };
    });
}
