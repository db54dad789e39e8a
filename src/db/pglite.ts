import fs from 'node:fs';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { acquireDatabaseLock } from './lock.ts';
import { extractTemplate, hasUsableTemplate, readTemplate } from './pglite-template.ts';
import type { Database, Queryable, QueryResult } from './types.ts';

function wrap(q: { query: PGlite['query']; exec: PGlite['exec'] }): Queryable {
  return {
    async exec(sql: string) {
      await q.exec(sql);
    },
    async query<T>(sql: string, params: unknown[] = []): Promise<QueryResult<T>> {
      const r = await q.query<T>(sql, params as any[]);
      return { rows: r.rows, rowCount: r.affectedRows ?? 0 };
    },
  };
}

/**
 * Embedded PostgreSQL (WASM) with pgvector. `dataDir` undefined keeps everything in memory
 * (tests); otherwise the directory is created and reopened on the next start, and this process
 * holds its lock file until close (src/db/lock.ts): a second process is refused, not let in.
 */
export async function openPglite(
  dataDir?: string,
  opts: {
    /** Called when a new database is created, from the template or by initdb. */
    onCreate?: (how: 'template' | 'initdb') => void;
    /** Where the template is (tests); default the build's. */
    templateDir?: string;
  } = {},
): Promise<Database> {
  const release = dataDir ? acquireDatabaseLock(dataDir) : () => {};
  let pg: PGlite;
  let fresh = true;
  try {
    fresh = !dataDir || !fs.existsSync(dataDir) || fs.readdirSync(dataDir).length === 0;
    // A new database starts from the build's template when there is a usable one (pglite-template.ts):
    // on disk its files are written before PGlite opens them; in memory PGlite loads the tarball.
    if (fresh) opts.onCreate?.(hasUsableTemplate(opts.templateDir) ? 'template' : 'initdb');
    if (fresh && dataDir) extractTemplate(dataDir, opts.templateDir);
    if (dataDir) fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
    const template = fresh && !dataDir ? readTemplate(opts.templateDir) : null;
    const options = { extensions: { vector }, ...(template ? { loadDataDir: template } : {}) };
    // Options must be the only argument when there is no directory: PGlite ignores them otherwise.
    pg = dataDir ? new PGlite(dataDir, options) : new PGlite(options);
    await pg.waitReady;
  } catch (err) {
    release();
    // PGlite says only "failed to initialize properly" of a data directory it cannot read: say which and what to do.
    if (dataDir && !fresh && /initiali[sz]e/i.test((err as Error).message ?? '')) {
      throw new Error(
        `the embedded database in ${dataDir} could not be opened (${(err as Error).message}): its files are damaged or incomplete ` +
          `(a restore by an older memex that was interrupted leaves such a folder). Move it aside and restore a backup with \`memex restore\`.`,
        { cause: err },
      );
    }
    throw err;
  }
  return asDatabase(pg, release);
}

function asDatabase(pg: PGlite, release: () => void): Database {
  const base = wrap(pg);
  return {
    kind: 'pglite',
    query: base.query,
    async transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      // PGlite never yields to the event loop: its calls resolve as microtasks, so transactions run one
      // after another (a batch's groups, two batches in flight) keep every request that arrived
      // meanwhile, a search too, unread until the last one ends. One turn of the event loop before each
      // transaction lets such requests in; their statements then run before this transaction starts.
      await new Promise<void>((resolve) => setImmediate(resolve));
      return pg.transaction(async (tx) => fn(wrap(tx)));
    },
    exec: base.exec,
    async dumpDataDir() {
      await pg.exec('CHECKPOINT');
      return pg.dumpDataDir('gzip');
    },
    async snapshotCopy() {
      // The copy is this database's own files (never a file from elsewhere), loaded in memory.
      const copy = new PGlite({ extensions: { vector }, loadDataDir: await this.dumpDataDir!() });
      await copy.waitReady;
      return asDatabase(copy, () => {});
    },
    async close() {
      try {
        await pg.close();
      } finally {
        release();
      }
    },
  };
}
