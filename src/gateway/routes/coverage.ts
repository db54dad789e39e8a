/**
 * Coverage (docs/coverage.md): collectors report runs and recounts; people read per source what is in the source,
 * what was stored, and why the rest was not; and ask a source's collector to retry its failures or recount.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../db/types.ts';
import {
  checkRunReport,
  deleteSource,
  listCoverage,
  missingPage,
  recordReconcile,
  recordRun,
  requestAction,
  runHistory,
} from '../../coverage/store.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError, NotFoundError } from '../../util/errors.ts';

const unknownSource = () => new NotFoundError('No coverage is recorded for this source');

/** What a request asks of the collector, and who carries it out. */
const REQUEST_NOTES = {
  retry:
    'The host agent retries the failed items of this source at its next check (within a minute while it runs); ' +
    'for memex import mail, memex ingest and contact imports, run the same command again.',
  reconcile:
    'The host agent recounts this source at its next check; sources of the memex command (import mail, ingest, ' +
    'contact imports) are recounted when the same command runs again.',
};

export const coverageRoutes: FastifyPluginAsyncTypebox<{ db: Database }> = async (app, { db }) => {
  app.route({
    ...ROUTES.coverage,
    handler: async (req) => ({ sources: await listCoverage(db, { filter: req.query.source, missingLimit: req.query.missing_limit ?? 20 }) }),
  });

  app.route({
    ...ROUTES.coverageRun,
    handler: async (req) => {
      const problems = checkRunReport(req.body);
      if (problems.length) throw new InvalidRequestError(problems);
      const r = await recordRun(db, req.body);
      req.log.info({ collector: req.body.collector, source_id: r.source_id, applied: r.applied, in_source: req.body.counts.in_source }, 'coverage run');
      return r;
    },
  });

  app.route({
    ...ROUTES.coverageReconcile,
    handler: async (req) => recordReconcile(db, req.body),
  });

  app.route({
    ...ROUTES.coverageMissing,
    handler: async (req) => {
      const page = await missingPage(db, req.params.source_id, Number(req.query.after ?? 0), req.query.limit ?? 100);
      if (!page) throw unknownSource();
      return page;
    },
  });

  app.route({
    ...ROUTES.coverageRuns,
    handler: async (req) => {
      const runs = await runHistory(db, req.params.source_id, req.query.limit ?? 20);
      if (!runs) throw unknownSource();
      return runs;
    },
  });

  for (const what of ['retry', 'reconcile'] as const) {
    app.route({
      ...ROUTES[what === 'retry' ? 'coverageRetry' : 'coverageRecount'],
      handler: async (req, reply) => {
        const at = await requestAction(db, req.params.source_id, what);
        if (!at) throw unknownSource();
        return reply.code(202).send({ source_id: req.params.source_id, requested_at: at, note: REQUEST_NOTES[what] });
      },
    });
  }

  app.route({
    ...ROUTES.forgetCoverageSource,
    handler: async (req, reply) => {
      if (!(await deleteSource(db, req.params.source_id))) throw unknownSource();
      return reply.code(204).send(null);
    },
  });
};
