/** Shapes shared by the search modules. */

/**
 * What search needs of an embedding provider. Import-compatible with src/embedding/types.ts
 * (`Embedder`): any provider of the embedding worker can be passed as is.
 */
import type { SearchFilters } from '../catalog/filters.ts';
export interface QueryEmbedder {
  name: string;
  dimensions: number;
  embed(texts: string[], kind?: 'query' | 'passage', opts?: { signal?: AbortSignal }): Promise<number[][]>;
}

export interface SearchRequest {
  q: string;
  k: number;
  filters: SearchFilters;
  context_window: number;
  /**
   * `thread`: one hit per conversation (its best document, with `conversation`); documents without
   * a thread, and attachments whose message is not in one, stand alone. Absent: one hit per document.
   */
  group?: 'thread';
}

/** How a search is answered beyond its request. */
export interface SearchOptions {
  /** The owner's person ids: the owner is in nearly every message and no contact, never in the person facet (issue 35). */
  ownerIds?: () => Promise<string[]>;
}

/** The message an email attachment hit belongs to (linked by Message-ID, src/catalog/attachments.ts). */
export interface AttachedTo {
  doc_id: string;
  title: string | null;
  content_timestamp: string;
  thread_id: string | null;
}

/** A conversation as a group=thread hit shows it. */
export interface Conversation {
  thread_id: string;
  /** Documents of the thread in the whole match set (the filters applied). */
  matching: number;
  /** Active documents of the thread. */
  messages: number;
  /** The thread's people, senders first (in the order they first wrote), at most CONVERSATION_PEOPLE. */
  participants: { identifier: string; display_name: string | null; role: string | null }[];
  participant_count: number;
  /** The mailing lists the conversation took place on (issue 40): its venue, not among the participants. */
  lists?: { list_id: string; name: string }[];
  /** Dates of the thread's first and last documents. */
  first: string;
  last: string;
}

export interface Attachment {
  index: number | null;
  kind: string | null;
  role: string | null;
  mime_type: string | null;
  filename: string | null;
  size_bytes: number | null;
}

export interface SearchHit {
  document_id: string;
  chunk_id: string | null;
  title: string | null;
  url: string | null;
  snippet: string;
  score: number;
  scores: { lexical: number | null; vector: number | null; fused: number };
  sources: ('lexical' | 'vector' | 'context')[];
  source_type: string;
  thread_id: string | null;
  content_timestamp: string;
  people: unknown[];
  has_attachments: boolean;
  attachment_count: number;
  attachments: Attachment[];
  metadata: Record<string, unknown>;
  context: boolean;
  /** For context hits: the hit documents this one is a neighbour of. */
  context_for?: string[];
  /** For an email attachment: its message (null when the message is not stored); absent on other documents. */
  attached_to?: AttachedTo | null;
  /** group=thread: the conversation this hit stands for (absent on a document without one). */
  conversation?: Conversation;
}

export interface FacetValue {
  value: string | boolean;
  count: number;
  display_name?: string | null;
}

export interface SearchFacets {
  source_type: FacetValue[];
  has_attachments: FacetValue[];
  person: FacetValue[];
  /** Mailing lists by matching documents (value: the list id, display_name: its name); lists are not in `person`. */
  list?: FacetValue[];
  /** Tags by matching documents (a document's and its conversation's; value: the tag's name). */
  tag?: FacetValue[];
}

/**
 * Why the vector leg did not run: no embedder, its model threads still starting (`model_starting`), no vectors stored for the model yet, the query
 * embedding, or on a PostgreSQL server the k-NN, was not done within SEARCH_VECTOR_BUDGET_MS (the
 * answer is lexical-only), or the lexical leg's best k outrank anything the vector leg could add
 * (`lexical_sufficient`, SEARCH_VECTOR_LEG=auto: fusion.ts, lexicalDecidesPage), or the query's terms are
 * exact and match (`exact_terms`: fusion.ts, vectorOnlySlots; the vector leg could add nothing), or the query has
 * no words to embed, only operators (`no_text`, query-parse.ts).
 */
export type VectorSkip = 'no_embedder' | 'model_starting' | 'no_vectors' | 'budget' | 'lexical_sufficient' | 'exact_terms' | 'no_text';

export interface SearchLegs {
  lexical: boolean;
  vector: boolean;
  vector_model?: string;
  vector_error?: string;
  vector_skipped?: VectorSkip;
  /** Distinct query lexemes left out of the lexical leg by the per-query term budget (the most common ones). */
  lexical_terms_dropped?: number;
  lexical_note?: string;
}

export interface SearchResponse {
  query: string;
  k: number;
  hits: SearchHit[];
  /** Documents in the whole match set (both legs, after filters and floors); facets count these. */
  total: number;
  /** group=thread: the grouping asked for, and the conversations (and thread-less documents) the match set makes. */
  group?: 'thread';
  total_groups?: number;
  facets: SearchFacets;
  legs: SearchLegs;
  /**
   * Only when the query as written matched nothing: what matches its words read softly (phrases preferred, not
   * required; exclusions and operators as words). `hits` and `total` stay the strict answer.
   */
  relaxed?: { note: string; total: number; hits: SearchHit[] };
  /** The query's lexemes and their idf in the lexical index (for ask; the HTTP answer leaves them out). */
  terms?: { term: string; idf: number }[];
}
