import path from 'node:path';
import { migrate } from './migrate.ts';
import type { Database } from './types.ts';

export type { Database, Queryable, QueryResult } from './types.ts';

export interface OpenOptions {
  /** postgres://… to use a server; otherwise PGlite. */
  databaseUrl?: string;
  /** PGlite data directory; undefined keeps the database in memory. */
  dataDir?: string;
  /** Apply pending migrations (default true). */
  migrate?: boolean;
  /** Called when a new embedded database is created, from the build's template or by initdb. */
  onCreate?: (how: 'template' | 'initdb') => void;
}

/** Opens the configured database and brings its schema up to date. */
export async function openDatabase(opts: OpenOptions): Promise<Database> {
  // Only the driver in use is loaded (pg, or PGlite with pgvector): the other is start time for nothing.
  const db = opts.databaseUrl
    ? await (await import('./postgres.ts')).openPostgres(opts.databaseUrl)
    : await (await import('./pglite.ts')).openPglite(opts.dataDir ? path.join(opts.dataDir, 'pglite') : undefined, { onCreate: opts.onCreate });
  if (opts.migrate !== false) await migrate(db);
  return db;
}
