/**
 * The memex MCP server: tools and the document resource, each a thin wrapper of one or two public
 * routes (src/mcp/api.ts). The same server serves stdio (`memex mcp`) and streamable HTTP (/mcp).
 * Results are bounded: every list has a cap stated in its tool's description, long texts are cut
 * with a marker, and lists that can be long take an offset.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import { z } from 'zod';
import type { DocumentListItemT } from '../schemas/documents.ts';
import type { IngestRequestT } from '../schemas/ingest.ts';
import { AskResponseSchema } from '../schemas/search.ts';
import { callOk, ToolError, type MemexApi } from './api.ts';
import { guarded, ok } from './results.ts';
import { registerOrganizeTools } from './organize-tools.ts';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

export interface McpOptions {
  /** MCP_ALLOW_WRITE=true: register add_note, the only tool that writes. */
  allowWrite: boolean;
}

export const LIMITS = {
  snippetChars: 400,
  documentChars: 20_000,
  maxDocumentChars: 200_000,
  attachmentChars: 4_000,
  threadNeighbours: 5,
  threadScan: 1_000,
  highlightChars: 500,
  noteChars: 100_000,
  metadataChars: 8_000,
  /** Titles, names and URLs in any result (stored titles are at most 1,000 characters). */
  titleChars: 300,
  urlChars: 2_000,
  nameChars: 200,
  /** Identifiers (emails, phones, nicknames) listed per person. */
  listItems: 20,
  /** memex://document/{id}: the text read through the resource (get_document reads up to maxDocumentChars). */
  resourceChars: 20_000,
  /** get_document: what the result may hold beyond max_chars (field names, ids, dates, markers). */
  documentOverhead: 2_000,
} as const;

const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID (as returned by search)');
const isoDate = z.string().min(4).max(40).describe('ISO 8601 date (2026-03-01) or date-time');
const nullableString = z.string().nullable();

export const documentUri = (id: string) => `memex://document/${id}`;

/** A title, name or URL at most `max` characters, cut with "…". */
function short<T extends string | null | undefined>(s: T, max: number = LIMITS.titleChars): T {
  if (typeof s !== 'string' || s.length <= max) return s;
  return (max <= 0 ? '' : `${s.slice(0, max - 1)}…`) as T;
}

/** A list of short strings: at most LIMITS.listItems, each at most LIMITS.nameChars. */
function shortList(xs: unknown): string[] {
  return (Array.isArray(xs) ? xs : []).slice(0, LIMITS.listItems).map((x) => short(String(x), LIMITS.nameChars));
}

function cut(text: string, max: number): { text: string; truncated: boolean } {
  if (text.length <= max) return { text, truncated: false };
  return { text: `${text.slice(0, max)}\n[… truncated: ${text.length - max} more characters]`, truncated: true };
}

/** Names of the people of a document or hit (display name, else the identifier). */
function peopleNames(people: unknown): string[] {
  if (!Array.isArray(people)) return [];
  const out: string[] = [];
  for (const p of people) {
    if (typeof p === 'string') out.push(p);
    else if (p && typeof p === 'object') {
      const o = p as Record<string, unknown>;
      const name = (typeof o.display_name === 'string' && o.display_name.trim()) || o.identifier || o.name;
      if (typeof name === 'string' && name) out.push(name);
    }
  }
  return [...new Set(out)].slice(0, LIMITS.listItems).map((n) => short(n, LIMITS.nameChars));
}

/** Metadata as stored, or when its JSON is longer than the cap, its scalar fields (strings cut) and a marker. */
function boundedMetadata(metadata: Record<string, unknown>, max: number = LIMITS.metadataChars): Record<string, unknown> {
  if (JSON.stringify(metadata).length <= max) return metadata;
  const out: Record<string, unknown> = {};
  let used = 0;
  for (const [k, v] of Object.entries(metadata)) {
    let value: unknown;
    if (typeof v === 'string') value = v.length > 200 ? `${v.slice(0, 200)}…` : v;
    else if (typeof v === 'number' || typeof v === 'boolean' || v === null) value = v;
    else continue;
    const size = JSON.stringify(k).length + JSON.stringify(value).length + 2;
    if (used + size > max) break;
    out[k] = value;
    used += size;
  }
  out._truncated = `metadata over ${max} characters: nested and further fields left out`;
  return out;
}

/** Feature words of a relationship edge (edge_features of spec 2.6). */
export function describeFeatures(f: Record<string, any>): string {
  const parts: string[] = [];
  const days = Number(f.days_since_last_message);
  if (Number.isFinite(days)) parts.push(days < 1 ? 'last message today' : `last message ${Math.round(days)} day${Math.round(days) === 1 ? '' : 's'} ago`);
  if (typeof f.messages_30d === 'number') parts.push(`${f.messages_30d} message${f.messages_30d === 1 ? '' : 's'} in the last 30 days`);
  if (typeof f.distinct_threads_90d === 'number') parts.push(`${f.distinct_threads_90d} conversation${f.distinct_threads_90d === 1 ? '' : 's'} in 90 days`);
  if (typeof f.attachments_30d === 'number' && f.attachments_30d > 0) parts.push(`${f.attachments_30d} attachment${f.attachments_30d === 1 ? '' : 's'} in 30 days`);
  if (typeof f.avg_reply_latency_seconds === 'number') {
    const h = f.avg_reply_latency_seconds / 3600;
    parts.push(`replies after ${h < 1 ? `${Math.max(1, Math.round(h * 60))} min` : `${h.toFixed(h < 10 ? 1 : 0)} h`} on average`);
  }
  return parts.join('; ');
}

// ---------------------------------------------------------------- output schemas

const SearchHit = z.object({
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

const SearchOutput = { query: z.string(), total: z.number().int(), returned: z.number().int(), hits: z.array(SearchHit) };

/** POST /v1/ask's answer as it is: the route's own schema (src/schemas/search.ts), open, so fields it gains later pass through. */
const AskOutput = z.fromJSONSchema(AskResponseSchema as z.core.JSONSchema.JSONSchema);

const Neighbour = z.object({ document_id: z.string(), title: nullableString, date: z.string(), snippet: z.string(), position: z.enum(['before', 'after']) });

const DocumentOutput = {
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

const PersonSummary = z.object({
  person_id: z.string(),
  display_name: z.string(),
  organization: nullableString,
  emails: z.array(z.string()),
  phones: z.array(z.string()),
  nicknames: z.array(z.string()),
});

const PeopleOutput = { query: z.string(), total: z.number().int(), offset: z.number().int(), people: z.array(PersonSummary) };

const Relationship = z.object({
  score: z.number(),
  last_contact_at: nullableString,
  features: z.record(z.string(), z.unknown()),
  summary: z.string(),
});

const PersonOutput = {
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

const TopOutput = {
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

const ActivityOutput = {
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

const MergeCandidatesOutput = {
  groups: z.array(
    z.object({
      display_name: z.string(),
      people: z.array(z.object({ person_id: z.string(), display_name: z.string(), emails: z.array(z.string()), message_count: z.number().int() })),
    }),
  ),
};
const MergeInput = {
  target: z.string().min(1).max(320).describe('The person that stays: a person id, or an address or phone it owns'),
  source: z.string().min(1).max(320).describe('The person merged into it'),
};
const MergeOutput = { merge_id: z.string(), target_person_id: z.string(), source_person_id: z.string() };

const NoteOutput = { document_id: z.string(), status: z.string(), duplicate: z.boolean(), resource_uri: z.string() };

// ---------------------------------------------------------------- input schemas (built once)

const SearchInput = {
  query: z.string().min(1).max(10000).describe('What to look for, in words'),
  k: z.number().int().min(1).max(50).default(10).describe('Hits to return, 1..50'),
  source_type: z.string().min(1).max(64).optional().describe('email, chatapp, sms, note, file, …'),
  person: z.string().min(1).max(320).optional().describe("Only documents involving this email, phone or handle"),
  start_date: isoDate.optional(),
  end_date: isoDate.optional().describe('A bare date includes that whole day'),
  has_attachments: z.boolean().optional(),
  thread_id: uuid.optional(),
  context_window: z.number().int().min(0).max(20).default(0).describe('Also return this many thread neighbours per hit'),
};

const AskInput = {
  question: z.string().min(1).max(2000),
  k: z.number().int().min(1).max(20).default(5).describe('Passages to answer from, 1..20'),
};

const DocumentInput = {
  document_id: uuid.describe('A document id from search, ask or another tool'),
  include_thread: z.boolean().default(true),
  max_chars: z.number().int().min(100).max(LIMITS.maxDocumentChars).default(LIMITS.documentChars),
};

const PeopleInput = {
  query: z.string().min(1).max(200),
  limit: z.number().int().min(1).max(50).default(10),
  offset: z.number().int().min(0).max(100_000).default(0),
};

const PersonInput = {
  person_id: uuid.describe('A person id from search_people or top_relationships'),
  recent: z.number().int().min(1).max(20).default(5),
};

const TopInput = {
  window: z.string().regex(/^(\d{1,4}d|all)$/i, 'must look like 90d (days), or all').default('90d'),
  as_of: z
    .string()
    .max(40)
    .optional()
    .describe('Count the window back from this moment: latest (the newest message stored, for an archive) or an ISO date'),
  limit: z.number().int().min(1).max(50).default(10),
  offset: z.number().int().min(0).max(100_000).default(0),
};

const ActivityInput = {
  days: z.number().int().min(1).max(3650).default(7),
  source_type: z.string().min(1).max(64).optional(),
  include_automated: z
    .boolean()
    .default(false)
    .describe("Also list automated senders' threads (statements, newsletters, no-reply mail) among the busiest"),
};

const NoteInput = {
  title: z.string().min(1).max(500).optional(),
  text: z.string().min(1).max(LIMITS.noteChars),
};

// ---------------------------------------------------------------- the server

/** One validator for every server instance: /mcp builds a server per request (Ajv is costly to create). */
const validator = new AjvJsonSchemaValidator();

export function createMcpServer(api: MemexApi, opts: McpOptions): McpServer {
  const server = new McpServer(
    { name: 'memex', version },
    {
      instructions:
        "memex is the user's personal data (messages, email, files, notes, contacts). Use search or ask to find things, " +
        'get_document to read one, search_people/get_person for who someone is, top_relationships and recent_activity for ' +
        'who and what matters lately. Document ids from any tool work with get_document and memex://document/{id}.',
      jsonSchemaValidator: validator,
    },
  );

  server.registerTool(
    'search',
    {
      title: 'Search personal data',
      description:
        'Hybrid (keyword + semantic) search over messages, email, files and notes. Returns up to k hits (max 50) with ' +
        `document ids, titles (≤ ${LIMITS.titleChars} chars), snippets (≤ ${LIMITS.snippetChars} chars), URLs (≤ ${LIMITS.urlChars}), ` +
        `dates and people (≤ ${LIMITS.listItems}). Filters narrow by source, person ` +
        '(email, phone or handle), dates, attachments or thread. Read a hit in full with get_document.',
      inputSchema: SearchInput,
      outputSchema: SearchOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        const r = await callOk(
          api,
          'search',
          {
            query: {
              q: a.query,
              k: a.k,
              source_type: a.source_type,
              person: a.person,
              start_date: a.start_date,
              end_date: a.end_date,
              has_attachments: a.has_attachments,
              thread_id: a.thread_id,
              context_window: a.context_window,
            },
          },
          { q: 'query' },
        );
        const hits = r.hits.map((h) => ({
          document_id: h.document_id,
          title: short(h.title ?? null),
          snippet: cut(h.snippet ?? '', LIMITS.snippetChars).text,
          source_type: h.source_type,
          date: h.content_timestamp,
          people: peopleNames(h.people),
          thread_id: h.thread_id ?? null,
          url: short(h.url ?? null, LIMITS.urlChars),
          score: Number(h.score) || 0,
          has_attachments: Boolean(h.has_attachments),
          context: Boolean(h.context),
          resource_uri: documentUri(h.document_id),
        }));
        const lines = hits.map(
          (h, i) =>
            `${i + 1}. ${h.title ?? '(untitled)'} [${h.source_type}, ${h.date.slice(0, 10)}${h.context ? ', context' : ''}] id ${h.document_id}\n   ${h.snippet.replace(/\s+/g, ' ')}`,
        );
        const text = hits.length
          ? `${r.total} matching document(s); showing ${hits.length}:\n${lines.join('\n')}`
          : `No documents match "${a.query}".`;
        return ok({ query: r.query, total: r.total, returned: hits.length, hits }, text);
      }),
  );

  server.registerTool(
    'ask',
    {
      title: 'Answer a question from personal data',
      description:
        'Answers a question from the k most relevant passages (k ≤ 20, default 5): the one to three sentences that answer ' +
        'it, each followed by [n], and citations[n-1] with the document id, chunk id, score and the quoted text with its ' +
        'span; exactly what POST /v1/ask returns. answer_mode none means nothing in the data answers the question. ' +
        'Without a configured LLM the answer is extractive (quoted).',
      inputSchema: AskInput,
      outputSchema: AskOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        const r = await callOk(api, 'ask', { body: { query: a.question, k: a.k } }, { query: 'question' });
        // The short answer first, then each source with the sentence it quotes.
        const cites = r.citations.map(
          (c, i) => `[${i + 1}] ${c.title ?? '(untitled)'} (${[c.source_type, String(c.content_timestamp ?? '').slice(0, 10)].filter(Boolean).join(', ')}), document ${c.document_id}: "${c.quote ?? ''}"`,
        );
        const note = r.llm_error ? `\n\n(${r.llm_error})` : '';
        return ok(r, `${r.answer}${note}${cites.length ? `\n\nSources:\n${cites.join('\n')}` : ''}`);
      }),
  );

  server.registerTool(
    'get_document',
    {
      title: 'Read one document',
      description:
        `The document with its metadata, text (cut with a marker after max_chars, default ${LIMITS.documentChars}, ` +
        `max ${LIMITS.maxDocumentChars}), metadata (nested fields dropped past ${LIMITS.metadataChars} chars), its ` +
        `attachments' text (≤ ${LIMITS.attachmentChars} chars each, ≤ 20) and, with ` +
        `include_thread, up to ${LIMITS.threadNeighbours} thread neighbours on each side. max_chars bounds the whole ` +
        `result: title, URL, people, text, metadata, attachments and neighbours together, in that order, hold at most ` +
        `max_chars characters (plus ≤ ${LIMITS.documentOverhead} for field names, ids and dates).`,
      inputSchema: DocumentInput,
      outputSchema: DocumentOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) => guarded(async () => getDocument(api, a.document_id, a.include_thread, a.max_chars)),
  );

  server.registerTool(
    'search_people',
    {
      title: 'Find people',
      description:
        'People whose name, nickname, organisation, email or phone matches the query; up to limit (max 50, default 10) ' +
        'per page, with offset for the next page. Returns ids for get_person.',
      inputSchema: PeopleInput,
      outputSchema: PeopleOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        const r = await callOk(api, 'searchPeople', { query: { q: a.query, limit: a.limit, offset: a.offset } }, { q: 'query' });
        const people = r.results.map((p) => ({
          person_id: p.person_id,
          display_name: short(p.display_name, LIMITS.nameChars),
          organization: short(p.organization ?? null, LIMITS.nameChars),
          emails: shortList(p.emails),
          phones: shortList(p.phones),
          nicknames: shortList(p.nicknames),
        }));
        const lines = people.map(
          (p, i) =>
            `${a.offset + i + 1}. ${p.display_name}${p.organization ? ` (${p.organization})` : ''} ${[...p.emails, ...p.phones].slice(0, 3).join(', ')} id ${p.person_id}`,
        );
        const more = r.total > a.offset + people.length ? `\nMore: call again with offset ${a.offset + people.length}.` : '';
        return ok(
          { query: a.query, total: r.total, offset: a.offset, people },
          people.length ? `${r.total} person(s) match:\n${lines.join('\n')}${more}` : `Nobody matches "${a.query}".`,
        );
      }),
  );

  server.registerTool(
    'get_person',
    {
      title: 'About one person',
      description:
        'A person: identifiers, organisation, the relationship score with its features in words, and the most recent ' +
        'documents exchanged with them (recent, max 20, default 5). Merged ids answer with the surviving person.',
      inputSchema: PersonInput,
      outputSchema: PersonOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) => guarded(async () => getPerson(api, a.person_id, a.recent)),
  );

  server.registerTool(
    'top_relationships',
    {
      title: 'Who matters most lately',
      description:
        'People ranked by relationship score (recency, volume, breadth, attachments, reply speed) among those contacted ' +
        'inside the window (e.g. 90d, up to 3650d); up to limit (max 50, default 10) per page, with offset.',
      inputSchema: TopInput,
      outputSchema: TopOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        const r = await callOk(api, 'topRelationships', { query: { window: a.window, limit: a.limit, offset: a.offset, as_of: a.as_of } });
        const relationships = r.relationships.map((e, i) => ({
          rank: a.offset + i + 1,
          person_id: e.person_id,
          display_name: short(e.display_name, LIMITS.nameChars),
          organization: short(e.organization ?? null, LIMITS.nameChars),
          emails: shortList(e.emails),
          score: Number(e.score),
          last_contact_at: e.last_contact_at ?? null,
          summary: describeFeatures(e.features ?? {}),
        }));
        const lines = relationships.map((e) => `${e.rank}. ${e.display_name} — score ${e.score.toFixed(1)}: ${e.summary} (id ${e.person_id})`);
        const more = r.total_count > a.offset + relationships.length ? `\nMore: call again with offset ${a.offset + relationships.length}.` : '';
        return ok(
          { window: r.window, total: r.total_count, offset: a.offset, relationships },
          relationships.length ? `Top relationships over ${r.window}:\n${lines.join('\n')}${more}` : `No contact with anyone inside ${r.window}.`,
        );
      }),
  );

  server.registerTool(
    'merge_candidates',
    {
      title: 'People who may be one person',
      description:
        'Groups of people with the same name under different addresses. They are never merged by themselves: ask the user, ' +
        'then merge with merge_people (when writing is allowed) or `memex people merge A B`.',
      inputSchema: {},
      outputSchema: MergeCandidatesOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      guarded(async () => {
        const r = await callOk(api, 'mergeCandidates', { query: { limit: 50 } });
        const groups = r.groups.map((g) => ({
          display_name: short(g.display_name, LIMITS.nameChars),
          people: g.people.map((p) => ({ person_id: p.person_id, display_name: short(p.display_name, LIMITS.nameChars), emails: shortList(p.emails), message_count: p.message_count })),
        }));
        const lines = groups.map((g) => `- ${g.display_name}: ${g.people.map((p) => `${p.emails.join(', ') || '(no address)'} (id ${p.person_id}, ${p.message_count} messages)`).join('; ')}`);
        return ok({ groups }, groups.length ? `People who may be one person:\n${lines.join('\n')}` : 'No two people share a name.');
      }),
  );

  server.registerTool(
    'recent_activity',
    {
      title: 'What happened lately',
      description:
        'Activity of the last `days` days (default 7, max 3650), optionally of one source type: counts, the 5 busiest ' +
        `threads and the 5 most recent highlights (≤ ${LIMITS.highlightChars} chars each). The busiest leave out automated ` +
        "senders' threads (statements, newsletters, no-reply mail) unless include_automated is true.",
      inputSchema: ActivityInput,
      outputSchema: ActivityOutput,
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        const r = await callOk(api, 'generalContext', {
          query: { days: a.days, source_type: a.source_type, include_automated: a.include_automated || undefined },
        });
        const out = {
          days: a.days,
          source_type: a.source_type ?? null,
          documents: r.total_messages,
          threads: r.total_threads,
          last_activity_at: r.last_message_ts ?? null,
          busiest_threads: r.top_threads.map((t) => ({
            thread_id: t.thread_id,
            title: short(t.title ?? null),
            source_type: t.source_type,
            documents: t.message_count,
            last_activity_at: t.last_message_ts ?? null,
            automated: t.automated === true,
          })),
          highlights: r.recent_highlights.map((h) => ({
            document_id: h.doc_id,
            title: short(h.title ?? null),
            source_type: h.source_type,
            date: h.ts,
            sender: short(h.sender ?? null, LIMITS.nameChars),
            text: cut(h.text ?? '', LIMITS.highlightChars).text,
          })),
        };
        const scope = `the last ${a.days} day(s)${a.source_type ? ` (${a.source_type})` : ''}`;
        if (out.documents === 0) return ok(out, `Nothing in ${scope}.`);
        const text = [
          `${out.documents} document(s) in ${out.threads} thread(s) over ${scope}.`,
          out.busiest_threads.length ? 'Busiest threads:' : '',
          ...out.busiest_threads.map(
            (t) => `- ${t.title ?? '(untitled)'} [${t.source_type}${t.automated ? ', automated' : ''}]: ${t.documents} document(s), thread ${t.thread_id}`,
          ),
          'Latest:',
          ...out.highlights.map(
            (h) => `- ${h.date.slice(0, 16).replace('T', ' ')} ${h.sender ?? ''} ${h.title ? `«${h.title}» ` : ''}${h.text.replace(/\s+/g, ' ').slice(0, 160)} (id ${h.document_id})`,
          ),
        ].filter(Boolean);
        return ok(out, text.join('\n'));
      }),
  );

  registerOrganizeTools(server, api, opts);

  if (opts.allowWrite) {
    server.registerTool(
      'merge_people',
      {
        title: 'Merge two people',
        description:
          'The user says two people are one (the same name under two addresses, see merge_candidates): source is merged ' +
          'into target, which keeps its name and takes the other one\'s addresses, documents and relationship.',
        inputSchema: MergeInput,
        outputSchema: MergeOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      (a) =>
        guarded(async () => {
          const r = await callOk(api, 'mergePeople', { body: { target: a.target, source: a.source } });
          const out = { merge_id: r.merge_id, target_person_id: r.target_person_id, source_person_id: r.source_person_id };
          return ok(out, `Merged ${r.source_person_id} into ${r.target_person_id}.`);
        }),
    );

    server.registerTool(
      'add_note',
      {
        title: 'Save a note',
        description:
          `Stores a note (source_type note, ≤ ${LIMITS.noteChars} chars) in memex; it becomes searchable once indexed. ` +
          'The same title and text again is recognised as a duplicate, not stored twice.',
        inputSchema: NoteInput,
        outputSchema: NoteOutput,
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
      },
      (a) =>
        guarded(async () => {
          if (a.text.trim() === '') throw new ToolError('invalid argument: text must contain something besides spaces');
          const key = createHash('sha256').update(`${a.title ?? ''}\n${a.text}`).digest('hex').slice(0, 32);
          const r = await callOk(
            api,
            'ingest',
            {
              body: {
                source_type: 'note',
                source_id: `mcp-note-${key}`,
                source_provider: 'mcp',
                title: a.title ?? null,
                content: { mime_type: 'text/plain', data: a.text },
                content_timestamp: new Date().toISOString(),
                // Metadata beyond the declared fields is kept as given (the schema is open).
                metadata: { created_by: 'mcp' } as IngestRequestT['metadata'],
              },
            },
            { data: 'text' },
          );
          const out = { document_id: r.doc_id, status: r.status, duplicate: Boolean(r.duplicate), resource_uri: documentUri(r.doc_id) };
          return ok(out, r.duplicate ? `This note was already stored (id ${r.doc_id}).` : `Note stored (id ${r.doc_id}).`);
        }),
    );
  }

  server.registerResource(
    'document',
    new ResourceTemplate('memex://document/{id}', { list: undefined }),
    {
      title: 'memex document',
      description:
        `The text of one document (find ids with the search tool): its title (≤ ${LIMITS.titleChars} chars), source and date, ` +
        `then its first ${LIMITS.resourceChars} characters, cut with a marker (get_document reads up to ${LIMITS.maxDocumentChars}).`,
      mimeType: 'text/plain',
    },
    async (uri, vars) => {
      const id = String(vars.id);
      if (!uuid.safeParse(id).success) throw new ToolError(`${uri.href}: the id must be a document UUID`);
      const doc = await callOk(api, 'getDocument', { params: { doc_id: id } });
      const header = [doc.title ? `# ${short(doc.title)}` : null, `${doc.source_type} · ${doc.content_timestamp}`].filter(Boolean).join('\n');
      return { contents: [{ uri: uri.href, mimeType: 'text/plain', text: `${header}\n\n${cut(doc.text ?? '', LIMITS.resourceChars).text}` }] };
    },
  );

  rejectNonObjectArguments(server);
  return server;
}

/**
 * tools/call whose `arguments` is not a JSON object (a string, an array, a number, null) failed the
 * SDK's request schema and came back as -32603 with the validator's raw output. Like every other bad
 * argument it is invalid params (-32602) with a message that says what to send.
 */
function rejectNonObjectArguments(server: McpServer): void {
  const handlers = (server.server as unknown as { _requestHandlers?: Map<string, (req: any, extra: any) => unknown> })._requestHandlers;
  const callTool = handlers?.get('tools/call');
  if (!handlers || !callTool) return;
  handlers.set('tools/call', (req, extra) => {
    const params = req?.params;
    const args = params?.arguments;
    if (!params || typeof params !== 'object' || typeof params.name !== 'string') {
      throw new McpError(ErrorCode.InvalidParams, 'tools/call needs params {name, arguments}: name is the tool name, a string');
    }
    if (args !== undefined && (args === null || typeof args !== 'object' || Array.isArray(args))) {
      const got = args === null ? 'null' : Array.isArray(args) ? 'an array' : `a ${typeof args}`;
      throw new McpError(ErrorCode.InvalidParams, `arguments of ${params.name} must be a JSON object of named arguments, not ${got}`);
    }
    return callTool(req, extra);
  });
}

/**
 * get_document: max_chars bounds the whole result, not only the text. Title, URL and people come
 * first, the text takes what is left, then metadata, attachments' text and thread neighbours fill
 * whatever remains; everything else in the result (field names, ids, dates, markers) stays under
 * LIMITS.documentOverhead, for the structured result and the text alike.
 */
async function getDocument(api: MemexApi, id: string, includeThread: boolean, maxChars: number): Promise<CallToolResult> {
  const doc = await callOk(api, 'getDocument', { params: { doc_id: id } }).catch((err: unknown) => {
    throw err instanceof ToolError && err.status === 404 ? new ToolError(`no document has id ${id}; use an id returned by search or ask`) : err;
  });
  let budget = maxChars;
  const take = (n: number) => {
    budget = Math.max(0, budget - n);
  };
  const title = short(doc.title ?? null, Math.min(LIMITS.titleChars, budget));
  take(title?.length ?? 0);
  const url = short(doc.canonical_uri ?? null, Math.min(LIMITS.urlChars, budget));
  take(url?.length ?? 0);
  const people: string[] = [];
  for (const name of peopleNames(doc.people)) {
    if (name.length > budget) break;
    people.push(name);
    take(name.length);
  }
  const fullText = String(doc.text ?? '');
  const body = cut(fullText, budget);
  take(Math.min(fullText.length, budget));
  const { attachments: rawAttachments, ...rest } = (doc.metadata ?? {}) as Record<string, unknown>;
  const metadata = boundedMetadata(rest, Math.min(LIMITS.metadataChars, budget));
  take(JSON.stringify(metadata).length);
  const attachments: { filename: string | null; mime_type: string | null; kind: string | null; text: string }[] = [];
  // Stored metadata.attachments entries: checked field by field, anything may be missing or of another type.
  type RawAttachment = { filename?: unknown; mime_type?: unknown; kind?: unknown; caption?: unknown; ocr?: { text?: unknown } | null } | null;
  for (const x of (Array.isArray(rawAttachments) ? rawAttachments : []).slice(0, 20) as RawAttachment[]) {
    if (budget <= 0) break;
    const entry = {
      filename: short(typeof x?.filename === 'string' ? x.filename : null, Math.min(LIMITS.nameChars, budget)),
      mime_type: short(typeof x?.mime_type === 'string' ? x.mime_type : null, 100),
      kind: short(typeof x?.kind === 'string' ? x.kind : null, 20),
      text: '',
    };
    take(entry.filename?.length ?? 0);
    const text = [x?.ocr?.text, x?.caption].filter((t) => typeof t === 'string' && t).join('\n');
    entry.text = cut(text, Math.min(LIMITS.attachmentChars, budget)).text;
    take(Math.min(text.length, LIMITS.attachmentChars));
    attachments.push(entry);
  }
  let thread: { thread_id: string; documents_in_thread: number; neighbours: z.infer<typeof Neighbour>[] } | null = null;
  if (includeThread && doc.thread_id) {
    thread = await threadNeighbours(api, doc.thread_id, id);
    const kept: z.infer<typeof Neighbour>[] = [];
    for (const n of thread.neighbours) {
      const size = (n.title?.length ?? 0) + n.snippet.length;
      if (size > budget) break;
      kept.push(n);
      take(size);
    }
    thread.neighbours = kept;
  }
  const out = {
    document_id: doc.doc_id,
    title,
    source_type: doc.source_type,
    date: doc.content_timestamp,
    url,
    people,
    is_active_version: Boolean(doc.is_active_version),
    text: body.text,
    text_chars: fullText.length,
    truncated: body.truncated,
    metadata,
    attachments,
    thread,
    resource_uri: documentUri(doc.doc_id),
  };
  const lines = [
    `${out.title ?? '(untitled)'} [${out.source_type}, ${out.date}]${out.people.length ? ` — ${out.people.join(', ')}` : ''}`,
    out.is_active_version ? '' : '(an older version of this document)',
    out.text,
    ...attachments.filter((x) => x.text).map((x) => `\n[attachment ${x.filename ?? ''}]\n${x.text}`),
    thread && thread.neighbours.length
      ? `\nThread (${thread.documents_in_thread} documents), neighbours:\n${thread.neighbours.map((n) => `- ${n.position}: ${n.date.slice(0, 16)} ${n.title ?? ''} ${n.snippet.slice(0, 120)} (id ${n.document_id})`).join('\n')}`
      : '',
  ].filter(Boolean);
  return ok(out, lines.join('\n'));
}

/** Up to LIMITS.threadNeighbours documents before and after `id` in its thread (newest-first pages). */
async function threadNeighbours(api: MemexApi, threadId: string, id: string) {
  const page = 200;
  const seen: DocumentListItemT[] = [];
  let total = 0;
  let at = -1;
  for (let offset = 0; offset < LIMITS.threadScan; offset += page) {
    const r = await callOk(api, 'listDocuments', { query: { thread_id: threadId, limit: page, offset } });
    total = r.total;
    seen.push(...r.documents);
    at = seen.findIndex((d) => d.doc_id === id);
    // Stop once the document and its older neighbours are in hand, or the thread is exhausted.
    if ((at >= 0 && seen.length - at > LIMITS.threadNeighbours) || r.documents.length < page) break;
  }
  const summary = (d: DocumentListItemT, position: 'before' | 'after') => ({
    document_id: d.doc_id,
    title: short(d.title ?? null),
    date: d.content_timestamp,
    snippet: cut(String(d.text ?? '').replace(/\s+/g, ' '), 200).text,
    position,
  });
  if (at < 0) return { thread_id: threadId, documents_in_thread: total, neighbours: [] };
  // The list is newest first: later documents come before `at`, earlier ones after it.
  const after = seen.slice(Math.max(0, at - LIMITS.threadNeighbours), at).reverse().map((d) => summary(d, 'after'));
  const before = seen.slice(at + 1, at + 1 + LIMITS.threadNeighbours).map((d) => summary(d, 'before'));
  return { thread_id: threadId, documents_in_thread: total, neighbours: [...before.reverse(), ...after] };
}

async function getPerson(api: MemexApi, personId: string, recent: number): Promise<CallToolResult> {
  const p = await callOk(api, 'getPerson', { params: { person_id: personId } }).catch((err: unknown) => {
    throw err instanceof ToolError && err.status === 404 ? new ToolError(`no person has id ${personId}; find ids with search_people`) : err;
  });
  let relationship: z.infer<typeof Relationship> | null = null;
  let note: string | null = null;
  const rel = await callOk(api, 'topRelationships', { query: { window: '3650d', person_id: p.person_id, limit: 1 } }).catch((err: unknown) => {
    if (!(err instanceof ToolError) || err.status === undefined) throw err;
    return err;
  });
  if (!(rel instanceof ToolError) && rel.relationships.length) {
    const e = rel.relationships[0];
    relationship = { score: Number(e.score), last_contact_at: e.last_contact_at ?? null, features: e.features ?? {}, summary: describeFeatures(e.features ?? {}) };
  } else if (!(rel instanceof ToolError)) note = 'no relationship edge: this person has no two-way contact with the self person in ten years (newsletters and no-reply senders get none)';
  else if (rel.status === 404) note = typeof rel.body?.detail === 'string' ? rel.body.detail : 'the self person is unknown';
  else note = `relationship unavailable (${rel.status})`;
  const docs = await callOk(api, 'listDocuments', { query: { person_id: p.person_id, limit: recent } });
  const out = {
    person_id: p.person_id,
    display_name: short(p.display_name, LIMITS.nameChars),
    given_name: short(p.given_name ?? null, LIMITS.nameChars),
    family_name: short(p.family_name ?? null, LIMITS.nameChars),
    organization: short(p.organization ?? null, LIMITS.nameChars),
    nicknames: shortList(p.nicknames),
    identifiers: p.identifiers.slice(0, 50).map((i) => ({ kind: i.kind, value: short(String(i.value_raw), LIMITS.nameChars), label: short(i.label ?? null, LIMITS.nameChars) })),
    merged_from: (p.merged_from ?? []).slice(0, 50),
    relationship,
    relationship_note: note,
    recent_documents: docs.documents.map((d) => ({
      document_id: d.doc_id,
      title: short(d.title ?? null),
      source_type: d.source_type,
      date: d.content_timestamp,
    })),
    documents_total: docs.total,
  };
  const text = [
    `${out.display_name}${out.organization ? ` (${out.organization})` : ''} — id ${out.person_id}`,
    out.identifiers.length ? `Identifiers: ${out.identifiers.map((i) => `${i.kind} ${i.value}`).join(', ')}` : '',
    relationship ? `Relationship score ${relationship.score.toFixed(1)}: ${relationship.summary}` : `Relationship: ${note}`,
    out.recent_documents.length
      ? `Recent documents (${out.documents_total} in all):\n${out.recent_documents.map((d) => `- ${d.date.slice(0, 10)} ${d.title ?? '(untitled)'} [${d.source_type}] id ${d.document_id}`).join('\n')}`
      : 'No documents with this person.',
  ].filter(Boolean);
  return ok(out, text.join('\n'));
}
