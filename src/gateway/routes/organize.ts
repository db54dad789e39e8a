/**
 * Organize (issue 44, docs/organize.md): tags on documents and conversations, tagging rules, saved
 * searches. A bad tag name is a 422 in the spec's shape (`detail`), naming the field.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { FilterError, parseFilters } from '../../catalog/filters.ts';
import type { Database } from '../../db/types.ts';
import type { TagRules } from '../../organize/rules.ts';
import type { SavedSearches } from '../../organize/saved.ts';
import { normaliseTag } from '../../schemas/tag-names.ts';
import { addTag, listTags, removeTag, tagsOn, targetExists } from '../../organize/tags.ts';
import type { Search } from '../../search/search.ts';
import { type TagChangeRequestT } from '../../schemas/organize.ts';
import { ROUTES } from '../../schemas/routes.ts';
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
    app.route({
      ...ROUTES[op === 'add' ? 'addTag' : 'removeTag'],
      handler: async (req) => {
        const name = normaliseTag(req.body.tag);
        if (!name.ok) throw invalid(['body', 'tag'], name.error);
        const t = await targets(req.body);
        if (typeof t === 'string') throw invalid(['body'], t);
        const changed = op === 'add' ? await addTag(db, name.name, t) : await removeTag(db, name.name, t);
        return { tag: name.name, matched: new Set(t.docIds).size + new Set(t.threadIds).size, changed };
      },
    });
  }

  app.route({
    ...ROUTES.listTags,
    handler: async () => ({ tags: await listTags(db) }),
  });

  app.route({
    ...ROUTES.tagsOn,
    handler: async (req) => {
      const { doc_id, thread_id } = req.query;
      if ((doc_id === undefined) === (thread_id === undefined)) throw invalid(['query'], 'give one of doc_id or thread_id');
      const on = { docId: doc_id, threadId: thread_id };
      if (!(await targetExists(db, on))) throw new NotFoundError(doc_id ? `no document ${doc_id}` : `no conversation ${thread_id}`);
      return tagsOn(db, on);
    },
  });

  app.route({
    ...ROUTES.listTagRules,
    handler: async () => ({ rules: await rules.list() }),
  });

  app.route({
    ...ROUTES.addTagRule,
    handler: async (req, reply) => {
      const name = normaliseTag(req.body.tag);
      if (!name.ok) throw invalid(['body', 'tag'], name.error);
      if (req.body.query.trim() === '') throw invalid(['body', 'query'], 'the query must contain text');
      return reply.code(201).send(await rules.add(name.name, req.body.query.trim()));
    },
  });

  app.route({
    ...ROUTES.updateTagRule,
    handler: async (req) => {
      let tag: string | undefined;
      if (req.body.tag !== undefined) {
        const name = normaliseTag(req.body.tag);
        if (!name.ok) throw invalid(['body', 'tag'], name.error);
        tag = name.name;
      }
      if (req.body.query !== undefined && req.body.query.trim() === '') throw invalid(['body', 'query'], 'the query must contain text');
      return await rules.update(req.params.rule_id, { tag, query: req.body.query?.trim() });
    },
  });

  app.route({
    ...ROUTES.deleteTagRule,
    handler: async (req) => {
      const removed = await rules.remove(req.params.rule_id, req.query.remove_tags ?? false);
      return { rule_id: req.params.rule_id, tags_removed: removed };
    },
  });

  app.route({
    ...ROUTES.listSavedSearches,
    handler: async (req) => ({ saved: await saved.list(req.query.counts ?? true) }),
  });

  app.route({
    ...ROUTES.saveSearch,
    handler: async (req) => {
      if (req.body.query.trim() === '') throw invalid(['body', 'query'], 'the query must contain text');
      try {
        return await saved.put(req.params.name, req.body.query.trim(), req.body.filters ?? {});
      } catch (err) {
        // The filters are the body's here, not the query string's (FilterError's own loc).
        if (err instanceof FilterError) throw invalid(['body', 'filters', err.field], err.message);
        throw err;
      }
    },
  });

  app.route({
    ...ROUTES.getSavedSearch,
    handler: async (req) => {
      const s = await saved.get(req.params.name);
      return { ...s, ...(await saved.counts(s)) };
    },
  });

  app.route({
    ...ROUTES.deleteSavedSearch,
    handler: async (req, reply) => {
      await saved.remove(req.params.name);
      return reply.code(204).send();
    },
  });

  app.route({
    ...ROUTES.runSavedSearch,
    handler: async (req) => {
      const s = await saved.get(req.params.name);
      const result = await search.search({ q: s.query, k: req.query.k, filters: parseFilters(s.filters), context_window: 0, group: req.query.group });
      if (req.query.seen ?? true) await saved.markSeen(s.name);
      return result;
    },
  });
};
