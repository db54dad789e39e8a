/** People routes: search (spec 4.3), one person through merged ids, the merge log. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import { listMerges } from '../../identity/merge.ts';
import { getPerson } from '../../identity/records.ts';
import { searchPeople } from '../../people/search.ts';
import { mergeByHand, mergeCandidates, MergeError } from '../../people/merge-candidates.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { NotFoundError } from '../../util/errors.ts';

export const peopleRoutes: FastifyPluginAsyncTypebox<{ catalog: Catalog; selfIds?: () => Promise<string[]>; onMerged?: () => void }> = async (
  app,
  { catalog, selfIds, onMerged },
) => {
  const db = catalog.db;

  app.route({
    ...ROUTES.mergeCandidates,
    handler: async (req) => ({ groups: await mergeCandidates(db, { limit: req.query.limit ?? 50, onlyWith: req.query.person_id }) }),
  });

  app.route({
    ...ROUTES.mergePeople,
    handler: async (req) => {
      // A person that is not there, or one that cannot be merged, is a MergeError: 404 or 422 through the shared mapping.
      const rec = await mergeByHand(db, req.body.target, req.body.source, catalog.phoneRegion);
      onMerged?.();
      return rec;
    },
  });

  app.route({
    ...ROUTES.searchPeople,
    handler: async (req) => {
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
  });

  app.route({
    ...ROUTES.listMerges,
    handler: async (req) => {
      const limit = req.query.limit ?? 50;
      const offset = req.query.offset ?? 0;
      const { merges, total } = await listMerges(db, { personId: req.query.person_id, limit, offset });
      return { merges, total, limit, offset };
    },
  });

  app.route({
    ...ROUTES.getPerson,
    handler: async (req) => {
      const person = await getPerson(db, req.params.person_id);
      if (!person) throw new NotFoundError('Person not found');
      return person;
    },
  });
};
