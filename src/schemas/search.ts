/**
 * GET /v1/search: the query string and the answer (spec 4.3; conversations and attachments' messages: issue 31);
 * POST /v1/ask: the question and the answer with its citations.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Timestamp, Uuid } from './common.ts';

export const Loose = Type.Object({}, { additionalProperties: true });
export const Facet = Type.Object(
  {
    value: Type.Union([Type.String(), Type.Boolean()]),
    count: Type.Integer(),
    display_name: Type.Optional(Type.Union([Type.String(), Type.Null()], { description: "person: the person's name" })),
  },
  { additionalProperties: true },
);
const FacetList = Type.Array(Facet);

export const AttachedTo = Type.Object(
  {
    doc_id: Type.String(),
    title: Type.Union([Type.String(), Type.Null()]),
    content_timestamp: Type.String(),
    thread_id: Type.Union([Type.String(), Type.Null()]),
  },
  { description: 'The message an email attachment belongs to (by Message-ID)' },
);

export const Conversation = Type.Object(
  {
    thread_id: Type.String(),
    matching: Type.Integer({ description: 'Documents of the thread in the whole match set (filters applied)' }),
    messages: Type.Integer({ description: 'Documents of the thread' }),
    participants: Type.Array(
      Type.Object({ identifier: Type.String(), display_name: Type.Union([Type.String(), Type.Null()]), role: Type.Union([Type.String(), Type.Null()]) }),
      { description: 'Senders first, in the order they first wrote; at most 12' },
    ),
    participant_count: Type.Integer(),
    lists: Type.Optional(
      Type.Array(Type.Object({ list_id: Type.String(), name: Type.String() }), {
        description: 'The mailing lists it took place on (its venue); lists are never participants',
      }),
    ),
    first: Type.String({ description: "The thread's first document's date" }),
    last: Type.String({ description: "The thread's last document's date" }),
  },
  { description: 'group=thread: the conversation this hit stands for' },
);

export const SearchQuery = Type.Object(
  {
    q: Type.String({
      minLength: 1,
      maxLength: 10000,
      description:
        'Query text: words (ranked), "phrases", -exclusions, OR, and operators from: to: with: subject: type: list: tag: has:attachment ' +
        'in:thread/ID before: after: on: (docs/search.md). Beyond the per-query term budget the most common words are left out (legs says so).',
    }),
    k: Type.Integer({ minimum: 1, maximum: 50, default: 20, description: 'Documents to return' }),
    has_attachments: Type.Optional(Type.Boolean()),
    source_type: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    person: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'Email, phone, handle, or a person id (the person facet\'s value)' })),
    start_date: Type.Optional(Timestamp),
    end_date: Type.Optional({ ...Timestamp, description: 'A bare date includes that whole UTC day' }),
    thread_id: Type.Optional(Uuid),
    context_window: Type.Integer({ minimum: 0, maximum: 20, default: 0 }),
    group: Type.Optional(
      Type.Literal('thread', {
        description:
          'thread: one hit per conversation, its best document, with `conversation` (matching documents, participants, first and last dates); ' +
          'documents without a thread stand alone and an email attachment joins its message\'s conversation. Absent: one hit per document',
      }),
    ),
  },
  { additionalProperties: true },
);


/** Which legs answered (src/search/types.ts SearchLegs); open, for what they report later. */
export const SearchLegs = Type.Object(
  {
    lexical: Type.Boolean(),
    vector: Type.Boolean(),
    vector_model: Type.Optional(Type.String()),
    vector_error: Type.Optional(Type.String()),
    vector_skipped: Type.Optional(
      Type.String({ description: 'Why the vector leg did not run: no_embedder, model_starting, no_vectors, budget, lexical_sufficient, exact_terms, no_text' }),
    ),
    lexical_terms_dropped: Type.Optional(Type.Integer({ description: 'Query words left out by the per-query term budget (the most common)' })),
    lexical_note: Type.Optional(Type.String()),
  },
  { additionalProperties: true },
);

/** The hits of a search, best first (thread context after them, `context: true`). */
const SearchHits = Type.Array(
  Type.Object(
    {
      document_id: Type.String(),
      chunk_id: Type.Union([Type.String(), Type.Null()]),
      title: Type.Union([Type.String(), Type.Null()]),
      url: Type.Union([Type.String(), Type.Null()]),
      snippet: Type.String({ description: 'Matched terms are wrapped in « and »' }),
      score: Type.Number(),
      scores: Loose,
      sources: Type.Array(Type.String()),
      source_type: Type.String(),
      thread_id: Type.Union([Type.String(), Type.Null()]),
      content_timestamp: Type.String(),
      people: Type.Array(Type.Unknown()),
      has_attachments: Type.Boolean(),
      attachment_count: Type.Integer(),
      attachments: Type.Array(Loose),
      metadata: Loose,
      context: Type.Boolean(),
      context_for: Type.Optional(Type.Array(Type.String())),
      attached_to: Type.Optional(
        Type.Union([AttachedTo, Type.Null()], {
          description: 'An email attachment: the message it belongs to (null when that message is not stored); absent on other documents',
        }),
      ),
      conversation: Type.Optional(Conversation),
    },
    { additionalProperties: true },
  ),
);

export const SearchResponseSchema = Type.Object({
  query: Type.String(),
  k: Type.Integer(),
  total: Type.Integer({ description: 'Documents in the whole match set' }),
  group: Type.Optional(Type.Literal('thread')),
  total_groups: Type.Optional(
    Type.Integer({ description: 'group=thread: conversations in the whole match set (each document without a thread counts as one)' }),
  ),
  hits: SearchHits,
  facets: Type.Object({
    source_type: FacetList,
    has_attachments: FacetList,
    person: FacetList,
    list: Type.Optional(Type.Array(Facet, { description: 'Mailing lists (value: list id, display_name: its name); never in person' })),
    tag: Type.Optional(Type.Array(Facet, { description: "Tags of the matching documents and of their conversations (value: the tag's name)" })),
  }),
  legs: SearchLegs,
  relaxed: Type.Optional(
    Type.Object(
      { note: Type.String(), total: Type.Integer(), hits: SearchHits },
      {
        description:
          'Only when the query as written (its phrases, exclusions and operators) matched nothing: what matches its words read softly ' +
          '(phrases preferred, not required; operators and exclusions as words). `hits` and `total` above stay the strict answer.',
      },
    ),
  ),
});
export type SearchResponseT = Static<typeof SearchResponseSchema>;
export type SearchHitT = SearchResponseT['hits'][number];
export type ConversationT = Static<typeof Conversation>;
export type FacetT = Static<typeof Facet>;

/** Ask reads at most this many hits; a larger k is read as this (as the original did), not refused. */
export const ASK_MAX_K = 20;

export const AskRequest = Type.Object({
  query: Type.String({ minLength: 1, maxLength: 2000 }),
  k: Type.Optional(
    Type.Integer({ minimum: 1, default: 5, description: `Hits the answer is drawn from (spec 8: default 5); above ${ASK_MAX_K} is read as ${ASK_MAX_K}` }),
  ),
});

export const AskCitation = Type.Object(
  {
    document_id: Type.String(),
    chunk_id: Type.String(),
    score: Type.Number({ description: 'Retrieval score of the hit quoted' }),
    title: Type.Union([Type.String(), Type.Null()]),
    source_type: Type.String(),
    content_timestamp: Type.String(),
    quote: Type.String({ description: 'The text the answer quotes from the chunk' }),
    start: Type.Integer({ description: 'Start of the quote in the chunk text' }),
    end: Type.Integer({ description: 'End of the quote in the chunk text (exclusive)' }),
    doc_start: Type.Union([Type.Integer(), Type.Null()], { description: 'Start of the quote in the document text' }),
    doc_end: Type.Union([Type.Integer(), Type.Null()], { description: 'End of the quote in the document text (exclusive)' }),
  },
  { additionalProperties: true },
);

export const AskResponseSchema = Type.Object(
  {
    query: Type.String(),
    answer: Type.String({ description: 'The answer; each quoted part is followed by its marker [n], n naming citations[n-1]' }),
    citations: Type.Array(AskCitation),
    answer_mode: Type.Union([Type.Literal('extractive'), Type.Literal('llm'), Type.Literal('none')], {
      description: 'extractive: quoted from the documents; llm: written by the configured model from quoted units; none: nothing answers',
    }),
    llm_error: Type.Optional(Type.String()),
    llm_fallback: Type.Optional(
      Type.Union([Type.Literal('timeout'), Type.Literal('unreachable'), Type.Literal('http_error'), Type.Literal('empty')], {
        description: 'Why the configured model\'s answer was not used (the answer is extractive)',
      }),
    ),
    legs: Type.Optional(Loose),
  },
  { additionalProperties: true },
);
export type AskRequestT = Static<typeof AskRequest>;
export type AskCitationT = Static<typeof AskCitation>;
export type AskResponseT = Static<typeof AskResponseSchema>;
