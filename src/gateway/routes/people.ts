/** People routes: search (spec 4.3), one person through merged ids, the merge log. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { listMerges } from '../../identity/merge.ts';
import { getPerson } from '../../identity/records.ts';
import { searchPeople } from '../../people/search.ts';
import { ErrorMessage as NotFound, ValidationErrorBody } from '../../schemas/common.ts';
import { mergeByHand, mergeCandidates } from '../../people/merge-candidates.ts';
import {
  MergeCandidatesQuery,
  MergeCandidatesResponse,
  MergeRecord,
  MergeRequest,
  MergeListQuery,
  MergeListResponse,
  PeopleSearchQuery,
  PeopleSearchResponse,
  PersonDetailResponse,
  PersonParams,
} from '../../schemas/people.ts';
import { NotFoundError } from '../../util/errors.ts';

export const peopleRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; selfIds?: () => Promise<string[]>; onMerged?: () => void }> = async (
  app,
  { catalog, selfIds, onMerged },
) => {
  const db = catalog.db;

  app.get(
    '/v1/people/merge-candidates',
    {
      schema: {
        tags: ['people'],
        summary: 'People with the same name under different addresses: offered for merging, never merged by themselves',
        querystring: MergeCandidatesQuery,
        response: { 200: MergeCandidatesResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => ({ groups: await mergeCandidates(db, { limit: req.query.limit ?? 50, onlyWith: req.query.person_id }) }),
  );

  app.post(
    '/v1/people/merge',
    {
      schema: {
        tags: ['people'],
        summary: 'Merge one person into another (the owner says they are one); recorded with reason manual',
        body: MergeRequest,
        response: { 200: MergeRecord, 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      // A person that is not there, or one that cannot be merged, is a MergeError: 404 or 422 through the shared mapping.
      const rec = await mergeByHand(db, req.body.target, req.body.source, catalog.phoneRegion);
      onMerged?.();
      return rec;
    },
  );

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
    async (req) => {
      const person = await getPerson(db, req.params.person_id);
      if (!person) throw new NotFoundError('Person not found');
      return person;
    },
  );
};
