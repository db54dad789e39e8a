/** The one SQL interface every module uses; PGlite and node-postgres both sit behind it. */
export interface QueryResult<T> {
  rows: T[];
  /** Rows inserted, updated or deleted by the statement (0 for a SELECT on PGlite). */
  rowCount: number;
}

export interface QueryOptions {
  /** Name of the prepared statement; one name must always be used with the same SQL text. */
  name?: string;
}

export interface Queryable {
  /**
   * `opts.name` makes the statement a named prepared statement on a PostgreSQL server (parsed and
   * planned once per connection; for constant SQL on hot paths). PGlite ignores it.
   */
  query<T = Record<string, any>>(sql: string, params?: unknown[], opts?: QueryOptions): Promise<QueryResult<T>>;
  /** Runs several statements without parameters (migrations). */
  exec(sql: string): Promise<void>;
}

export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs fn in one transaction; it commits when fn resolves and rolls back when it throws. */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  /** PGlite only: the whole data directory as a gzipped tarball (backups; src/maintenance/backup.ts). */
  dumpDataDir?(): Promise<Blob>;
  /** PGlite only: a copy of the database as of now, in memory, to read at length without holding this one (backups). */
  snapshotCopy?(): Promise<Database>;
}
