/** Counts for the web UI: activity over time per source, and documents per source and account. */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Queryable } from '../../db/types.ts';
import { sourceSummary, timeline } from '../../catalog/stats.ts';
import { parseTimestamp } from '../../util/timestamp.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError } from '../../util/errors.ts';

export const statsRoutes: FastifyPluginAsyncTypebox<{ db: Queryable }> = async (app, { db }) => {
  app.route({
    ...ROUTES.timeline,
    handler: async (req) => {
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
  });

  app.route({
    ...ROUTES.sourceStats,
    handler: async () => ({ sources: await sourceSummary(db) }),
  });
};
