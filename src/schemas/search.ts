/** GET /v1/search: the query string and the answer (spec 4.3; conversations and attachments' messages: issue 31). */
import { Type } from '@sinclair/typebox';
import { Timestamp, Uuid } from './common.ts';

export const Loose = Type.Object({}, { additionalProperties: true });
const FacetList = Type.Array(Loose);

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
        'Query text: words (ranked), "phrases", -exclusions, OR, and operators from: to: with: subject: type: has:attachment ' +
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


export const SearchResponseSchema = Type.Object({
  query: Type.String(),
  k: Type.Integer(),
  total: Type.Integer({ description: 'Documents in the whole match set' }),
  group: Type.Optional(Type.Literal('thread')),
  total_groups: Type.Optional(
    Type.Integer({ description: 'group=thread: conversations in the whole match set (each document without a thread counts as one)' }),
  ),
  hits: Type.Array(
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
  ),
  facets: Type.Object({ source_type: FacetList, has_attachments: FacetList, person: FacetList }),
  legs: Loose,
});

