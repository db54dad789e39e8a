/**
 * Coverage (docs/coverage.md): collectors report runs and recounts; people read per source what is in the source,
 * what was stored, and why the rest was not; and ask a source's collector to retry its failures or recount.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
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
import { DetailMessage as NotFound, ValidationErrorBody } from '../../schemas/common.ts';
import {
  CoverageQuery,
  CoverageResponse,
  CoverageRunAccepted,
  CoverageRunReport,
  MissingPage,
  MissingQuery,
  ReconcileReport,
  ReconcileAccepted,
  RequestAccepted,
  RunsPage,
  RunsQuery,
  SourceIdParams,
} from '../../schemas/coverage.ts';
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
  app.get(
    '/v1/coverage',
    {
      schema: {
        tags: ['coverage'],
        summary: 'Per source: items in the source, stored, skipped, failed and pending, what is missing and why, the last run and recount',
        querystring: CoverageQuery,
        response: { 200: CoverageResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => ({ sources: await listCoverage(db, { filter: req.query.source, missingLimit: req.query.missing_limit ?? 20 }) }),
  );

  app.post(
    '/v1/coverage/runs',
    {
      schema: {
        tags: ['coverage'],
        summary: "A collector's report of one run over its source: counts that add up, and the items not stored with why",
        body: CoverageRunReport,
        response: { 200: CoverageRunAccepted, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const problems = checkRunReport(req.body);
      if (problems.length) throw new InvalidRequestError(problems);
      const r = await recordRun(db, req.body);
      req.log.info({ collector: req.body.collector, source_id: r.source_id, applied: r.applied, in_source: req.body.counts.in_source }, 'coverage run');
      return r;
    },
  );

  app.post(
    '/v1/coverage/reconcile',
    {
      schema: {
        tags: ['coverage'],
        summary: "A collector's recount of its source, compared with its last run (drift), without importing anything",
        body: ReconcileReport,
        response: { 200: ReconcileAccepted, 422: ValidationErrorBody },
      },
    },
    async (req) => recordReconcile(db, req.body),
  );

  app.get(
    '/v1/coverage/sources/:source_id/missing',
    {
      schema: {
        tags: ['coverage'],
        summary: "A page of a source's items seen but not stored, with their reasons",
        params: SourceIdParams,
        querystring: MissingQuery,
        response: { 200: MissingPage, 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const page = await missingPage(db, req.params.source_id, Number(req.query.after ?? 0), req.query.limit ?? 100);
      if (!page) throw unknownSource();
      return page;
    },
  );

  app.get(
    '/v1/coverage/sources/:source_id/runs',
    {
      schema: {
        tags: ['coverage'],
        summary: 'The latest runs of a source with their counts, newest first',
        params: SourceIdParams,
        querystring: RunsQuery,
        response: { 200: RunsPage, 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const runs = await runHistory(db, req.params.source_id, req.query.limit ?? 20);
      if (!runs) throw unknownSource();
      return runs;
    },
  );

  for (const what of ['retry', 'reconcile'] as const) {
    app.post(
      `/v1/coverage/sources/:source_id/${what}`,
      {
        schema: {
          tags: ['coverage'],
          summary:
            what === 'retry'
              ? "Ask the source's collector to retry the items that failed, at its next check"
              : "Ask the source's collector to recount the source, at its next check",
          params: SourceIdParams,
          response: { 202: RequestAccepted, 404: NotFound, 422: ValidationErrorBody },
        },
      },
      async (req, reply) => {
        const at = await requestAction(db, req.params.source_id, what);
        if (!at) throw unknownSource();
        return reply.code(202).send({ source_id: req.params.source_id, requested_at: at, note: REQUEST_NOTES[what] });
      },
    );
  }

  app.delete(
    '/v1/coverage/sources/:source_id',
    {
      schema: {
        tags: ['coverage'],
        summary: "Forget a source's coverage record (its documents stay)",
        params: SourceIdParams,
        response: { 204: Type.Null(), 404: NotFound, 422: ValidationErrorBody },
      },
    },
    async (req, reply) => {
      if (!(await deleteSource(db, req.params.source_id))) throw unknownSource();
      return reply.code(204).send(null);
    },
  );
};
