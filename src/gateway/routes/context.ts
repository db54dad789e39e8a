/**
 * GET /v1/context/general (spec 4.3 rule 6). Registered behind the gateway token, or behind the catalog token
 * instead when CONTEXT_REQUIRE_CATALOG_TOKEN=true (spec 4.3 rule 6, 5.4: "may require the catalog token when
 * enforced"), as the relationship route is with RELATIONSHIPS_REQUIRE_CATALOG_TOKEN.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Search } from '../../search/search.ts';
import { ROUTES } from '../../schemas/routes.ts';

export const contextRoutes: FastifyPluginAsyncTypebox<{ search: Search }> = async (app, { search }) => {
  app.route({
    ...ROUTES.generalContext,
    handler: async (req) => search.generalContext(req.query),
  });
};
