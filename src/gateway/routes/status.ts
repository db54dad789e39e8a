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
import { MediaResponse } from '../../schemas/common.ts';
import { ReindexFailedResponse, StatusResponse } from '../../schemas/status.ts';
import { diskReport } from '../../util/disk-full.ts';

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

  app.get(
    '/v1/status',
    {
      schema: {
        tags: ['status'],
        summary: 'Documents per source and status, the embedding queue, throughput and failures with reasons',
        response: { 200: StatusResponse },
      },
    },
    async () => ({ ...(await serverStatus(db, local())), ...(opts.dataDir ? { disk: diskReport(opts.dataDir) } : {}) }),
  );

  app.get(
    '/metrics',
    {
      schema: {
        tags: ['status'],
        summary: 'Prometheus metrics: request latency per route, ingest outcomes, embedding queue, search legs',
        response: { 200: MediaResponse('text/plain', 'Prometheus text exposition format') },
      },
    },
    async (_req, reply) => {
      reply.header('content-type', metrics.registry.contentType);
      return metrics.scrape();
    },
  );

  app.post(
    '/v1/admin/embedding/reindex-failed',
    {
      schema: {
        tags: ['status'],
        summary: 'Put failed chunks back in the embedding queue',
        response: { 200: ReindexFailedResponse },
      },
    },
    async () => {
      const queued = await reindexFailed(db);
      if (queued > 0) opts.worker?.()?.notify();
      return { queued };
    },
  );
};
