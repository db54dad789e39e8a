/**
 * The whole-server report behind GET /v1/status and `memex status`: documents per source and
 * status, the embedding queue (embeddingStatus), throughput and failures with their reasons.
 */
import type { Database } from '../db/types.ts';
import { storedRedaction } from '../privacy/stored-redaction.ts';
import type { StatusResponseT } from '../schemas/status.ts';
import { embeddingStatus } from './ops.ts';
import type { EmbeddingWorker } from './worker.ts';

/** Reasons listed per kind of failure; the rest are summed into the counts only. */
const MAX_REASONS = 20;
/** Error texts are grouped by their start (ids and paths at the end would split them). */
const REASON_CHARS = 160;

export async function serverStatus(db: Database, worker?: { worker: EmbeddingWorker; running: () => boolean }): Promise<StatusResponseT> {
  const e = await embeddingStatus(db);
  const docs = await db.query<{ source_type: string; status: string; n: number }>(
    `SELECT source_type, status, count(*)::int AS n FROM documents WHERE is_active_version
      GROUP BY 1, 2 ORDER BY 1, 2`,
  );
  const rates = (
    await db.query<{ m1: number; m15: number }>(
      `SELECT count(*) FILTER (WHERE ingested_at > now() - interval '1 minute')::int AS m1, count(*)::int AS m15
         FROM documents WHERE ingested_at > now() - interval '15 minutes'`,
    )
  ).rows[0];
  const chunkFailures = await db.query<{ reason: string; n: number }>(
    `SELECT left(coalesce(embedding_error, 'unknown'), ${REASON_CHARS}) AS reason, count(*)::int AS n
       FROM chunks WHERE embedding_status = 'failed' GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT ${MAX_REASONS}`,
  );
  const docFailures = await db.query<{ source_type: string; reason: string; n: number }>(
    `SELECT source_type,
            left(coalesce(error_details->>'message', error_details->>'code',
                          CASE WHEN extraction_failed THEN 'extraction failed' ELSE 'failed' END), ${REASON_CHARS}) AS reason,
            count(*)::int AS n
       FROM documents WHERE is_active_version AND (status = 'failed' OR extraction_failed)
      GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2 LIMIT ${MAX_REASONS}`,
  );
  const recent = (
    await db.query<{ d30: number; s30: number; d365: number; s365: number }>(
      `SELECT count(*) FILTER (WHERE content_timestamp > now() - interval '30 days')::int AS d30,
              count(*) FILTER (WHERE content_timestamp > now() - interval '30 days' AND status = 'indexed')::int AS s30,
              count(*)::int AS d365, count(*) FILTER (WHERE status = 'indexed')::int AS s365
         FROM documents
        WHERE is_active_version AND content_timestamp > now() - interval '365 days' AND content_timestamp <= now()`,
    )
  ).rows[0];
  const share = (documents: number, searchable: number) => ({
    documents,
    searchable,
    share: documents > 0 ? Math.round((1000 * searchable) / documents) / 1000 : null,
  });
  const by_source = docs.rows.map((r) => ({ source_type: r.source_type, status: r.status, count: Number(r.n) }));
  const stored_redaction = await storedRedaction(db);
  const w = worker?.worker.stats;
  return {
    generated_at: new Date().toISOString(),
    documents: { total: by_source.reduce((s, r) => s + r.count, 0), by_source },
    chunks: e.chunks,
    queue: {
      waiting: e.chunks.pending + e.chunks.processing,
      age_seconds: Math.round(e.queueAgeSeconds * 10) / 10,
      expired_leases: e.expiredLeases,
      eta_seconds: e.etaSeconds === undefined ? null : Math.round(e.etaSeconds),
    },
    meaning_searchable: {
      last_30_days: share(Number(recent.d30), Number(recent.s30)),
      last_365_days: share(Number(recent.d365), Number(recent.s365)),
    },
    throughput: {
      chunks_embedded: { last_minute: e.throughput.lastMinute, last_15_minutes: e.throughput.last15Minutes },
      documents_ingested: { last_minute: Number(rates.m1) / 60, last_15_minutes: Number(rates.m15) / 900 },
    },
    models: e.models.map((m) => ({ model: m.model, dimensions: m.dimensions === null ? null : Number(m.dimensions), state: m.state, vectors: m.vectors })),
    failures: {
      chunks: chunkFailures.rows.map((r) => ({ reason: r.reason, count: Number(r.n) })),
      documents: docFailures.rows.map((r) => ({ source_type: r.source_type, reason: r.reason, count: Number(r.n) })),
    },
    stored_redaction,
    worker: w
      ? {
          running: worker!.running(),
          started_at: new Date(w.startedAt).toISOString(),
          batches: w.batches,
          embedded: w.embedded,
          reused: w.reused,
          skipped: w.skipped,
          failed: w.failed,
          released: w.released,
          last_error: w.lastError ?? null,
        }
      : null,
  };
}
