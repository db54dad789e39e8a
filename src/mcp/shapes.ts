/**
 * The MCP tools' arguments and structured results (zod, as the SDK takes them), built once for every server.
 */
import { z } from 'zod';
import { ContextQuery } from '../schemas/context.ts';
import { MergeRequest, PeopleSearchQuery } from '../schemas/people.ts';
import { ASK_MAX_K, AskRequest, AskResponseSchema, SearchQuery } from '../schemas/search.ts';
import { LIMITS } from './limits.ts';

/**
 * An argument that is a field of the route it is sent to takes that field's bounds from the route's own
 * schema (src/schemas), so the two cannot drift; what a tool caps itself (list sizes, LIMITS) is its own.
 */
function text(field: { minLength?: number; maxLength?: number }): z.ZodString {
  let s = z.string();
  if (field.minLength !== undefined) s = s.min(field.minLength);
  if (field.maxLength !== undefined) s = s.max(field.maxLength);
  return s;
}

/** A whole number with the bounds (minimum, maximum) of a route's field; see text. */
function integer(field: { minimum?: number; maximum?: number }): z.ZodNumber {
  let n = z.number().int();
  if (field.minimum !== undefined) n = n.min(field.minimum);
  if (field.maximum !== undefined) n = n.max(field.maximum);
  return n;
}

export const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID (as returned by search)');
export const isoDate = z.string().min(4).max(40).describe('ISO 8601 date (2026-03-01) or date-time');
export const nullableString = z.string().nullable();


// ---------------------------------------------------------------- output schemas

export const SearchHit = z.object({
  document_id: z.string(),
  title: nullableString,
  snippet: z.string(),
  source_type: z.string(),
  date: z.string(),
  people: z.array(z.string()),
  thread_id: nullableString,
  url: nullableString,
  score: z.number(),
  has_attachments: z.boolean(),
  context: z.boolean().describe('true for thread neighbours added by context_window, not matches'),
  resource_uri: z.string(),
});

export const SearchOutput = {
  query: z.string(),
  total: z.number().int(),
  returned: z.number().int(),
  hits: z.array(SearchHit),
  relaxed: z
    .object({ note: z.string(), total: z.number().int() })
    .optional()
    .describe('Only when nothing matches the query as written (total 0): hits are then the documents that match its words, its phrases preferred'),
};

/** POST /v1/ask's answer as it is: the route's own schema (src/schemas/search.ts), open, so fields it gains later pass through. */
export const AskOutput = z.fromJSONSchema(AskResponseSchema as z.core.JSONSchema.JSONSchema);

export const Neighbour = z.object({ document_id: z.string(), title: nullableString, date: z.string(), snippet: z.string(), position: z.enum(['before', 'after']) });

export const DocumentOutput = {
  document_id: z.string(),
  title: nullableString,
  source_type: z.string(),
  date: z.string(),
  url: nullableString,
  people: z.array(z.string()),
  is_active_version: z.boolean(),
  text: z.string(),
  text_chars: z.number().int(),
  truncated: z.boolean(),
  metadata: z.record(z.string(), z.unknown()),
  attachments: z.array(z.object({ filename: nullableString, mime_type: nullableString, kind: nullableString, text: z.string() })),
  thread: z
    .object({ thread_id: z.string(), documents_in_thread: z.number().int(), neighbours: z.array(Neighbour) })
    .nullable(),
  resource_uri: z.string(),
};

export const PersonSummary = z.object({
  person_id: z.string(),
  display_name: z.string(),
  organization: nullableString,
  emails: z.array(z.string()),
  phones: z.array(z.string()),
  nicknames: z.array(z.string()),
});

export const PeopleOutput = { query: z.string(), total: z.number().int(), offset: z.number().int(), people: z.array(PersonSummary) };

export const Relationship = z.object({
  score: z.number(),
  last_contact_at: nullableString,
  features: z.record(z.string(), z.unknown()),
  summary: z.string(),
});

export const PersonOutput = {
  person_id: z.string(),
  display_name: z.string(),
  given_name: nullableString,
  family_name: nullableString,
  organization: nullableString,
  nicknames: z.array(z.string()),
  identifiers: z.array(z.object({ kind: z.string(), value: z.string(), label: nullableString })),
  merged_from: z.array(z.string()),
  relationship: Relationship.nullable(),
  relationship_note: nullableString,
  recent_documents: z.array(z.object({ document_id: z.string(), title: nullableString, source_type: z.string(), date: z.string() })),
  documents_total: z.number().int(),
};

export const TopOutput = {
  window: z.string(),
  total: z.number().int(),
  offset: z.number().int(),
  relationships: z.array(
    z.object({
      rank: z.number().int(),
      person_id: z.string(),
      display_name: z.string(),
      organization: nullableString,
      emails: z.array(z.string()),
      score: z.number(),
      last_contact_at: nullableString,
      summary: z.string(),
    }),
  ),
};

export const ActivityOutput = {
  days: z.number().int(),
  source_type: nullableString,
  documents: z.number().int(),
  threads: z.number().int(),
  last_activity_at: nullableString,
  busiest_threads: z.array(
    z.object({
      thread_id: z.string(),
      title: nullableString,
      source_type: z.string(),
      documents: z.number().int(),
      last_activity_at: nullableString,
      automated: z.boolean().describe('Every message of it is machine mail or from an automated sender'),
    }),
  ),
  highlights: z.array(
    z.object({ document_id: z.string(), title: nullableString, source_type: z.string(), date: z.string(), sender: nullableString, text: z.string() }),
  ),
};

export const MergeCandidatesOutput = {
  groups: z.array(
    z.object({
      display_name: z.string(),
      people: z.array(z.object({ person_id: z.string(), display_name: z.string(), emails: z.array(z.string()), message_count: z.number().int() })),
    }),
  ),
};
export const MergeInput = {
  target: text(MergeRequest.properties.target).describe('The person that stays: a person id, or an address or phone it owns'),
  source: text(MergeRequest.properties.source).describe('The person merged into it'),
};
export const MergeOutput = { merge_id: z.string(), target_person_id: z.string(), source_person_id: z.string() };

export const NoteOutput = { document_id: z.string(), status: z.string(), duplicate: z.boolean(), resource_uri: z.string() };

// ---------------------------------------------------------------- input schemas (built once)

export const SearchInput = {
  query: text(SearchQuery.properties.q).describe('What to look for, in words'),
  k: integer(SearchQuery.properties.k).default(10).describe(`Hits to return, 1..${SearchQuery.properties.k.maximum}`),
  source_type: text(SearchQuery.properties.source_type).optional().describe('email, chatapp, sms, note, file, …'),
  person: text(SearchQuery.properties.person).optional().describe("Only documents involving this email, phone or handle"),
  start_date: isoDate.optional(),
  end_date: isoDate.optional().describe('A bare date includes that whole day'),
  has_attachments: z.boolean().optional(),
  thread_id: uuid.optional(),
  context_window: integer(SearchQuery.properties.context_window).default(0).describe('Also return this many thread neighbours per hit'),
};

export const AskInput = {
  question: text(AskRequest.properties.query),
  // The route reads a larger k as ASK_MAX_K; the tool says so by refusing it.
  k: integer({ ...AskRequest.properties.k, maximum: ASK_MAX_K }).default(5).describe(`Passages to answer from, 1..${ASK_MAX_K}`),
};

export const DocumentInput = {
  document_id: uuid.describe('A document id from search, ask or another tool'),
  include_thread: z.boolean().default(true),
  max_chars: z.number().int().min(100).max(LIMITS.maxDocumentChars).default(LIMITS.documentChars),
};

export const PeopleInput = {
  query: text(PeopleSearchQuery.properties.q),
  limit: z.number().int().min(1).max(50).default(10),
  offset: z.number().int().min(0).max(100_000).default(0),
};

export const PersonInput = {
  person_id: uuid.describe('A person id from search_people or top_relationships'),
  recent: z.number().int().min(1).max(20).default(5),
};

export const TopInput = {
  window: z.string().regex(/^(\d{1,4}d|all)$/i, 'must look like 90d (days), or all').default('90d'),
  as_of: z
    .string()
    .max(40)
    .optional()
    .describe('Count the window back from this moment: latest (the newest message stored, for an archive) or an ISO date'),
  limit: z.number().int().min(1).max(50).default(10),
  offset: z.number().int().min(0).max(100_000).default(0),
};

export const ActivityInput = {
  days: integer(ContextQuery.properties.days).default(7),
  source_type: text(ContextQuery.properties.source_type).optional(),
  include_automated: z
    .boolean()
    .default(false)
    .describe("Also list automated senders' threads (statements, newsletters, no-reply mail) among the busiest"),
};

export const NoteInput = {
  title: z.string().min(1).max(500).optional(),
  text: z.string().min(1).max(LIMITS.noteChars),
};
