/**
 * The memex MCP server: tools and the document resource, each a thin wrapper of one or two public
 * routes (src/mcp/api.ts). The same server serves stdio (`memex mcp`) and streamable HTTP (/mcp).
 * Results are bounded: every list has a cap stated in its tool's description, long texts are cut
 * with a marker, and lists that can be long take an offset.
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { McpServer, ResourceTemplate } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { IngestRequestT } from '../schemas/ingest.ts';
import { callOk, ToolError, type MemexApi } from './api.ts';
import { cut, describeFeatures, documentUri, LIMITS, peopleNames, short, shortList } from './limits.ts';
import { registerOrganizeTools } from './organize-tools.ts';
import { getDocument, getPerson } from './reading.ts';
import { guarded, ok } from './results.ts';
import * as shapes from './shapes.ts';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };

export interface McpOptions {
  /** MCP_ALLOW_WRITE=true: register add_note, the only tool that writes. */
  allowWrite: boolean;
}

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
      inputSchema: shapes.SearchInput,
      outputSchema: shapes.SearchOutput,
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
        // Nothing as written (a phrase, an exclusion or an operator ruled everything out): what matches the words,
        // said so, as the web UI and `memex search` do (the route's `relaxed`).
        const relaxed = r.hits.length === 0 && r.relaxed && r.relaxed.hits.length > 0 ? r.relaxed : null;
        const hits = (relaxed ?? r).hits.map((h) => ({
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
        const text = relaxed
          ? `No documents match "${a.query}" as written (its quotes, exclusions and operators). ${relaxed.total} document(s) match its words; showing ${hits.length}:\n${lines.join('\n')}`
          : hits.length
            ? `${r.total} matching document(s); showing ${hits.length}:\n${lines.join('\n')}`
            : `No documents match "${a.query}".`;
        return ok({ query: r.query, total: r.total, returned: hits.length, hits, ...(relaxed ? { relaxed: { note: relaxed.note, total: relaxed.total } } : {}) }, text);
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
      inputSchema: shapes.AskInput,
      outputSchema: shapes.AskOutput,
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
      inputSchema: shapes.DocumentInput,
      outputSchema: shapes.DocumentOutput,
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
      inputSchema: shapes.PeopleInput,
      outputSchema: shapes.PeopleOutput,
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
      inputSchema: shapes.PersonInput,
      outputSchema: shapes.PersonOutput,
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
      inputSchema: shapes.TopInput,
      outputSchema: shapes.TopOutput,
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
      outputSchema: shapes.MergeCandidatesOutput,
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
      inputSchema: shapes.ActivityInput,
      outputSchema: shapes.ActivityOutput,
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
        inputSchema: shapes.MergeInput,
        outputSchema: shapes.MergeOutput,
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
        inputSchema: shapes.NoteInput,
        outputSchema: shapes.NoteOutput,
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
      if (!shapes.uuid.safeParse(id).success) throw new ToolError(`${uri.href}: the id must be a document UUID`);
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
