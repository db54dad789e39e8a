/**
 * GET /v1/status (documents, the embedding queue, throughput, failures), GET /metrics (Prometheus)
 * and the operator action POST /v1/admin/embedding/reindex-failed, so `memex status` and
 * `memex reindex --failed` work beside a running server (the embedded database serves one process
 * only). All behind the gateway token.
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Database } from '../../db/types.ts';
import { reindexFailed } from '../../embedding/ops.ts';
import { serverStatus } from '../../embedding/report.ts';
import type { EmbeddingWorker } from '../../embedding/worker.ts';
import type { GatewayMetrics } from '../metrics.ts';
import { diskReport } from '../../util/disk-full.ts';
import { ROUTES } from '../../schemas/routes.ts';

export const statusRoutes: FastifyPluginAsyncTypebox<{
  db: Database;
  /** The embedding worker in this process, once there is one (it starts with the model threads). */
  worker?: () => EmbeddingWorker | undefined;
  metrics: GatewayMetrics;
  /** DATA_DIR, whose disk the report describes (a full disk answers 507 on ingest). */
  dataDir?: string;
}> = async (app, opts) => {
  const { db, metrics } = opts;
  const ended = new WeakSet<EmbeddingWorker>();
  const watched = new WeakSet<EmbeddingWorker>();
  const local = () => {
    const worker = opts.worker?.();
    if (!worker) return undefined;
    if (!watched.has(worker)) {
      watched.add(worker);
      void worker.done.then(() => ended.add(worker));
    }
    return { worker, running: () => !ended.has(worker) };
  };

  app.route({
    ...ROUTES.status,
    handler: async () => ({ ...(await serverStatus(db, local())), ...(opts.dataDir ? { disk: diskReport(opts.dataDir) } : {}) }),
  });

  app.route({
    ...ROUTES.metrics,
    handler: async (_req, reply) => {
      reply.header('content-type', metrics.registry.contentType);
      return metrics.scrape();
    },
  });

  app.route({
    ...ROUTES.reindexFailed,
    handler: async () => {
      const queued = await reindexFailed(db);
      if (queued > 0) opts.worker?.()?.notify();
      return { queued };
    },
  });
};
