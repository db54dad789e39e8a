import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Database, Queryable } from './types.ts';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
// Any constant works; it only has to be the same for every memex process on one database.
const MIGRATION_LOCK_KEY = 70908085;

export interface Migration {
  version: number;
  name: string;
  sql: string;
}

export function listMigrations(dir = MIGRATIONS_DIR): Migration[] {
  const migrations = fs
    .readdirSync(dir)
    .filter((f) => /^\d{3}_[\w-]+\.sql$/.test(f))
    .sort()
    .map((f) => ({ version: Number(f.slice(0, 3)), name: f, sql: fs.readFileSync(path.join(dir, f), 'utf8') }));
  // schema_migrations is keyed by version: a second file with the same number would be skipped
  // silently on every database that has the first, so two branches that both add "080" must fail loudly.
  for (let i = 1; i < migrations.length; i++) {
    if (migrations[i].version === migrations[i - 1].version) {
      throw new Error(`two migrations share version ${migrations[i].version}: ${migrations[i - 1].name}, ${migrations[i].name}`);
    }
  }
  return migrations;
}

/**
 * Applies every migration not yet recorded in schema_migrations, in order, in one transaction.
 * On a PostgreSQL server a transaction-scoped advisory lock keeps two starting processes from
 * racing; the second one waits and then finds nothing left to do. Returns the names applied now.
 */
export async function migrate(db: Database, opts: { onProgress?: (applied: number, pending: number) => void } = {}): Promise<string[]> {
  // Every start but the first (and the first after an upgrade) has nothing to apply: two reads, no
  // DDL, no transaction, no lock.
  const known = listMigrations();
  const table = await db.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  if (table.rows[0]?.t) {
    const have = new Set((await db.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)));
    if (known.every((m) => have.has(m.version))) return [];
  }
  await db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  return db.transaction(async (tx) => {
    if (db.kind === 'postgres') await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK_KEY]);
    const done = new Set(
      (await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => r.version),
    );
    const applied: string[] = [];
    const pending = known.filter((m) => !done.has(m.version));
    for (const m of pending) {
      opts.onProgress?.(applied.length, pending.length);
      await tx.exec(m.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
      applied.push(m.name);
    }
    return applied;
  });
}

/**
 * Brings a new database to exactly the migration versions `want` (a restore: the rows of a backup go
 * into the schema they were written from; `migrate` applies the newer ones at the next start), in
 * the caller's transaction. Versions already recorded must be among them (a template that is ahead
 * answers false: the caller starts from an empty cluster instead); a version this memex does not know
 * throws.
 */
export async function migrateTo(tx: Queryable, want: number[]): Promise<boolean> {
  const known = new Map(listMigrations().map((m) => [m.version, m]));
  const unknown = want.filter((v) => !known.has(v));
  if (unknown.length) throw new Error(`unknown migration versions ${unknown.join(', ')}`);
  const table = await tx.query<{ t: string | null }>(`SELECT to_regclass('schema_migrations')::text AS t`);
  const have = new Set(
    table.rows[0]?.t ? (await tx.query<{ version: number }>('SELECT version FROM schema_migrations')).rows.map((r) => Number(r.version)) : [],
  );
  const wanted = new Set(want);
  if ([...have].some((v) => !wanted.has(v))) return false;
  await tx.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
    version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
  for (const v of [...wanted].sort((a, b) => a - b)) {
    if (have.has(v)) continue;
    const m = known.get(v)!;
    await tx.exec(m.sql);
    await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [m.version, m.name]);
  }
  return true;
}
