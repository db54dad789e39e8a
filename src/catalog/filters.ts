/**
 * Document filters (source type, attachments, person, dates, thread): parsed from the request once,
 * then rendered as SQL conditions on a documents alias so both search legs, facets, thread context
 * and the catalog's document listing apply exactly the same rules. Parameterised only.
 */
import { canonicalLookupValues } from '../identity/identifiers.ts';
import { parseTimestamp } from '../util/timestamp.ts';
import { MemexError } from '../util/errors.ts';
import { sourceTypesOf } from './source-families.ts';

/** Filters applied inside both legs (and to facets and thread context). */
export interface SearchFilters {
  /** As asked (a family such as `email`, or an exact source type). */
  source_type?: string;
  /** The source types it selects (source-families.ts); an empty list matches nothing. */
  source_types?: string[];
  /** Source types left out (the query language's `has:attachment` leaves out stored files, their own attachment). */
  not_source_types?: string[];
  has_attachments?: boolean;
  /** Canonical identifier values (email, E.164, handle) of the `person` parameter. */
  person?: string[];
  /** Inclusive lower bound on content_timestamp (UTC ISO). */
  start?: string;
  /** Upper bound on content_timestamp (UTC ISO); exclusive when `endExclusive` (a bare end date). */
  end?: string;
  endExclusive?: boolean;
  thread_id?: string;
}

export interface RawFilters {
  source_type?: string;
  has_attachments?: boolean;
  person?: string;
  start_date?: string;
  end_date?: string;
  thread_id?: string;
}

/** The source types a filter allows (undefined: any). */
export function sourceTypesFilter(f: SearchFilters): string[] | undefined {
  return f.source_types ?? (f.source_type === undefined ? undefined : sourceTypesOf(f.source_type));
}

const BARE_DATE = /^\d{4}-\d{2}-\d{2}$/;

export class FilterError extends MemexError {
  constructor(
    readonly field: string,
    message: string,
  ) {
    super(message, 'VALIDATION', undefined, { loc: ['query', field] });
  }
}

export function parseFilters(raw: RawFilters, phoneRegion = 'US'): SearchFilters {
  const f: SearchFilters = {};
  if (raw.source_type !== undefined && raw.source_type.trim() !== '') {
    f.source_type = raw.source_type.trim();
    f.source_types = sourceTypesOf(f.source_type);
  }
  if (raw.has_attachments !== undefined) f.has_attachments = raw.has_attachments;
  if (raw.person !== undefined && raw.person.trim() !== '') {
    f.person = canonicalLookupValues(raw.person, phoneRegion);
  }
  if (raw.start_date !== undefined) {
    const d = parseTimestamp(raw.start_date);
    if (!d) throw new FilterError('start_date', 'Input should be an ISO 8601 date or date-time');
    f.start = d.toISOString();
  }
  if (raw.end_date !== undefined) {
    const d = parseTimestamp(raw.end_date);
    if (!d) throw new FilterError('end_date', 'Input should be an ISO 8601 date or date-time');
    if (BARE_DATE.test(raw.end_date.trim())) {
      // A bare end date includes that whole (UTC) day.
      f.end = new Date(d.getTime() + 86_400_000).toISOString();
      f.endExclusive = true;
    } else {
      f.end = d.toISOString();
    }
  }
  if (f.start && f.end && (f.endExclusive ? f.start >= f.end : f.start > f.end)) throw new FilterError('end_date', 'end_date is before start_date');
  if (raw.thread_id !== undefined) f.thread_id = raw.thread_id;
  return f;
}

/**
 * SQL conditions (each starting with " AND ") on the documents alias `d`; values are appended to
 * `params` and referenced by position.
 */
export function filterSql(f: SearchFilters, params: unknown[], d = 'd'): string {
  const parts: string[] = [];
  const p = (v: unknown) => {
    params.push(v);
    return `$${params.length}`;
  };
  const types = sourceTypesFilter(f);
  if (types !== undefined) parts.push(`${d}.source_type = ANY(${p(types)}::text[])`);
  if (f.not_source_types !== undefined && f.not_source_types.length > 0) parts.push(`NOT (${d}.source_type = ANY(${p(f.not_source_types)}::text[]))`);
  if (f.has_attachments !== undefined) parts.push(`${d}.has_attachments = ${p(f.has_attachments)}`);
  if (f.thread_id !== undefined) parts.push(`${d}.thread_id = ${p(f.thread_id)}::uuid`);
  if (f.start !== undefined || f.end !== undefined) {
    // Its content_timestamp in the bounds, or (calendar events) one of its occurrences (issue 42).
    const own: string[] = [];
    if (f.start !== undefined) own.push(`${d}.content_timestamp >= ${p(f.start)}::timestamptz`);
    if (f.end !== undefined) own.push(`${d}.content_timestamp ${f.endExclusive ? '<' : '<='} ${p(f.end)}::timestamptz`);
    parts.push(`((${own.join(' AND ')}) OR (${d}.source_type = 'calendar_event' AND EXISTS (SELECT 1 FROM calendar_occurrences o
                  WHERE o.doc_id = ${d}.doc_id AND ${occurrenceInBounds(f, p, 'o')})))`);
  }
  if (f.person !== undefined) {
    // Linked people (canonical identifiers, merges followed, or a person id as the person facet gives
    // it) or, for identifiers that could not be linked, the identifier as written in the document's people[].
    const vals = p(f.person);
    parts.push(`(EXISTS (SELECT 1 FROM document_people dp JOIN person_identifiers pi ON pi.person_id = dp.person_id
                          WHERE dp.doc_id = ${d}.doc_id AND pi.value_canonical = ANY(${vals}::text[]))
              OR EXISTS (SELECT 1 FROM document_people dp WHERE dp.doc_id = ${d}.doc_id AND dp.person_id::text = ANY(${vals}::text[]))
              OR EXISTS (SELECT 1 FROM jsonb_array_elements(${d}.people) pe
                          WHERE lower(pe->>'identifier') = ANY(${vals}::text[])))`);
  }
  return parts.map((s) => ` AND ${s}`).join('');
}

/**
 * An occurrence (calendar_occurrences alias `o`) inside the date bounds: it overlaps them (an event in progress
 * at `after:`'s moment counts, as does a three-day trip on its middle day).
 */
export function occurrenceInBounds(f: SearchFilters, p: (v: unknown) => string, o = 'o'): string {
  const parts: string[] = [];
  if (f.start !== undefined) {
    const s = p(f.start);
    parts.push(`(${o}.ends_at > ${s}::timestamptz OR ${o}.starts_at >= ${s}::timestamptz)`);
  }
  if (f.end !== undefined) parts.push(`${o}.starts_at ${f.endExclusive ? '<' : '<='} ${p(f.end)}::timestamptz`);
  return parts.length ? parts.join(' AND ') : 'true';
}
