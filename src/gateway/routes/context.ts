/**
 * GET /v1/context/general (spec 4.3 rule 6). Registered behind the gateway token, or behind the catalog token
 * instead when CONTEXT_REQUIRE_CATALOG_TOKEN=true (spec 4.3 rule 6, 5.4: "may require the catalog token when
 * enforced"), as the relationship route is with RELATIONSHIPS_REQUIRE_CATALOG_TOKEN.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { ValidationErrorBody } from '../../schemas/common.ts';
import { ContextQuery, GeneralContextResponse } from '../../schemas/context.ts';
import type { Search } from '../../search/search.ts';

export const contextRoutes: FastifyPluginAsyncTypebox<{ search: Search }> = async (app, { search }) => {
  app.get(
    '/v1/context/general',
    {
      schema: {
        tags: ['search'],
        summary: 'Totals, busiest threads and recent highlights of the active documents',
        querystring: ContextQuery,
        response: { 200: GeneralContextResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => search.generalContext(req.query),
  );
};
