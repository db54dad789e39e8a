/**
 * The lexical leg: the query's lexemes from PostgreSQL (the same `to_tsvector('english', …)` the
 * stored vectors came from, so stemming and stop words agree), the request's filters translated
 * for the in-memory index, BM25 there (lexical-index.ts), and the person facet's display names.
 */
import type { Queryable } from '../db/types.ts';
import type { IndexFilter, IndexHit, LexicalIndex, QueryLexeme } from './lexical-index.ts';
import type { FacetValue, SearchFacets, SearchFilters } from './types.ts';

export type LexicalCandidate = IndexHit;

export interface LexicalResult {
  candidates: LexicalCandidate[];
  total: number;
  facets: SearchFacets;
  /** The query had lexemes (it was not only stop words or punctuation). */
  hadTerms: boolean;
}

const PERSON_FACET_LIMIT = 50;

/** The query's lexemes with their number of occurrences. */
export async function queryLexemes(db: Queryable, q: string): Promise<QueryLexeme[]> {
  const r = await db.query<{ term: string; qtf: number }>(
    `SELECT lexeme AS term, coalesce(array_length(positions, 1), 1)::int AS qtf FROM unnest(to_tsvector('english', $1))`,
    [q],
  );
  return r.rows;
}

const toMicros = (iso: string) => Date.parse(iso) * 1000;

/**
 * The index form of the filters. The person filter matches linked people owning one of the
 * canonical identifiers (merges followed) or, for identifiers that could not be linked, the
 * identifier as written in the document's people[] (the vector leg's SQL applies the same rule).
 */
export async function indexFilter(db: Queryable, f: SearchFilters): Promise<IndexFilter> {
  const out: IndexFilter = {
    sourceType: f.source_type,
    hasAttachments: f.has_attachments,
    threadId: f.thread_id,
    startMicros: f.start === undefined ? undefined : toMicros(f.start),
    endMicros: f.end === undefined ? undefined : toMicros(f.end),
    endExclusive: f.endExclusive,
  };
  if (f.person !== undefined) {
    const r = await db.query<{ person_id: string }>(
      'SELECT DISTINCT person_id::text AS person_id FROM person_identifiers WHERE value_canonical = ANY($1::text[])',
      [f.person],
    );
    out.person = { personIds: new Set(r.rows.map((x) => x.person_id)), identifiers: new Set(f.person) };
  }
  return out;
}

export async function lexicalSearch(
  db: Queryable,
  index: LexicalIndex,
  lexemes: QueryLexeme[],
  filter: IndexFilter,
  limit: number,
  /** Documents the vector leg found (already filtered): they join the match set for facets. */
  extraDocIds: string[],
): Promise<LexicalResult> {
  const r = index.search(lexemes, filter, limit, extraDocIds, PERSON_FACET_LIMIT);
  let person: FacetValue[] = [];
  if (r.people.length > 0) {
    const names = await db.query<{ person_id: string; display_name: string | null }>(
      'SELECT person_id::text AS person_id, display_name FROM people WHERE person_id = ANY($1::uuid[])',
      [r.people.map((p) => p.personId)],
    );
    const nameOf = new Map(names.rows.map((x) => [x.person_id, x.display_name]));
    person = r.people
      .filter((p) => nameOf.has(p.personId))
      .map((p) => ({ value: p.personId, display_name: nameOf.get(p.personId) ?? null, count: p.count }))
      .sort((a, b) => b.count - a.count || compareNullable(a.display_name ?? null, b.display_name ?? null))
      .slice(0, PERSON_FACET_LIMIT);
  }
  return {
    candidates: r.candidates,
    total: r.total,
    facets: {
      source_type: r.sourceTypes,
      has_attachments: r.hasAttachments,
      person,
    },
    hadTerms: lexemes.length > 0,
  };
}

/** PostgreSQL's ORDER BY for text: nulls last. */
function compareNullable(a: string | null, b: string | null): number {
  if (a === b) return 0;
  if (a === null) return 1;
  if (b === null) return -1;
  return a < b ? -1 : 1;
}
