/**
 * A throwaway PostgreSQL database for a benchmark run: created on BENCH_DATABASE_URL's server
 * (default the local one), opened through src/db, dropped by `drop()`.
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';

export async function openScratchPostgres(prefix: string): Promise<{ db: Database; drop: () => Promise<void> }> {
  const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `${prefix}_${crypto.randomBytes(4).toString('hex')}`;
  const admin = async (sql: string) => {
    const c = new pg.Client({ connectionString: base });
    await c.connect();
    try {
      await c.query(sql);
    } finally {
      await c.end();
    }
  };
  await admin(`CREATE DATABASE ${name}`);
  const u = new URL(base);
  u.pathname = `/${name}`;
  const db = await openDatabase({ databaseUrl: u.toString() });
  return {
    db,
    drop: async () => {
      await db.close();
      await admin(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}
