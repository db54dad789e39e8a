/**
 * Organize (issue 44, docs/organize.md): tags on documents and conversations, tagging rules, saved
 * searches. Tag names are checked by src/organize/tag-names.ts (a bad one is a 422 with `detail`).
 */
import { EXAMPLE_UUID } from './examples.ts';
import { Type, type Static } from '@sinclair/typebox';
import { Timestamp, Uuid } from './common.ts';

const MAX_IDS = 10_000;

export const TagName = Type.String({
  minLength: 1,
  maxLength: 200,
  description: "A tag: case-insensitive (stored lower-case), '/' for hierarchy (finance/bank), at most 100 characters and 8 levels",
  examples: ['finance/bank'],
});
const Query = Type.String({ minLength: 1, maxLength: 2000, description: 'A query in the search language (docs/search.md); every word is required' });

export const TagChangeRequest = Type.Object(
  {
    tag: TagName,
    doc_ids: Type.Optional(Type.Array(Uuid, { maxItems: MAX_IDS, description: 'Documents (their active version)' })),
    thread_ids: Type.Optional(Type.Array(Uuid, { maxItems: MAX_IDS, description: "Conversations: the tag applies to every message for search" })),
    query: Type.Optional({ ...Query, description: 'Every document this query matches (every word required; operators as in search)' }),
  },
  {
    additionalProperties: false,
    title: 'TagChangeRequest',
    description: 'The tag, and at least one of doc_ids, thread_ids or query',
    examples: [{ tag: 'finance/bank', query: 'from:bank.example statement' }],
  },
);
export type TagChangeRequestT = Static<typeof TagChangeRequest>;

export const TagChangeResponse = Type.Object(
  {
    tag: Type.String(),
    matched: Type.Integer({ minimum: 0, description: 'Documents and conversations named or matched' }),
    changed: Type.Integer({ minimum: 0, description: 'Tags added (or removed) now; the others had it already (or did not)' }),
  },
  { title: 'TagChangeResponse' },
);

export const TagCount = Type.Object({
  name: Type.String(),
  documents: Type.Integer({ minimum: 0, description: 'Active documents with the tag (their own)' }),
  conversations: Type.Integer({ minimum: 0, description: 'Conversations with the tag' }),
  rules: Type.Integer({ minimum: 0, description: 'Rules that give it' }),
});
export const TagList = Type.Object({ tags: Type.Array(TagCount) }, { title: 'TagList' });

export const TagsOnQuery = Type.Object(
  {
    // One of the two: the example names a document (the contract test sends each parameter's example).
    doc_id: Type.Optional(Type.String({ format: 'uuid', examples: [EXAMPLE_UUID] })),
    thread_id: Type.Optional(Uuid),
  },
  { additionalProperties: false, description: 'One of doc_id or thread_id' },
);
const TagOn = Type.Object({ name: Type.String(), origin: Type.String({ description: 'manual, import, source (mail flags: unread, flagged, replied) or rule:RULE_ID' }) });
export const TagsOn = Type.Object(
  {
    document: Type.Array(TagOn, { description: "The document's own tags (doc_id)" }),
    conversation: Type.Array(TagOn, { description: "Its conversation's tags (thread_id, or the document's thread)" }),
  },
  { title: 'TagsOn' },
);

export const TagRule = Type.Object(
  {
    rule_id: Type.String(),
    tag: Type.String(),
    query: Type.String(),
    documents: Type.Integer({ minimum: 0, description: 'Documents carrying the tag from this rule' }),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'TagRule' },
);
export const TagRuleList = Type.Object({ rules: Type.Array(TagRule) }, { title: 'TagRuleList' });
export const TagRuleRequest = Type.Object(
  { tag: TagName, query: Query },
  { additionalProperties: false, title: 'TagRuleRequest', examples: [{ tag: 'finance', query: 'invoice OR receipt' }] },
);
export type TagRuleRequestT = Static<typeof TagRuleRequest>;
export const TagRulePatch = Type.Object(
  { tag: Type.Optional(TagName), query: Type.Optional(Query) },
  { additionalProperties: false, title: 'TagRulePatch' },
);
export const TagRuleCreated = Type.Object(
  { rule: TagRule, tagged: Type.Integer({ minimum: 0, description: 'Documents tagged now' }) },
  { title: 'TagRuleCreated' },
);
export const RuleIdParams = Type.Object({ rule_id: Uuid });
export const RuleDeleteQuery = Type.Object(
  { remove_tags: Type.Optional(Type.Boolean({ default: false, description: 'Also remove the tags this rule gave' })) },
  { additionalProperties: false },
);
export const RuleDeleted = Type.Object({ rule_id: Type.String(), tags_removed: Type.Integer({ minimum: 0 }) });

export const SavedFilters = Type.Object(
  {
    source_type: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
    has_attachments: Type.Optional(Type.Boolean()),
    person: Type.Optional(Type.String({ minLength: 1, maxLength: 320 })),
    start_date: Type.Optional(Timestamp),
    end_date: Type.Optional(Timestamp),
    thread_id: Type.Optional(Uuid),
  },
  { additionalProperties: false, description: 'The search filters, as GET /v1/search takes them' },
);
export type SavedFiltersT = Static<typeof SavedFilters>;

export const SavedName = Type.String({
  minLength: 1,
  maxLength: 64,
  pattern: '^[\\p{L}\\p{N}][\\p{L}\\p{N}_.\\-]*$',
  description: 'Letters, digits, _ . - (run as `memex search @NAME`); case-insensitive',
});
export const SavedParams = Type.Object({ name: SavedName });
export const SavedRequest = Type.Object(
  { query: Type.String({ minLength: 1, maxLength: 10000 }), filters: Type.Optional(SavedFilters) },
  { additionalProperties: false, title: 'SavedSearchRequest', examples: [{ query: 'tag:finance -tag:done', filters: { source_type: 'email' } }] },
);
export type SavedRequestT = Static<typeof SavedRequest>;
export const SavedSearch = Type.Object(
  {
    name: Type.String(),
    query: Type.String(),
    filters: Type.Record(Type.String(), Type.Unknown(), { description: 'The search filters it was saved with' }),
    count: Type.Optional(Type.Integer({ minimum: 0, description: 'Documents it matches now (lexical match set)' })),
    new_since_seen: Type.Optional(Type.Integer({ minimum: 0, description: 'Of those, ingested since it was last looked at (all of them when never)' })),
    seen_at: Type.Union([Type.String(), Type.Null()]),
    created_at: Type.String(),
    updated_at: Type.String(),
  },
  { title: 'SavedSearch' },
);
export const SavedList = Type.Object({ saved: Type.Array(SavedSearch) }, { title: 'SavedSearchList' });
export const SavedListQuery = Type.Object(
  { counts: Type.Optional(Type.Boolean({ default: true, description: 'Count matches and new ones (one query each)' })) },
  { additionalProperties: false },
);
export const SavedRunQuery = Type.Object(
  {
    k: Type.Integer({ minimum: 1, maximum: 50, default: 20 }),
    seen: Type.Optional(Type.Boolean({ default: true, description: 'Mark it looked at now' })),
    group: Type.Optional(Type.Literal('thread')),
  },
  { additionalProperties: false },
);
