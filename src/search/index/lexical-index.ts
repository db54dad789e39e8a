/**
 * The lexical leg's inverted index, in memory: BM25F over passages (one chunk of an active
 * document plus that document's title), with the search filters and facet counts evaluated on
 * per-document attributes held beside the postings.
 *
 * PostgreSQL stays the only store: this index is derived from it (built at start, or read from its
 * snapshot on disk, then the change log; see index-sync.ts, index-snapshot.ts) and holds nothing
 * that is not there. Why in memory: computing BM25 in SQL meant reading and unnesting the tsvector
 * of every candidate passage per query, and facets meant a join over the whole match set; at 100k
 * documents that cost 200 ms+ per query. Here a query walks the postings of its few lexemes.
 *
 * This class is the index's face; the work is in free functions over one columns object
 * (columns.ts) so every typed array keeps one shape: update.ts (add, remove), positions.ts
 * (phrases), filter.ts (filters, query conditions), rank.ts (BM25F, prefix expansion), facets.ts
 * (counts over a match set), format.ts (the snapshot's layout).
 */
import { attributesOf, IndexColumns, slotOf, threadOrder } from './columns.ts';
import { docIdsOf, facetsOf, threadsOf, unthreadedOf } from './facets.ts';
import { admits, allowedPassages } from './filter.ts';
import { deserialise, serialise, type SerialisedIndex } from './format.ts';
import { expand, idf, match } from './rank.ts';
import type {
  Bm25Params,
  DocumentAttributes,
  IndexedDocument,
  IndexFacets,
  IndexFilter,
  IndexMatches,
  IndexSearchResult,
  MatchOptions,
  QueryConstraints,
  QueryLexeme,
} from './types.ts';
import { removeDocument, setDocumentTags, upsertDocument } from './update.ts';

export type * from './types.ts';
export { TITLE_POSITION } from './positions.ts';
export { LEXICAL_INDEX_VERSION, type RawArray, type SerialisedIndex } from './format.ts';

export class LexicalIndex {
  private readonly c: IndexColumns;

  constructor(
    readonly params: Bm25Params,
    columns?: IndexColumns,
  ) {
    this.c = columns ?? new IndexColumns(params);
  }

  get size(): { documents: number; passages: number; deadPassages: number; terms: number } {
    const { c } = this;
    return { documents: c.liveDocs, passages: c.livePassages, deadPassages: c.deadPassages, terms: c.terms.values.length };
  }

  has(docId: string): boolean {
    return slotOf(this.c, docId) !== undefined;
  }

  attributes(docId: string): DocumentAttributes | undefined {
    return attributesOf(this.c, docId);
  }

  /** The active documents of a thread in time order (then by id), as the catalog orders them. */
  threadOrder(threadId: string): string[] {
    return threadOrder(this.c, threadId);
  }

  /** Adds or replaces a document. */
  upsert(doc: IndexedDocument): void {
    upsertDocument(this.c, doc);
  }

  /** Removes a document (no-op when absent). Its postings stay until the index is rebuilt, skipped as dead. */
  remove(docId: string): void {
    removeDocument(this.c, docId);
  }

  /**
   * Replaces documents' tag identifiers in place (update.ts); the ids not in the index are returned (to be
   * upserted whole).
   */
  setTags(tags: Map<string, string[]>): string[] {
    return setDocumentTags(this.c, tags);
  }

  /**
   * The passages of every document the filter allows when there are at most `max` of them; null
   * for no filter, or more (the vector leg ranks these exactly in memory; filter.ts).
   */
  allowedPassages(filter: IndexFilter, max: number): { chunkIds: string[]; docIds: string[] } | null {
    return allowedPassages(this.c, filter, max);
  }

  /** Which of these documents the constraints allow (vector candidates join a constrained query only so). */
  admits(constraints: QueryConstraints | undefined, docIds: string[]): Set<string> {
    return admits(this.c, constraints, docIds);
  }

  /** idf of a lexeme over live passages (as `match` weighs it); null when no live passage has it. */
  idf(term: string): number | null {
    return idf(this.c, term);
  }

  /** The `max` lexemes starting with one of `prefixes` found in the most passages (the last word's expansions). */
  expand(prefixes: string[], max: number): { term: string; df: number }[] {
    return expand(this.c, prefixes, max);
  }

  /** `match` and `facetsOf` in one call. */
  search(
    query: QueryLexeme[],
    filter: IndexFilter,
    limit: number,
    /** Documents found by the other leg (already filtered): they join the match set. */
    extraDocIds: string[] = [],
    personLimit = 50,
    opts: MatchOptions = {},
  ): IndexSearchResult {
    const m = match(this.c, query, filter, limit, opts);
    return { candidates: m.candidates, terms: m.terms, ...facetsOf(this.c, m, extraDocIds, personLimit) };
  }

  /** The `limit` best documents for the query (best passage each) and the whole match set. */
  match(query: QueryLexeme[], filter: IndexFilter, limit: number, opts: MatchOptions = {}): IndexMatches {
    return match(this.c, query, filter, limit, opts);
  }

  /** `total` and the facets over a match set and the documents the other leg found. */
  facetsOf(matches: IndexMatches, extraDocIds: string[] = [], personLimit = 50): IndexFacets {
    return facetsOf(this.c, matches, extraDocIds, personLimit);
  }

  /** The document ids of a match set (live ones), for tagging every document a query matches. */
  docIdsOf(matches: IndexMatches): string[] {
    return docIdsOf(this.c, matches);
  }

  /** Conversations of a match set (group=thread): documents per thread asked for, and the number of groups. */
  threadsOf(matches: IndexMatches, extraDocIds: string[], threadIds: string[], joins?: Map<string, string>): { counts: Map<string, number>; groups: number } {
    return threadsOf(this.c, matches, extraDocIds, threadIds, joins);
  }

  /** The match set's documents without a thread of these source types; null when more than `max`. */
  unthreadedOf(matches: IndexMatches, extraDocIds: string[], sourceTypes: Set<string>, max: number): string[] | null {
    return unthreadedOf(this.c, matches, extraDocIds, sourceTypes, max);
  }

  /** The index compacted into raw arrays for a snapshot (format.ts). */
  serialise(): SerialisedIndex {
    return serialise(this.c);
  }

  /** The index a snapshot holds; its arrays are used in place (format.ts). */
  static deserialise(s: SerialisedIndex): LexicalIndex {
    const columns = deserialise(s);
    return new LexicalIndex(columns.params, columns);
  }
}
