/** Search, ask and general context routes of the gateway (spec 4.3, limits of spec 8). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { FilterError, parseFilters } from '../../catalog/filters.ts';
import type { Search } from '../../search/search.ts';
import { ASK_MAX_K } from '../../schemas/search.ts';
import { ROUTES } from '../../schemas/routes.ts';

export const searchRoutes: FastifyPluginAsyncTypebox<{ search: Search; phoneRegion?: string; selfIds?: () => Promise<string[]> }> = async (
  app,
  { search, phoneRegion, selfIds },
) => {
  app.route({
    ...ROUTES.search,
    handler: async (req, reply) => {
      const q = req.query;
      let filters;
      try {
        filters = parseFilters(q, phoneRegion);
      } catch (err) {
        if (!(err instanceof FilterError)) throw err;
        return reply.code(422).send({ detail: [{ loc: ['query', err.field], msg: err.message, type: 'value_error' }] });
      }
      if (q.q.trim() === '') {
        return reply
          .code(422)
          .send({ detail: [{ loc: ['query', 'q'], msg: 'Query must contain text', type: 'string_too_short' }] });
      }
      const result = await search.search({ q: q.q, k: q.k, filters, context_window: q.context_window, group: q.group });
      // The owner is in nearly every message and no contact (issue 35): never in the person facet.
      const owner = selfIds ? new Set(await selfIds()) : new Set<string>();
      if (owner.size > 0) result.facets.person = result.facets.person.filter((f) => !owner.has(String(f.value)));
      return result;
    },
  });

  app.route({
    ...ROUTES.ask,
    handler: async (req, reply) => {
      if (req.body.query.trim() === '') {
        return reply
          .code(422)
          .send({ detail: [{ loc: ['body', 'query'], msg: 'Query must contain text', type: 'string_too_short' }] });
      }
      return search.ask(req.body.query, Math.min(req.body.k ?? 5, ASK_MAX_K));
    },
  });
};
