/** Search, ask and general context routes of the gateway (spec 4.3, limits of spec 8). */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { parseFilters } from '../../catalog/filters.ts';
import type { Search } from '../../search/search.ts';
import { ASK_MAX_K } from '../../schemas/search.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError } from '../../util/errors.ts';

export const searchRoutes: FastifyPluginAsyncTypebox<{ search: Search; phoneRegion?: string; selfIds?: () => Promise<string[]> }> = async (
  app,
  { search, phoneRegion, selfIds },
) => {
  app.route({
    ...ROUTES.search,
    handler: async (req) => {
      const q = req.query;
      // A filter value it cannot read is a FilterError: 422 at ['query', field] through the shared error mapping.
      const filters = parseFilters(q, phoneRegion);
      if (q.q.trim() === '') throw new InvalidRequestError({ loc: ['query', 'q'], msg: 'Query must contain text', type: 'string_too_short' });
      return search.search({ q: q.q, k: q.k, filters, context_window: q.context_window, group: q.group }, { ownerIds: selfIds });
    },
  });

  app.route({
    ...ROUTES.ask,
    handler: async (req) => {
      if (req.body.query.trim() === '') throw new InvalidRequestError({ loc: ['body', 'query'], msg: 'Query must contain text', type: 'string_too_short' });
      return search.ask(req.body.query, Math.min(req.body.k ?? 5, ASK_MAX_K));
    },
  });
};
