/**
 * Garbage collection: what no document references any more (docs/forget.md, "Garbage").
 *
 * - chunks linked to no document (superseded and deleted versions lose their links; their chunks
 *   stay for a grace period so an edit that is undone reuses the vector), with their vectors;
 * - vectors of retired models (replaced by `memex reindex --model`);
 * - file records no document uses (as a file or as a message's original), and their stored objects with what is kept beside them (thumbnails);
 *   objects in the local store that no file record names (left by a crash between storing and
 *   cataloging), and thumbnails whose object is gone;
 * - temporary files a search snapshot write killed half-way left in DATA_DIR (`dataDir`);
 * - change-log rows, only when no search index is running (`changeLog: true`): a running gateway
 *   prunes its own log (src/search/index-sync.ts), and an index that starts is built from scratch.
 *
 * Ingestion links chunks and files inside its transaction: the collection takes SHARE locks on
 * the link tables so no link can appear while it decides, and leaves chunks a worker is embedding.
 */
import { defineSettings, number, read } from '../config/env.ts';
import type { Database } from '../db/types.ts';
import type { ObjectStore } from '../files/object-store.ts';
import { parseObjectKey, removeObjects } from '../files/object-store.ts';
import { notAnOriginal } from '../catalog/originals.ts';
import { removeStaleSearchSnapshotTemps } from '../search/index-snapshot.ts';
import { codedError } from '../util/errors.ts';

export interface GcOptions {
  /** Chunks, files and objects younger than this are kept (default 1 hour). */
  graceMs?: number;
  /** Also empty the search change log (only when no gateway is running). */
  changeLog?: boolean;
  /** Count only. */
  dryRun?: boolean;
  /** DATA_DIR: stale `search-*.snapshot.<pid>.tmp` files there go too. */
  dataDir?: string;
}

export interface GcResult {
  dry_run: boolean;
  chunks: number;
  vectors: number;
  retired_vectors: number;
  files: number;
  objects: number;
  change_log_rows: number;
  /** Temporary files of interrupted snapshot writes. */
  snapshot_temps: number;
  duration_ms: number;
}

export const DEFAULT_GC_GRACE_MS = 3_600_000;

class DryRun extends codedError('CONTROL.DRY_RUN') {}

export async function collectGarbage(db: Database, store: ObjectStore | undefined, opts: GcOptions = {}): Promise<GcResult> {
  const started = Date.now();
  const cutoff = new Date(Date.now() - (opts.graceMs ?? DEFAULT_GC_GRACE_MS)).toISOString();
  const result: GcResult = {
    dry_run: Boolean(opts.dryRun), chunks: 0, vectors: 0, retired_vectors: 0, files: 0, objects: 0, change_log_rows: 0, snapshot_temps: 0, duration_ms: 0,
  };
  let objectKeys: string[] = [];
  try {
    await db.transaction(async (tx) => {
      await tx.query('LOCK TABLE chunk_documents, document_files, document_originals IN SHARE MODE');
      const chunks = await tx.query<{ chunks: number; vectors: number }>(
        `WITH doomed AS (
           SELECT c.chunk_id, (c.embedding_vector IS NOT NULL)::int AS legacy FROM chunks c
            WHERE c.created_at < $1 AND c.embedding_status <> 'processing'
              AND NOT EXISTS (SELECT 1 FROM chunk_documents cd WHERE cd.chunk_id = c.chunk_id)),
         vec AS (SELECT count(*)::int AS n FROM chunk_embeddings e WHERE e.chunk_id IN (SELECT chunk_id FROM doomed)),
         del AS (DELETE FROM chunks c WHERE c.chunk_id IN (SELECT chunk_id FROM doomed) RETURNING 1)
         SELECT (SELECT count(*) FROM del)::int AS chunks,
                ((SELECT n FROM vec) + (SELECT coalesce(sum(legacy), 0) FROM doomed))::int AS vectors`,
        [cutoff],
      );
      result.chunks = chunks.rows[0].chunks;
      result.vectors = chunks.rows[0].vectors;
      result.retired_vectors = (
        await tx.query(
          `DELETE FROM chunk_embeddings e USING embedding_models m WHERE e.model = m.model AND m.state = 'retired'`,
        )
      ).rowCount;
      const files = await tx.query<{ object_key: string }>(
        `DELETE FROM files f WHERE f.created_at < $1
            AND NOT EXISTS (SELECT 1 FROM document_files df WHERE df.file_sha256 = f.file_sha256)
            AND ${notAnOriginal('f')}
         RETURNING f.object_key`,
        [cutoff],
      );
      result.files = files.rowCount;
      objectKeys = files.rows.map((r) => r.object_key);
      if (opts.changeLog) result.change_log_rows = (await tx.query('DELETE FROM search_changes')).rowCount;
      if (opts.dryRun) throw new DryRun('dry run');
    });
  } catch (err) {
    if (!(err instanceof DryRun)) throw err;
  }

  // Objects: those whose file record went, and (local store) those no record names.
  if (store) {
    const orphans = new Set(objectKeys);
    if (store.list) {
      const known = new Set(
        (await db.query<{ object_key: string }>('SELECT object_key FROM files')).rows.map((r) => r.object_key),
      );
      for await (const o of store.list()) {
        if (!known.has(o.objectKey) && o.modifiedAt.toISOString() < cutoff) orphans.add(o.objectKey);
      }
    }
    if (!opts.dryRun) await removeObjects(store, orphans);
    result.objects = orphans.size;
    // Thumbnails whose object is gone (removed by hand, or a thumbnail finished as its object was erased).
    if (store.listBeside && !opts.dryRun) {
      for await (const b of store.listBeside()) {
        if (!(await store.has(parseObjectKey(b.objectKey)))) await store.deleteBeside(b.objectKey, b.name);
      }
    }
  }
  if (opts.dataDir) result.snapshot_temps = removeStaleSearchSnapshotTemps(opts.dataDir, opts.dryRun).length;
  result.duration_ms = Date.now() - started;
  return result;
}

export const GC_SETTINGS = defineSettings('maintenance', 'Maintenance', {
  GC_INTERVAL_HOURS: number({
    default: 24,
    min: 0,
    description: 'how often the server collects chunks, vectors, files and objects no document uses (docs/forget.md); `0` turns it off; `memex gc` runs it now',
  }),
});

/** GC_INTERVAL_HOURS in milliseconds. */
export function gcIntervalMs(env: NodeJS.ProcessEnv = process.env): number {
  return read(env, GC_SETTINGS.GC_INTERVAL_HOURS) * 3_600_000;
}

/**
 * The periodic collection of `memex serve`: first a few minutes after the start (not during it),
 * then every interval. Timers never keep the process alive; a run in progress is awaited by stop().
 */
export function startPeriodicGc(
  db: Database,
  store: ObjectStore | undefined,
  intervalMs: number,
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void },
  dataDir?: string,
): { stop(): Promise<void> } {
  if (intervalMs <= 0) return { stop: async () => {} };
  let running: Promise<void> = Promise.resolve();
  let stopped = false;
  const run = () => {
    if (stopped) return;
    running = collectGarbage(db, store, { dataDir })
      .then((r) => log.info(r, 'garbage collected'))
      .catch((err: Error) => log.warn({ err: { message: err.message } }, 'garbage collection failed; the next run retries'));
  };
  const first = setTimeout(run, Math.min(intervalMs, 10 * 60_000));
  const every = setInterval(run, intervalMs);
  first.unref();
  every.unref();
  return {
    async stop() {
      stopped = true;
      clearTimeout(first);
      clearInterval(every);
      await running;
    },
  };
}
