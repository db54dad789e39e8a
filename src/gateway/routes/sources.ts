/**
 * Sources the host agent runs by itself (docs/sources.md): the agent reports their freshness and learns which are
 * paused (PUT /v1/sources/status); people pause and resume them (POST /v1/sources/{source_id}/pause|resume);
 * the agent records what changed at the source for stored documents (POST /v1/documents/source-state).
 * Freshness is read in GET /v1/coverage (each source's state, last_success_at, newest_at_source …).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Catalog } from '../../catalog/catalog.ts';
import type { Database } from '../../db/types.ts';
import { applySourceState, recordStatus, setPaused } from '../../coverage/freshness.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { NotFoundError } from '../../util/errors.ts';

const NOTE = {
  pause: 'The agent running this source stops it at its next report (within 15 s while it runs) until it is resumed.',
  resume: 'The agent running this source starts it again at its next report (within 15 s while it runs).',
};

export const sourceRoutes: FastifyPluginAsyncTypebox<{ db: Database; catalog: Catalog }> = async (app, { db, catalog }) => {
  app.route({
    ...ROUTES.reportSourceStatus,
    handler: async (req) => ({ sources: await recordStatus(db, req.body.agent, req.body.sources) }),
  });

  for (const what of ['pause', 'resume'] as const) {
    app.route({
      ...ROUTES[what === 'pause' ? 'pauseSource' : 'resumeSource'],
      handler: async (req) => {
        if (!(await setPaused(db, req.params.source_id, what === 'pause'))) throw new NotFoundError('No such source (GET /v1/coverage lists them)');
        req.log.info({ source_id: req.params.source_id, what }, 'source pause state changed');
        return { source_id: req.params.source_id, paused: what === 'pause', note: NOTE[what] };
      },
    });
  }

  app.route({
    ...ROUTES.sourceState,
    handler: async (req) => applySourceState(db, req.body.updates, (id) => catalog.deleteDocument(id)),
  });
};
