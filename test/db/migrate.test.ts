/**
 * Migrations at start (issue 34): a database with every migration applied is recognised by two
 * reads, without DDL, a transaction or the advisory lock; one that misses a migration still gets it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listMigrations, migrate } from '../../src/db/migrate.ts';
import type { Database } from '../../src/db/types.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;

beforeAll(async () => {
  t = await createTestDatabase();
}, 120_000);

afterAll(async () => {
  await t?.drop();
});

/** The database, with every statement it is sent written down. */
function recording(db: Database): { db: Database; statements: string[]; transactions: () => number } {
  const statements: string[] = [];
  let transactions = 0;
  const rec = {
    ...db,
    query: (sql: string, params?: unknown[]) => (statements.push(sql), db.query(sql, params)),
    exec: (sql: string) => (statements.push(sql), db.exec(sql)),
    transaction: <T>(fn: Parameters<Database['transaction']>[0]) => {
      transactions++;
      return db.transaction<T>(fn as never);
    },
  } as Database;
  return { db: rec, statements, transactions: () => transactions };
}

describe('migrate', () => {
  it('an up-to-date database: nothing applied, no DDL and no transaction', async () => {
    // createTestDatabase has migrated it already.
    const r = recording(t.db);
    expect(await migrate(r.db)).toEqual([]);
    expect(r.transactions()).toBe(0);
    expect(r.statements.some((s) => /CREATE|INSERT|advisory/i.test(s))).toBe(false);
  });

  it('a missing migration is applied, in a transaction, and recorded', async () => {
    // A migration that is one CREATE INDEX IF NOT EXISTS runs again over itself; only its record is removed.
    const sqlOf = (sql: string) => sql.replace(/--.*$/gm, '').trim();
    const last = [...listMigrations()].reverse().find((m) => /^CREATE INDEX IF NOT EXISTS [^;]*;?$/.test(sqlOf(m.sql)))!;
    expect(last).toBeTruthy();
    await t.db.query('DELETE FROM schema_migrations WHERE version = $1', [last.version]);
    const r = recording(t.db);
    expect(await migrate(r.db)).toEqual([last.name]);
    expect(r.transactions()).toBe(1);
    expect((await t.db.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations WHERE version = $1', [last.version])).rows[0].n).toBe(1);
    expect(await migrate(t.db)).toEqual([]);
  });
});
