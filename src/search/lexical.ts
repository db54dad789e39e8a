/**
 * The lexical leg's catalog side: the people a `person` filter names, the filters as the index
 * evaluates them, and the person facet's ordering. BM25 and the match set's facets are computed by
 * the in-memory index (index/lexical-index.ts); lexemes come from analyzer.ts.
 */
import type { Queryable } from '../db/types.ts';
import type { IndexFilter } from './index/lexical-index.ts';
import { occurrenceInBounds, sourceTypesFilter, type SearchFilters } from '../catalog/filters.ts';
import type { FacetValue } from './types.ts';

/** People listed in the person facet (the index also returns those tied with the last one). */
export const PERSON_FACET_LIMIT = 50;

const toMicros = (iso: string) => Date.parse(iso) * 1000;

/**
 * The linked people owning one of the `person` filter's canonical identifiers (merges followed).
 * Identifiers no one owns still match documents that list them as written (the index keeps those).
 */
export async function personsOwning(db: Queryable, identifiers: string[]): Promise<string[]> {
  const r = await db.query<{ person_id: string }>(
    // A person id (the person facet's value) names its person directly.
    `SELECT person_id::text AS person_id FROM person_identifiers WHERE value_canonical = ANY($1::text[])
     UNION SELECT person_id::text FROM people WHERE person_id::text = ANY($1::text[])`,
    [identifiers],
    { name: 'memex_search_persons' },
  );
  return r.rows.map((x) => x.person_id);
}

/**
 * Calendar events (active versions) with an occurrence inside the filter's date bounds (calendar_occurrences,
 * issue 42): they pass the index's date test whatever their content_timestamp. Null without date bounds.
 */
export async function occurringDocs(db: Queryable, f: SearchFilters): Promise<Set<string> | null> {
  if (f.start === undefined && f.end === undefined) return null;
  const params: unknown[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const r = await db.query<{ doc_id: string }>(
    `SELECT DISTINCT o.doc_id::text AS doc_id FROM calendar_occurrences o JOIN documents d ON d.doc_id = o.doc_id
      WHERE d.is_active_version AND d.deleted_at IS NULL AND ${occurrenceInBounds(f, p, 'o')}`,
    params,
  );
  return new Set(r.rows.map((x) => x.doc_id));
}

/** The request's filters as the index evaluates them; `personIds` own the `person` filter's identifiers. */
export function indexFilter(f: SearchFilters, personIds: string[]): IndexFilter {
  const filter: IndexFilter = {
    sourceTypes: sourceTypesFilter(f),
    notSourceTypes: f.not_source_types,
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
