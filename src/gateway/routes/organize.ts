/**
 * Organize (issue 44, docs/organize.md): tags on documents and conversations, tagging rules, saved
 * searches. A bad tag name is a 422 in the spec's shape (`detail`), naming the field.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { FilterError, parseFilters } from '../../catalog/filters.ts';
import type { Database } from '../../db/types.ts';
import type { TagRules } from '../../organize/rules.ts';
import type { SavedSearches } from '../../organize/saved.ts';
import { normaliseTag } from '../../organize/tag-names.ts';
import { addTag, listTags, removeTag, tagsOn, targetExists } from '../../organize/tags.ts';
import type { Search } from '../../search/search.ts';
import { DetailMessage, ValidationErrorBody } from '../../schemas/common.ts';
import {
  RuleDeleted,
  RuleDeleteQuery,
  RuleIdParams,
  SavedList,
  SavedListQuery,
  SavedParams,
  SavedRequest,
  SavedRunQuery,
  SavedSearch,
  TagChangeRequest,
  TagChangeResponse,
  TagList,
  TagRule,
  TagRuleCreated,
  TagRuleList,
  TagRulePatch,
  TagRuleRequest,
  TagsOn,
  TagsOnQuery,
  type TagChangeRequestT,
} from '../../schemas/organize.ts';
import { SearchResponseSchema } from '../../schemas/search.ts';
import { InvalidRequestError, NotFoundError } from '../../util/errors.ts';

const invalid = (loc: (string | number)[], msg: string) => new InvalidRequestError({ loc, msg });

export const organizeRoutes: FastifyPluginAsyncTypebox<{ db: Database; search: Search; rules: TagRules; saved: SavedSearches }> = async (
  app,
  { db, search, rules, saved },
) => {
  /** The documents and conversations a tag change names; a string: what is wrong with the request. */
  async function targets(body: TagChangeRequestT): Promise<{ docIds: string[]; threadIds: string[] } | string> {
    if (body.doc_ids === undefined && body.thread_ids === undefined && body.query === undefined) {
      return 'give at least one of doc_ids, thread_ids or query';
    }
    const docIds = [...(body.doc_ids ?? [])];
    if (body.query !== undefined) {
      if (body.query.trim() === '') return 'the query must contain text';
      docIds.push(...(await search.matchDocIds(body.query, { every: true })));
    }
    return { docIds, threadIds: body.thread_ids ?? [] };
  }

  for (const op of ['add', 'remove'] as const) {
    app.post(
      `/v1/tags/${op}`,
      {
        schema: {
          tags: ['organize'],
          operationId: op === 'add' ? 'addTag' : 'removeTag',
          summary:
            op === 'add'
              ? 'Tag documents (by id or every one a query matches) or conversations (their messages carry it for search)'
              : 'Remove a tag from documents (by id or by query) or conversations',
          body: TagChangeRequest,
          response: { 200: TagChangeResponse, 422: ValidationErrorBody },
        },
      },
      async (req) => {
        const name = normaliseTag(req.body.tag);
        if (!name.ok) throw invalid(['body', 'tag'], name.error);
        const t = await targets(req.body);
        if (typeof t === 'string') throw invalid(['body'], t);
        const changed = op === 'add' ? await addTag(db, name.name, t) : await removeTag(db, name.name, t);
        return { tag: name.name, matched: new Set(t.docIds).size + new Set(t.threadIds).size, changed };
      },
    );
  }

  app.get(
    '/v1/tags',
    { schema: { tags: ['organize'], operationId: 'listTags', summary: 'Every tag with its documents, conversations and rules', response: { 200: TagList } } },
    async () => ({ tags: await listTags(db) }),
  );

  app.get(
    '/v1/tags/on',
    {
      schema: {
        tags: ['organize'],
        summary: "A document's tags (its own and its conversation's) or a conversation's",
        querystring: TagsOnQuery,
        response: { 200: TagsOn, 404: DetailMessage, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const { doc_id, thread_id } = req.query;
      if ((doc_id === undefined) === (thread_id === undefined)) throw invalid(['query'], 'give one of doc_id or thread_id');
      const on = { docId: doc_id, threadId: thread_id };
      if (!(await targetExists(db, on))) throw new NotFoundError(doc_id ? `no document ${doc_id}` : `no conversation ${thread_id}`);
      return tagsOn(db, on);
    },
  );

  app.get(
    '/v1/tags/rules',
    { schema: { tags: ['organize'], operationId: 'listTagRules', summary: 'Tagging rules', response: { 200: TagRuleList } } },
    async () => ({ rules: await rules.list() }),
  );

  app.post(
    '/v1/tags/rules',
    {
      schema: {
        tags: ['organize'],
        operationId: 'addTagRule',
        summary: 'A rule: tags every document its query matches now, and every one ingested later',
        body: TagRuleRequest,
        response: { 201: TagRuleCreated, 422: ValidationErrorBody },
      },
    },
    async (req, reply) => {
      const name = normaliseTag(req.body.tag);
      if (!name.ok) throw invalid(['body', 'tag'], name.error);
      if (req.body.query.trim() === '') throw invalid(['body', 'query'], 'the query must contain text');
      return reply.code(201).send(await rules.add(name.name, req.body.query.trim()));
    },
  );

  app.patch(
    '/v1/tags/rules/:rule_id',
    {
      schema: {
        tags: ['organize'],
        summary: "Change a rule's tag (its tags follow) or query (applied again)",
        params: RuleIdParams,
        body: TagRulePatch,
        response: { 200: TagRuleCreated, 404: DetailMessage, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      let tag: string | undefined;
      if (req.body.tag !== undefined) {
        const name = normaliseTag(req.body.tag);
        if (!name.ok) throw invalid(['body', 'tag'], name.error);
        tag = name.name;
      }
      if (req.body.query !== undefined && req.body.query.trim() === '') throw invalid(['body', 'query'], 'the query must contain text');
      return await rules.update(req.params.rule_id, { tag, query: req.body.query?.trim() });
    },
  );

  app.delete(
    '/v1/tags/rules/:rule_id',
    {
      schema: {
        tags: ['organize'],
        summary: 'Remove a rule (remove_tags=true: and the tags it gave)',
        params: RuleIdParams,
        querystring: RuleDeleteQuery,
        response: { 200: RuleDeleted, 404: DetailMessage },
      },
    },
    async (req) => {
      const removed = await rules.remove(req.params.rule_id, req.query.remove_tags ?? false);
      return { rule_id: req.params.rule_id, tags_removed: removed };
    },
  );

  app.get(
    '/v1/saved',
    {
      schema: {
        tags: ['organize'],
        operationId: 'listSavedSearches',
        summary: 'Saved searches, with what each matches now and how much of it is new since it was last looked at',
        querystring: SavedListQuery,
        response: { 200: SavedList },
      },
    },
    async (req) => ({ saved: await saved.list(req.query.counts ?? true) }),
  );

  app.put(
    '/v1/saved/:name',
    {
      schema: {
        tags: ['organize'],
        summary: 'Save a search (a query with its filters) under a name, or replace it',
        params: SavedParams,
        body: SavedRequest,
        response: { 200: SavedSearch, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      if (req.body.query.trim() === '') throw invalid(['body', 'query'], 'the query must contain text');
      try {
        return await saved.put(req.params.name, req.body.query.trim(), req.body.filters ?? {});
      } catch (err) {
        // The filters are the body's here, not the query string's (FilterError's own loc).
        if (err instanceof FilterError) throw invalid(['body', 'filters', err.field], err.message);
        throw err;
      }
    },
  );

  app.get(
    '/v1/saved/:name',
    { schema: { tags: ['organize'], summary: 'One saved search with its counts', params: SavedParams, response: { 200: SavedSearch, 404: DetailMessage } } },
    async (req) => {
      const s = await saved.get(req.params.name);
      return { ...s, ...(await saved.counts(s)) };
    },
  );

  app.delete(
    '/v1/saved/:name',
    { schema: { tags: ['organize'], summary: 'Remove a saved search', params: SavedParams, response: { 204: { type: 'null' }, 404: DetailMessage } } },
    async (req, reply) => {
      await saved.remove(req.params.name);
      return reply.code(204).send();
    },
  );

  app.get(
    '/v1/saved/:name/run',
    {
      schema: {
        tags: ['organize'],
        operationId: 'runSavedSearch',
        summary: 'Run a saved search (as GET /v1/search with its query and filters); marks it looked at unless seen=false',
        params: SavedParams,
        querystring: SavedRunQuery,
        response: { 200: SearchResponseSchema, 404: DetailMessage },
      },
    },
    async (req) => {
      const s = await saved.get(req.params.name);
      const result = await search.search({ q: s.query, k: req.query.k, filters: parseFilters(s.filters), context_window: 0, group: req.query.group });
      if (req.query.seen ?? true) await saved.markSeen(s.name);
      return result;
    },
  );
};
