/**
 * Test databases on the backend chosen by MEMEX_TEST_BACKEND (pglite | postgres). On PostgreSQL
 * every call creates a throwaway database so test files never see each other's rows.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { openDatabase, type Database } from '../../src/db/index.ts';

export const backend: 'pglite' | 'postgres' = process.env.MEMEX_TEST_BACKEND === 'postgres' ? 'postgres' : 'pglite';
export const serverUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

export interface TestDatabase {
  db: Database;
  /** DATABASE_URL of the throwaway database (postgres backend only). */
  url?: string;
  /** PGlite data directory if one was asked for. */
  dataDir?: string;
  drop(): Promise<void>;
}

async function admin<T>(fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: serverUrl });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}

/** Creates an empty database on the PostgreSQL server and returns its URL. */
export async function createServerDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `memex_test_${crypto.randomBytes(6).toString('hex')}`;
  await admin((c) => c.query(`CREATE DATABASE ${name}`));
  const u = new URL(serverUrl);
  u.pathname = `/${name}`;
  return {
    url: u.toString(),
    drop: () => admin((c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)).then(() => undefined),
  };
}

/** A migrated, empty database on the active backend. */
export async function createTestDatabase(opts: { dataDir?: string } = {}): Promise<TestDatabase> {
  if (backend === 'postgres') {
    const { url, drop } = await createServerDatabase();
    const db = await openDatabase({ databaseUrl: url });
    return {
      db,
      url,
      async drop() {
        await db.close().catch(() => undefined);
        await drop();
      },
    };
  }
  const db = await openDatabase({ dataDir: opts.dataDir });
  return { db, dataDir: opts.dataDir, drop: () => db.close().catch(() => undefined) };
}
