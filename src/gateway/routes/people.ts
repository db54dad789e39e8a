/** People routes: search (spec 4.3), one person through merged ids, the merge log. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { listMerges } from '../../identity/merge.ts';
import { getPerson } from '../../identity/records.ts';
import { searchPeople } from '../../people/search.ts';
import { ErrorMessage as NotFound, ValidationErrorBody } from '../../schemas/common.ts';
import {
  MergeListQuery,
  MergeListResponse,
  PeopleSearchQuery,
  PeopleSearchResponse,
  PersonDetailResponse,
  PersonParams,
} from '../../schemas/people.ts';

export const peopleRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; selfIds?: () => Promise<string[]> }> = async (
  app,
  { catalog, selfIds },
) => {
  const db = catalog.db;

  app.get(
    '/search/people',
    {
      schema: {
        tags: ['people'],
        summary: 'Find people by name, nickname, organisation, email or phone (any format)',
        querystring: PeopleSearchQuery,
        response: { 200: PeopleSearchResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const limit = req.query.limit ?? 20;
      const offset = req.query.offset ?? 0;
      // The owner is no contact (issue 35): left out unless asked for.
      const excludeIds = req.query.include_self || !selfIds ? [] : await selfIds();
      const { results, total } = await searchPeople(db, {
        q: req.query.q,
        limit,
        offset,
        region: catalog.phoneRegion,
        sort: req.query.sort,
        excludeIds,
      });
      return { query: req.query.q ?? null, limit, offset, total, results };
    },
  );

  app.get(
    '/v1/people/merges',
    {
      schema: {
        tags: ['people'],
        summary: 'Merges of people, newest first (optionally those involving one person)',
        querystring: MergeListQuery,
        response: { 200: MergeListResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const limit = req.query.limit ?? 50;
      const offset = req.query.offset ?? 0;
      const { merges, total } = await listMerges(db, { personId: req.query.person_id, limit, offset });
      return { merges, total, limit, offset };
    },
  );

  app.get(
    '/v1/people/:person_id',
    {
      schema: {
        tags: ['people'],
        summary: 'A person with identifiers, addresses, urls and sources; a merged id answers with its survivor',
        params: PersonParams,
        response: { 200: PersonDetailResponse, 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req, reply) => {
      const person = await getPerson(db, req.params.person_id);
      if (!person) return reply.code(404).send({ detail: 'Person not found' });
      return person;
    },
  );
};
