/**
 * MCP tools for tags and saved searches (issue 44, docs/organize.md), each a thin wrapper of one route:
 * list_tags (GET /v1/tags), list_saved_searches (GET /v1/saved), run_saved_search (GET /v1/saved/NAME/run,
 * without marking it looked at: "new since you last looked" is the user's), and with MCP_ALLOW_WRITE
 * tag_documents (POST /v1/tags/add|remove). Lists are capped as their descriptions say.
 */
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { z } from 'zod';
import { callOk, ToolError, type MemexApi } from './api.ts';
import { guarded, ok } from './results.ts';

/** Tags and saved searches listed at most. */
const MAX_LISTED = 500;
const SNIPPET = 300;

const TagOut = z.object({ name: z.string(), documents: z.number().int(), conversations: z.number().int(), rules: z.number().int() });
const SavedOut = z.object({
  name: z.string(),
  query: z.string(),
  filters: z.record(z.string(), z.unknown()),
  count: z.number().int().optional(),
  new_since_seen: z.number().int().optional(),
  seen_at: z.string().nullable(),
});
const RunHit = z.object({ document_id: z.string(), title: z.string().nullable(), snippet: z.string(), source_type: z.string(), date: z.string() });
const uuid = z.string().regex(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i, 'must be a UUID (as returned by search)');

export function registerOrganizeTools(server: McpServer, api: MemexApi, opts: { allowWrite: boolean }): void {
  server.registerTool(
    'list_tags',
    {
      title: "List the user's tags",
      description:
        `Every tag (at most ${MAX_LISTED}) with its documents, conversations and the rules that give it. Tags are ` +
        "lower-case, '/' makes levels (finance/bank); search with tag:NAME or tag:NAME/* (it and everything below).",
      inputSchema: {},
      outputSchema: { tags: z.array(TagOut), total: z.number().int() },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      guarded(async () => {
        const r = await callOk(api, 'listTags', {});
        const tags = r.tags.slice(0, MAX_LISTED);
        const text = tags.length ? tags.map((t) => `${t.name}: ${t.documents} document(s), ${t.conversations} conversation(s)`).join('\n') : 'No tags yet.';
        return ok({ tags, total: r.tags.length }, text);
      }),
  );

  server.registerTool(
    'list_saved_searches',
    {
      title: "List the user's saved searches",
      description: `The user's saved searches (at most ${MAX_LISTED}): name, query, filters, documents matched and how many are new since the user last looked. Run one with run_saved_search.`,
      inputSchema: {},
      outputSchema: { saved: z.array(SavedOut) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    () =>
      guarded(async () => {
        const r = await callOk(api, 'listSavedSearches', {});
        const saved = r.saved.slice(0, MAX_LISTED).map(({ name, query, filters, count, new_since_seen, seen_at }) => ({ name, query, filters, count, new_since_seen, seen_at }));
        const text = saved.length ? saved.map((s) => `@${s.name}: ${s.query} (${s.count ?? 0} documents, ${s.new_since_seen ?? 0} new)`).join('\n') : 'No saved searches.';
        return ok({ saved }, text);
      }),
  );

  server.registerTool(
    'run_saved_search',
    {
      title: 'Run a saved search',
      description: `Runs a saved search by name: up to k hits (max 50) with ids, titles, snippets (≤ ${SNIPPET} chars) and dates. Does not mark it as looked at.`,
      inputSchema: {
        name: z.string().min(1).max(64).describe('The saved search (list_saved_searches)'),
        k: z.number().int().min(1).max(50).default(10),
      },
      outputSchema: { name: z.string(), total: z.number().int(), hits: z.array(RunHit) },
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        const name = a.name.replace(/^@/, '');
        const r = await callOk(api, 'runSavedSearch', { params: { name }, query: { k: a.k, seen: false } });
        const hits = r.hits
          .filter((h) => !h.context)
          .map((h) => ({ document_id: h.document_id, title: h.title ?? null, snippet: (h.snippet ?? '').slice(0, SNIPPET), source_type: h.source_type, date: h.content_timestamp }));
        const text = hits.length
          ? `${r.total} matching document(s):\n${hits.map((h, i) => `${i + 1}. ${h.title ?? '(untitled)'} [${h.source_type}, ${h.date.slice(0, 10)}] id ${h.document_id}`).join('\n')}`
          : `No documents match @${name}.`;
        return ok({ name, total: r.total, hits }, text);
      }),
  );

  if (!opts.allowWrite) return;
  server.registerTool(
    'tag_documents',
    {
      title: 'Tag documents',
      description:
        "Adds a tag to (or with remove, takes it off) documents given by id or every document a query matches (every word " +
        "required; the search language, tag: included). Tag names are case-insensitive, '/' makes levels (finance/bank).",
      inputSchema: {
        tag: z.string().min(1).max(200),
        document_ids: z.array(uuid).max(1000).optional(),
        query: z.string().min(1).max(2000).optional(),
        remove: z.boolean().default(false),
      },
      outputSchema: { tag: z.string(), matched: z.number().int(), changed: z.number().int() },
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    (a) =>
      guarded(async () => {
        if (!a.document_ids?.length && !a.query) throw new ToolError('invalid argument: give document_ids or query');
        const r = await callOk(api, a.remove ? 'removeTag' : 'addTag', { body: { tag: a.tag, doc_ids: a.document_ids, query: a.query } });
        return ok(r, `${a.remove ? 'Removed' : 'Added'} ${r.tag} ${a.remove ? 'from' : 'to'} ${r.changed} document(s) (${r.matched} matched).`);
      }),
  );
}
