/** Operator actions the CLI wires: `memex reindex --failed`, `memex reindex --model NAME`, `memex status`. */
import type { Database } from '../db/types.ts';
import { getModels, reviveFailedDocuments, validateModelName } from './store.ts';
import { codedError } from '../util/errors.ts';

/**
 * A chunk's place in the embedding queue, newest first (migration 143): the latest time of the
 * documents that use it, a time after they were stored counting as then.
 */
const NEWEST_AT = `coalesce((SELECT max(least(d.content_timestamp, d.ingested_at)) FROM chunk_documents cd
  JOIN documents d ON d.doc_id = cd.doc_id WHERE cd.chunk_id = chunks.chunk_id), chunks.newest_at)`;

/**
 * failed -> pending (spec §3 "manual reset"); the documents that were `failed` for them wait for their vectors
 * again (`enriched`). Returns the number of chunks queued again.
 */
export async function reindexFailed(db: Database): Promise<number> {
  return db.transaction(async (tx) => {
    const r = await tx.query(
      `UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL, lease_expires_at = NULL, updated_at = now(),
              newest_at = ${NEWEST_AT}
        WHERE embedding_status = 'failed'`,
    );
    await reviveFailedDocuments(tx);
    return r.rowCount;
  });
}

export class ReindexError extends codedError('EMBEDDING.REINDEX') {
  override name = 'ReindexError';
}

/**
 * Re-embeds every chunk with `newModel` (the name the new embedder reports, e.g. "ollama:bge-m3";
 * restart the workers with the matching EMBEDDING_* settings). The model is recorded as `building`
 * and every chunk with text goes back to pending; the old model stays `active`, so search keeps
 * using its vectors until the worker has embedded everything with the new one, then switches
 * (see promoteBuildingModel). Documents keep their `indexed` status throughout. A re-index to a
 * model used before reuses its stored vectors for unchanged chunks.
 */
export async function reindexModel(db: Database, newModel: string): Promise<{ model: string; queued: number; replaced?: string }> {
  validateModelName(newModel);
  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query("SELECT pg_advisory_xact_lock(hashtext('memex.embedding_models'))");
    const models = await getModels(tx);
    const active = models.find((m) => m.state === 'active');
    if (active?.model === newModel) {
      throw new ReindexError(`${newModel} is already the active embedding model; nothing to re-index (use --failed for failed chunks)`);
    }
    const building = models.find((m) => m.state === 'building');
    let replaced: string | undefined;
    if (building && building.model !== newModel) {
      // An unfinished re-index to another model is abandoned; its partial vectors are dropped.
      await tx.query('DELETE FROM chunk_embeddings WHERE model = $1', [building.model]);
      await tx.query("UPDATE embedding_models SET state = 'retired' WHERE model = $1", [building.model]);
      replaced = building.model;
    }
    const state = active ? 'building' : 'active';
    await tx.query(
      `INSERT INTO embedding_models (model, state, activated_at) VALUES ($1, $2, CASE WHEN $2 = 'active' THEN now() END)
       ON CONFLICT (model) DO UPDATE SET state = EXCLUDED.state`,
      [newModel, state],
    );
    const r = await tx.query(
      `UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL, lease_expires_at = NULL, updated_at = now(),
              newest_at = ${NEWEST_AT}
        WHERE embedding_status IN ('embedded', 'failed', 'processing') AND btrim(text) <> ''`,
    );
    await reviveFailedDocuments(tx);
    return { model: newModel, queued: r.rowCount, replaced };
  });
}

export interface EmbeddingStatusReport {
  chunks: { pending: number; processing: number; embedded: number; failed: number; total: number };
  /** Chunks under an expired lease (a dead worker); the next sweep returns them to pending. */
  expiredLeases: number;
  /** Age in seconds of the oldest pending chunk; 0 when the queue is empty. */
  queueAgeSeconds: number;
  /** Chunks embedded per second over the last minute and the last 15 minutes. */
  throughput: { lastMinute: number; last15Minutes: number };
  /** Seconds to drain the queue at the last-15-minutes rate; undefined when idle. */
  etaSeconds: number | undefined;
  models: { model: string; dimensions: number | null; state: string; vectors: number }[];
  /** Documents waiting for embeddings (enriched) and done (indexed), active versions only. */
  documents: { enriched: number; indexed: number };
}

export async function embeddingStatus(db: Database): Promise<EmbeddingStatusReport> {
  const counts = await db.query<{ s: 'pending' | 'processing' | 'embedded' | 'failed'; n: number }>(
    'SELECT embedding_status AS s, count(*)::int AS n FROM chunks GROUP BY 1',
  );
  const c = { pending: 0, processing: 0, embedded: 0, failed: 0, total: 0 };
  for (const r of counts.rows) {
    c[r.s] = Number(r.n);
    c.total += Number(r.n);
  }
  const misc = (
    await db.query<{ expired: number; age: number | null; m1: number; m15: number }>(
      `SELECT (SELECT count(*)::int FROM chunks WHERE embedding_status = 'processing' AND lease_expires_at < now()) AS expired,
              (SELECT extract(epoch FROM now() - min(created_at))::float8 FROM chunks WHERE embedding_status = 'pending') AS age,
              (SELECT count(*)::int FROM chunks WHERE embedded_at > now() - interval '1 minute') AS m1,
              (SELECT count(*)::int FROM chunks WHERE embedded_at > now() - interval '15 minutes') AS m15`,
    )
  ).rows[0];
  const models = await db.query<{ model: string; dimensions: number | null; state: string; vectors: number }>(
    `SELECT m.model, m.dimensions, m.state,
            (SELECT count(*)::int FROM chunk_embeddings e WHERE e.model = m.model) AS vectors
       FROM embedding_models m ORDER BY m.created_at`,
  );
  const docs = await db.query<{ status: 'enriched' | 'indexed'; n: number }>(
    `SELECT status, count(*)::int AS n FROM documents WHERE is_active_version AND status IN ('enriched', 'indexed') GROUP BY 1`,
  );
  const d = { enriched: 0, indexed: 0 };
  for (const r of docs.rows) d[r.status] = Number(r.n);
  const rate15 = Number(misc.m15) / 900;
  const left = c.pending + c.processing;
  return {
    chunks: c,
    expiredLeases: Number(misc.expired),
    queueAgeSeconds: misc.age ? Math.max(0, Number(misc.age)) : 0,
    throughput: { lastMinute: Number(misc.m1) / 60, last15Minutes: rate15 },
    etaSeconds: left > 0 && rate15 > 0 ? left / rate15 : undefined,
    models: models.rows.map((m) => ({ ...m, vectors: Number(m.vectors) })),
    documents: d,
  };
}
