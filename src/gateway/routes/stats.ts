/** Counts for the web UI: activity over time per source, and documents per source and account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Queryable } from '../../db/types.ts';
import { sourceSummary, timeline } from '../../catalog/stats.ts';
import { ValidationErrorBody } from '../../schemas/common.ts';
import { SourcesResponse, TimelineQuery, TimelineResponse } from '../../schemas/stats.ts';
import { parseTimestamp } from '../../util/timestamp.ts';
import { InvalidRequestError } from '../../util/errors.ts';

export const statsRoutes: FastifyPluginAsyncTypebox<{ db: Queryable }> = async (app, { db }) => {
  app.get(
    '/v1/stats/timeline',
    {
      schema: {
        tags: ['stats'],
        summary: 'Active documents per time bucket and source type (the timeline chart)',
        querystring: TimelineQuery,
        response: { 200: TimelineResponse, 422: ValidationErrorBody },
      },
    },
    async (req) => {
      const bucket = req.query.bucket ?? 'month';
      const range: { start?: string; end?: string } = {};
      for (const [field, key] of [['start_date', 'start'], ['end_date', 'end']] as const) {
        const raw = req.query[field];
        if (raw === undefined) continue;
        const d = parseTimestamp(raw);
        if (!d) throw new InvalidRequestError({ loc: ['query', field], msg: 'Input should be an ISO 8601 date or date-time' });
        range[key] = d.toISOString();
      }
      return { bucket, buckets: await timeline(db, { bucket, ...range }) };
    },
  );

  app.get(
    '/v1/stats/sources',
    {
      schema: {
        tags: ['stats'],
        summary: 'Active documents per source type and account, with the last ingest time',
        response: { 200: SourcesResponse },
      },
    },
    async () => ({ sources: await sourceSummary(db) }),
  );
};
