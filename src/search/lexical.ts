/**
 * The lexical leg's PostgreSQL side: one statement for the query's inputs (lexemes, person filter,
 * change-log poll) and the person facet's ordering. BM25 and the match set's facets are computed by
 * the in-memory index (lexical-index.ts).
 */
import type { Queryable } from '../db/types.ts';
import { IndexSync, type PollResult } from './index-sync.ts';
import type { IndexFilter, QueryLexeme } from './lexical-index.ts';
import type { FacetValue, SearchFilters } from './types.ts';

/** People listed in the person facet (the index also returns those tied with the last one). */
export const PERSON_FACET_LIMIT = 50;

export interface LexicalInputs {
  lexemes: QueryLexeme[];
  filter: IndexFilter;
  /** The change-log poll read by the same statement (IndexSync.absorb it before searching). */
  poll: PollResult;
}

const toMicros = (iso: string) => Date.parse(iso) * 1000;

/**
 * One statement for everything a search needs from PostgreSQL before scoring: the change-log poll,
 * the query's lexemes (the same `to_tsvector('english', …)` the stored vectors came from, so
 * stemming and stop words agree) and the people owning the `person` filter's identifiers.
 *
 * The person filter matches linked people owning one of the canonical identifiers (merges
 * followed) or, for identifiers that could not be linked, the identifier as written in the
 * document's people[] (the vector leg's SQL applies the same rule).
 */
export async function lexicalInputs(
  db: Queryable,
  horizon: string,
  q: string,
  f: SearchFilters,
): Promise<LexicalInputs> {
  const r = await db.query<PollResult & { lexemes: [string, number][]; persons: string[] | null }>(
    `SELECT ${IndexSync.pollColumns('$1')},
       coalesce((SELECT json_agg(json_build_array(lexeme, coalesce(array_length(positions, 1), 1)))
                   FROM unnest(to_tsvector('english', $2))), '[]') AS lexemes,
       (SELECT array_agg(DISTINCT person_id::text) FROM person_identifiers WHERE value_canonical = ANY($3::text[])) AS persons`,
    [horizon, q, f.person ?? []],
    { name: 'memex_search_inputs' },
  );
  const row = r.rows[0];
  const filter = indexFilter(f, row.persons ?? []);
  return {
    lexemes: row.lexemes.map(([term, qtf]) => ({ term, qtf })),
    filter,
    poll: { sync_h: row.sync_h, sync_changes: row.sync_changes },
  };
}

/** The request's filters as the index evaluates them; `personIds` own the `person` filter's identifiers. */
export function indexFilter(f: SearchFilters, personIds: string[]): IndexFilter {
  const filter: IndexFilter = {
    sourceType: f.source_type,
    hasAttachments: f.has_attachments,
    threadId: f.thread_id,
    startMicros: f.start === undefined ? undefined : toMicros(f.start),
    endMicros: f.end === undefined ? undefined : toMicros(f.end),
    endExclusive: f.endExclusive,
  };
  if (f.person !== undefined) filter.person = { personIds: new Set(personIds), identifiers: new Set(f.person) };
  return filter;
}

/**
 * The person facet: people by matching documents, then display name (nulls last, as PostgreSQL
 * sorts), the first PERSON_FACET_LIMIT. `names` holds the display names of the counted people.
 */
export function personFacet(counts: { personId: string; count: number }[], names: Map<string, string | null>): FacetValue[] {
  return counts
    .filter((p) => names.has(p.personId))
    .map((p) => ({ value: p.personId, display_name: names.get(p.personId) ?? null, count: p.count }))
    .sort((a, b) => b.count - a.count || compareNullable(a.display_name ?? null, b.display_name ?? null))
    .slice(0, PERSON_FACET_LIMIT);
}

/** PostgreSQL's ORDER BY for text: nulls last. */
function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}
