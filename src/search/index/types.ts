/**
 * What callers hand the lexical index and get back from it (src/search/index/): documents, filters,
 * query lexemes and conditions, matches and facets. The index's own storage is in columns.ts.
 */

export interface Bm25Params {
  k1: number;
  b: number;
  /** Weight of a title occurrence relative to a body occurrence. */
  titleWeight: number;
}

/** One active document as the index needs it (built by index-sync.ts from the catalog). */
export interface IndexedDocument {
  docId: string;
  sourceType: string;
  hasAttachments: boolean;
  /** content_timestamp in microseconds since the epoch (PostgreSQL's precision). */
  tsMicros: number;
  threadId: string | null;
  /** Linked people (document_people). */
  personIds: string[];
  /** Identifiers as written in the document's people[], lower-cased (for unlinked identifiers). */
  identifiers: string[];
  /** Lexeme -> occurrences in the title. */
  title: Map<string, number>;
  /** Lexeme -> word positions in the title (1-based); absent: phrases and `subject:` cannot match the title. */
  titlePositions?: Map<string, number[]>;
  /**
   * Lexeme -> word positions in the passage (1-based, as in the stored tsvector); absent: no phrase matches it.
   * `wholes`: identifiers joined by underscores as whole terms (whole-terms.ts), not counted in the length.
   */
  passages: { chunkId: string; terms: Map<string, number>; positions?: Map<string, number[]>; wholes?: Map<string, number> }[];
  /** The title's whole terms (whole-terms.ts), weighed as title words, not counted in the length. */
  titleWholes?: Map<string, number>;
  /** Linked people (person ids) and identifiers as written (lower-cased) in the sender role (`from:`). */
  senders?: string[];
  /**
   * Lexemes of the senders' and recipients' addresses: words of every passage (weight 1, no positions), so a
   * bare address finds the mail it is on (issue 40). Absent: none.
   */
  addresses?: Map<string, number>;
  /** The same in the recipient role (`to:`). */
  recipients?: string[];
}

export interface IndexFilter {
  /** Any of these source types (a family, or one type). */
  sourceTypes?: string[];
  /** Source types left out. */
  notSourceTypes?: string[];
  /** One source type (the same as `sourceTypes: [t]`). */
  sourceType?: string;
  hasAttachments?: boolean;
  threadId?: string;
  startMicros?: number;
  endMicros?: number;
  endExclusive?: boolean;
  /** Documents that pass the date bounds whatever their timestamp: calendar events occurring inside them (issue 42). */
  occurringDocs?: Set<string> | null;
  person?: { personIds: Set<string>; identifiers: Set<string> };
  /** Only these documents (a tagging rule looking at new documents, src/organize/rules.ts). */
  docIds?: string[];
}

export interface QueryLexeme {
  term: string;
  /** Occurrences in the query. */
  qtf: number;
  /** Factor on the term's weight (prefix expansions of the last word weigh less than the word); 1 when absent. */
  weight?: number;
}

/**
 * A condition on documents, from the query's operators (query-parse.ts): any of the lexemes (a word
 * and, for the last word typed, its prefix expansions), a phrase (lexemes at these relative
 * positions, adjacent and in order), or a person in a role; `title`: in the title only (`subject:`).
 */
export type DocCondition =
  | { kind: 'terms'; terms: string[]; title?: boolean }
  | { kind: 'phrase'; terms: { term: string; at: number }[]; title?: boolean }
  | { kind: 'person'; personIds: string[]; identifiers: string[]; role?: 'sender' | 'recipient' };

/** What a query requires of a document beyond the filter. */
export interface QueryConstraints {
  /** Each group must hold; a group holds when one of its conditions does (`OR`). */
  all: DocCondition[][];
  /** None may hold (`-word`, `-"a phrase"`). */
  none: DocCondition[];
}

export interface MatchOptions {
  constraints?: QueryConstraints;
  /**
   * With no query lexeme, every document passing the filter and the constraints matches (a query
   * made only of operators), the newest first, each with score 1.
   */
  browse?: boolean;
}

export interface IndexHit {
  doc_id: string;
  chunk_id: string;
  score: number;
}

/**
 * A query's lexical matches: the best candidates and every matching document, as slots of the
 * index that found them (slots are never reused, so they stay meaningful while the index changes;
 * `facetsOf` skips those that died meanwhile).
 */
export interface IndexMatches {
  candidates: IndexHit[];
  /** Every document with a query lexeme that passes the filters, in no particular order. */
  docs: Int32Array;
  /** Query lexemes with their live document frequency. */
  terms: { term: string; qtf: number; df: number; idf: number }[];
}

export interface IndexFacets {
  /** Documents in the match set: lexical matches passing the filters plus the extra documents. */
  total: number;
  sourceTypes: { value: string; count: number }[];
  hasAttachments: { value: boolean; count: number }[];
  /** Linked people by number of matching documents, every person tied with the `personLimit`-th included. */
  people: { personId: string; count: number }[];
  /** Tags (a document's and its conversation's) by number of matching documents (identifiers `tag:NAME`). */
  tags: { value: string; count: number }[];
}

export interface IndexSearchResult {
  candidates: IndexHit[];
  /** Documents in the match set: lexical matches passing the filters plus the extra documents. */
  total: number;
  sourceTypes: { value: string; count: number }[];
  hasAttachments: { value: boolean; count: number }[];
  /** Linked people by number of matching documents, every person tied with the `personLimit`-th included. */
  people: { personId: string; count: number }[];
  /** Query lexemes with their live document frequency. */
  terms: { term: string; qtf: number; df: number; idf: number }[];
}

export interface DocumentAttributes {
  sourceType: string;
  hasAttachments: boolean;
  contentTimestamp: Date;
  threadId: string | null;
}
