/**
 * People search (gateway spec 4.3, GET /search/people): display, given and family names,
 * nicknames, organisation (the person's and each of its cards'), emails and phones of live people (not merged, not deleted), ranked
 * exact > prefix (of the value or of one of its words) > substring. A phone query matches whatever
 * format the user types: its digits are compared with the digits of the stored E.164 numbers, and
 * a number that canonicalises (national or international form) matches exactly.
 *
 * Each hit says how many messages (email, chat, SMS; an email's attachments are part of their message) name the
 * person, merged ids included, and when the newest was dated; `sort` orders by those instead (issue 35). The owner
 * (`excludeIds`: the self person) is no contact and is left out.
 */
import { isEmailAttachmentSql } from '../db/document-predicates.ts';
import type { Queryable } from '../db/types.ts';
import { MERGED_CTE } from '../relationships/people.ts';
import { MESSAGE_SOURCE_TYPES } from '../relationships/self.ts';
import type { PeopleSearchHitT } from '../schemas/people.ts';
import { canonicalEmail, canonicalPhone } from '../identity/identifiers.ts';

/** relevance (the default with a query), name (the default without), messages (most first), last_contact (newest first). */
export type PeopleSort = 'relevance' | 'name' | 'messages' | 'last_contact';

export interface PeopleSearchParams {
  q?: string | null;
  limit: number;
  offset: number;
  region: string;
  sort?: PeopleSort;
  /** Persons never listed (the owner). */
  excludeIds?: string[];
}

const LINK_ROLES = `('sender', 'recipient', 'participant', 'contact')`;

/**
 * The CTE `msg_stats(person_id, n, last)`: messages per live person (links of merged ids count for their
 * survivor), `$types` the message source types. Restricted to `$ids` (uuid[]) when given. Needs WITH RECURSIVE.
 */
function statsCte(types: string, ids?: string): string {
  return `${MERGED_CTE},
  msg_stats AS (
    SELECT coalesce(m.root, dp.person_id) AS person_id, count(DISTINCT d.doc_id)::int AS n, max(d.content_timestamp) AS last
      FROM document_people dp
      JOIN documents d ON d.doc_id = dp.doc_id
      LEFT JOIN merged m ON m.person_id = dp.person_id
     WHERE dp.role IN ${LINK_ROLES} AND d.is_active_version AND d.deleted_at IS NULL AND d.status <> 'failed'
       AND d.source_type = ANY(${types}::text[]) AND NOT ${isEmailAttachmentSql('d')}
       ${ids ? `AND (dp.person_id = ANY(${ids}::uuid[]) OR m.root = ANY(${ids}::uuid[]))` : ''}
     GROUP BY 1)`;
}

/** ORDER BY of a sort, after the relevance score (`s.score`) when there is one. */
function orderOf(sort: PeopleSort, scored: boolean): string {
  const byName = 'lower(l.display_name), l.person_id';
  if (sort === 'messages') return `coalesce(ms.n, 0) DESC, ${byName}`;
  if (sort === 'last_contact') return `ms.last DESC NULLS LAST, ${byName}`;
  if (sort === 'relevance' && scored) return `s.score DESC, ${byName}`;
  return byName;
}

const likeEscape = (s: string) => s.replace(/[\\%_]/g, (c) => `\\${c}`);

export async function searchPeople(
  db: Queryable,
  p: PeopleSearchParams,
): Promise<{ results: PeopleSearchHitT[]; total: number }> {
  const q = (p.q ?? '').trim().toLowerCase();
  const sort = p.sort ?? (q ? 'relevance' : 'name');
  const exclude = p.excludeIds ?? [];
  const types = [...MESSAGE_SOURCE_TYPES];
  // Message counts are needed for every candidate only when they order the list; otherwise for the page only.
  const byStats = sort === 'messages' || sort === 'last_contact';
  let ranked: { person_id: string }[];
  let total: number;
  if (!q) {
    const r = await db.query<{ person_id: string; n: number }>(
      `WITH RECURSIVE ${byStats ? `${statsCte('$4')},` : ''}
       live AS (SELECT person_id, display_name FROM people WHERE merged_into IS NULL AND NOT deleted AND list_id IS NULL AND NOT (person_id = ANY($3::uuid[])))
       SELECT l.person_id, count(*) OVER ()::int AS n FROM live l
         ${byStats ? 'LEFT JOIN msg_stats ms ON ms.person_id = l.person_id' : ''}
        ORDER BY ${orderOf(sort, false)} LIMIT $1 OFFSET $2`,
      [p.limit, p.offset, exclude, ...(byStats ? [types] : [])],
    );
    ranked = r.rows;
    total = r.rows[0]?.n ?? (await countLive(db, exclude));
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
      `WITH RECURSIVE ${byStats ? `${statsCte('$10')},` : ''}
       live AS (
         SELECT person_id, display_name FROM people WHERE merged_into IS NULL AND NOT deleted AND list_id IS NULL AND NOT (person_id = ANY($9::uuid[]))),
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
         ${byStats ? 'LEFT JOIN msg_stats ms ON ms.person_id = s.person_id' : ''}
        WHERE s.score > 0
        ORDER BY ${orderOf(sort, true)}
        LIMIT $6 OFFSET $7`,
      [q, esc, emailExact, phoneExact, digits, p.limit, p.offset, trunkless, exclude, ...(byStats ? [types] : [])],
    );
    ranked = r.rows;
    total = r.rows[0]?.n ?? 0;
    if (r.rows.length === 0 && p.offset > 0) total = await countMatches(db, q, p, r.rows.length);
  }
  return { results: await hits(db, ranked.map((r) => r.person_id)), total };
}

async function countLive(db: Queryable, exclude: string[]): Promise<number> {
  const r = await db.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM people WHERE merged_into IS NULL AND NOT deleted AND list_id IS NULL AND NOT (person_id = ANY($1::uuid[]))',
    [exclude],
  );
  return r.rows[0].n;
}

/** A page past the end still reports how many matched. */
async function countMatches(db: Queryable, q: string, p: PeopleSearchParams, _seen: number): Promise<number> {
  const all = await searchPeople(db, { ...p, q, offset: 0, limit: 1, sort: 'relevance' });
  return all.total;
}

async function hits(db: Queryable, ids: string[]): Promise<PeopleSearchHitT[]> {
  if (ids.length === 0) return [];
  const [people, idents, addrs, stats] = await Promise.all([
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
    db.query<{ person_id: string; n: number; last: Date | string | null }>(
      `WITH RECURSIVE ${statsCte('$2', '$1')} SELECT person_id, n, last FROM msg_stats WHERE person_id = ANY($1::uuid[])`,
      [ids, [...MESSAGE_SOURCE_TYPES]],
    ),
  ]);
  const statsOf = new Map(stats.rows.map((r) => [r.person_id, r]));
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
        message_count: statsOf.get(id)?.n ?? 0,
        last_contact_at: statsOf.get(id)?.last ? new Date(statsOf.get(id)!.last!).toISOString() : null,
      };
    });
}
