/**
 * After a forget: the erased rows' bytes out of the database's files, not only out of its answers.
 *
 * A DELETE only marks row versions dead; their text stays in the table's pages, its TOAST pages and its
 * indexes until the space is reused, and in the write-ahead log until the segment is recycled. A plain
 * VACUUM frees the space but leaves the old bytes in the page (measured: the erased word was still in the
 * heap and index files after it). VACUUM FULL writes each table and its indexes anew and drops the old
 * files; a WAL switch and checkpoints then retire the segment that recorded the insert. On PGlite all of
 * this is ours to do (the data directory is the store, and `memex backup` copies it). On a PostgreSQL
 * server the switch and checkpoint need superuser (or pg_checkpoint); without them the server's own
 * checkpoints retire the segments later, and a WAL archive the operator keeps is outside our reach
 * (docs/forget.md says so).
 */
import type { Database } from './types.ts';

/**
 * The tables a forget deletes from that hold a person's text or identifiers. Not chunk_embeddings: vectors
 * are not text, and rewriting them is most of the cost on a large store.
 */
export const PERSONAL_TABLES = [
  'documents',
  'chunks',
  'chunk_documents',
  'document_people',
  'document_files',
  'document_originals',
  'files',
  'ingest_submissions',
  'threads',
  'email_thread_messages',
  'people',
  'person_identifiers',
  'person_addresses',
  'person_urls',
  'people_source_map',
  'person_merges',
  'relationship_edges',
  'intent_signals',
  'coverage_missing',
  'document_tags',
  'thread_tags',
  'search_changes',
] as const;

/** How long a scrub waits for snapshots older than the forget to end before rewriting anyway. */
export const SNAPSHOT_WAIT_MS = 30_000;

export interface ScrubReport {
  tables: number;
  ms: number;
  /** Whether a snapshot older than the forget was still open when the tables were rewritten (its rows stay). */
  olderSnapshotOpen: boolean;
  /** Whether the WAL segment holding the erased text was retired now (false: at a later checkpoint). */
  walRetired: boolean;
}

/**
 * VACUUM FULL copies every row version some open snapshot may still see ("recently dead"), so a query that
 * began before the forget committed (another session's search, the embedding worker's claim) keeps the
 * erased rows in the rewritten table, and so does a transaction that began before it and is still open.
 * On a server, wait until every other session of this database holds no snapshot or transaction older than
 * now, and no session of any database runs a transaction older than now (it bounds every snapshot's xmin).
 * PGlite has one session: nothing to wait for. Sessions of other roles show no xmin or xid without
 * pg_read_all_stats; they cannot be waited for.
 */
async function waitForOlderSnapshots(db: Database, timeoutMs: number): Promise<boolean> {
  if (db.kind === 'pglite') return true;
  const now = (await db.query<{ xid: string }>(`SELECT xid(pg_current_xact_id())::text AS xid`)).rows[0].xid;
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    // backend_xid too: a transaction that wrote and now sits between statements (the embedding worker
    // storing a batch) holds no snapshot, yet its xid holds the horizon back all the same. And a running
    // transaction of ANY database: a snapshot's xmin is the oldest xid running in the whole cluster, so
    // while one runs (another database's CREATE or DROP DATABASE, a long write) the VACUUM's own snapshot,
    // and every new one here, holds the erased rows as "recently dead" (seen in CI: 2 files kept the word).
    const older = await db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity
        WHERE pid <> pg_backend_pid()
          AND ((datname = current_database() AND backend_xmin IS NOT NULL AND age(backend_xmin) >= age($1::xid))
            OR (backend_xid IS NOT NULL AND age(backend_xid) >= age($1::xid)))`,
      [now],
    );
    if (older.rows[0].n === 0) return true;
    if (performance.now() >= deadline) return false;
    await new Promise((r) => setTimeout(r, 50));
  }
}

export async function scrubErasedRows(db: Database, opts: { snapshotWaitMs?: number } = {}): Promise<ScrubReport> {
  const started = performance.now();
  const settled = await waitForOlderSnapshots(db, opts.snapshotWaitMs ?? SNAPSHOT_WAIT_MS);
  const present = await db.query<{ name: string }>(
    `SELECT t AS name FROM unnest($1::text[]) AS t WHERE to_regclass('public.' || t) IS NOT NULL`,
    [PERSONAL_TABLES],
  );
  // One table per statement (VACUUM cannot run in a transaction; each holds only its own table's lock).
  for (const { name } of present.rows) await db.exec(`VACUUM FULL "${name.replace(/"/g, '""')}"`);
  let walRetired = true;
  try {
    if (db.kind === 'pglite') await db.exec('SET wal_recycle = off');
    // Twice: the first switch closes the segment that holds the erased rows, the checkpoints move the redo
    // point past it so the next one removes it.
    for (let i = 0; i < 2; i++) {
      await db.query('SELECT pg_switch_wal()');
      await db.exec('CHECKPOINT');
    }
  } catch {
    walRetired = false; // a PostgreSQL role without the right: the server's own checkpoints do it later
  }
  return { tables: present.rows.length, ms: Math.round(performance.now() - started), olderSnapshotOpen: !settled, walRetired };
}
