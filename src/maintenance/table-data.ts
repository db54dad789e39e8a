/**
 * memex's tables as data (backup format 2, backup-format.ts): rows out as NDJSON of `to_jsonb(row)`,
 * rows in through `jsonb_populate_recordset` into tables this memex's migrations made. Every table
 * and column name in SQL comes from the target's own catalog, never from the file; the file's rows
 * are parameters, parsed by the columns' types. Nothing in a backup is ever run.
 */
import type { Queryable } from '../db/types.ts';
import { BackupError, TABLE_CHUNK_BYTES, type BackupTable } from './backup-format.ts';

/**
 * Tables never in a backup: the migration record (restore writes its own), the search change log
 * (positions and transaction ids of this one database; the index rebuilds from the rows), and the
 * web UI's sign-ins (a backup is a file people copy elsewhere, like the auth token it leaves out).
 */
export const NOT_BACKED_UP = new Set(['schema_migrations', 'search_changes', 'web_sessions']);

/** system_settings keys about the left-out change log, removed from a restored copy. */
const SETTINGS_NOT_RESTORED = ['search_changes_pruned_below'];

const ident = (name: string) => `"${name.replace(/"/g, '""')}"`;

export interface CatalogTable {
  name: string;
  /** Stored columns, in table order (generated ones excluded). */
  columns: string[];
}

/** memex's tables in public with their stored columns, parents before children (foreign keys). */
export async function catalogTables(q: Queryable): Promise<CatalogTable[]> {
  const cols = await q.query<{ t: string; c: string }>(
    `SELECT c.relname AS t, a.attname AS c
       FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace
       JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.attgenerated = ''
      WHERE n.nspname = 'public' AND c.relkind = 'r'
      ORDER BY c.relname, a.attnum`,
  );
  const byName = new Map<string, string[]>();
  for (const r of cols.rows) {
    if (NOT_BACKED_UP.has(r.t)) continue;
    byName.set(r.t, [...(byName.get(r.t) ?? []), r.c]);
  }
  const fks = await q.query<{ child: string; parent: string }>(
    `SELECT ch.relname AS child, pa.relname AS parent
       FROM pg_constraint k
       JOIN pg_class ch ON ch.oid = k.conrelid
       JOIN pg_class pa ON pa.oid = k.confrelid
       JOIN pg_namespace n ON n.oid = ch.relnamespace
      WHERE k.contype = 'f' AND n.nspname = 'public' AND k.conrelid <> k.confrelid`,
  );
  const parents = new Map<string, Set<string>>();
  for (const r of fks.rows) parents.set(r.child, (parents.get(r.child) ?? new Set()).add(r.parent));
  const ordered: CatalogTable[] = [];
  const placed = new Set<string>();
  const visit = (name: string, path: Set<string>) => {
    if (placed.has(name) || path.has(name) || !byName.has(name)) return;
    path.add(name);
    for (const p of [...(parents.get(name) ?? [])].sort()) visit(p, path);
    path.delete(name);
    placed.add(name);
    ordered.push({ name, columns: byName.get(name)! });
  };
  for (const name of [...byName.keys()].sort()) visit(name, new Set());
  return ordered;
}

/** Row counts of `tables` (in the caller's snapshot), for the manifest. */
export async function countRows(q: Queryable, tables: CatalogTable[]): Promise<BackupTable[]> {
  const out: BackupTable[] = [];
  for (const t of tables) {
    const n = (await q.query<{ n: number }>(`SELECT count(*)::int AS n FROM public.${ident(t.name)}`)).rows[0].n;
    out.push({ name: t.name, columns: t.columns, rows: n });
  }
  return out;
}

/**
 * The rows of one table as NDJSON chunks of about TABLE_CHUNK_BYTES, read through a cursor in the
 * caller's transaction (so memory holds one chunk, and every table comes from one snapshot).
 */
export async function* tableChunks(tx: Queryable, table: CatalogTable, fetchRows = 200): AsyncGenerator<Buffer> {
  const cursor = 'memex_backup_rows';
  const list = table.columns.map(ident).join(', ');
  await tx.exec(`DECLARE ${cursor} NO SCROLL CURSOR FOR SELECT to_jsonb(r)::text AS j FROM (SELECT ${list} FROM public.${ident(table.name)}) r`);
  try {
    let lines: string[] = [];
    let bytes = 0;
    for (;;) {
      const { rows } = await tx.query<{ j: string }>(`FETCH ${fetchRows} FROM ${cursor}`);
      for (const r of rows) {
        lines.push(r.j);
        bytes += Buffer.byteLength(r.j) + 1;
        if (bytes >= TABLE_CHUNK_BYTES) {
          yield Buffer.from(`${lines.join('\n')}\n`);
          lines = [];
          bytes = 0;
        }
      }
      if (rows.length < fetchRows) break;
    }
    if (lines.length) yield Buffer.from(`${lines.join('\n')}\n`);
  } finally {
    await tx.exec(`CLOSE ${cursor}`);
  }
}

interface LoadTable {
  name: string;
  columns: Set<string>;
  insert: string;
  expected: number;
  loaded: number;
}

/**
 * Loads rows into a target whose schema this memex's migrations made, in the caller's transaction:
 * `prepare` checks the manifest's tables and columns against the target's catalog and refuses
 * anything that is not memex's; `load` inserts a member's rows; `finish` checks the counts and puts
 * triggers, constraints and sequences back as the migrations made them.
 */
export class TableLoader {
  private readonly tables = new Map<string, LoadTable>();
  private readonly deferred: { table: string; name: string; deferrable: boolean; deferred: boolean }[] = [];

  private constructor(private readonly tx: Queryable) {}

  static async prepare(tx: Queryable, declared: BackupTable[]): Promise<TableLoader> {
    const loader = new TableLoader(tx);
    const catalog = new Map((await catalogTables(tx)).map((t) => [t.name, t]));
    for (const t of declared) {
      const ours = catalog.get(t.name);
      if (!ours) throw new BackupError(`the backup declares a table ${t.name}, which is not one of memex's tables: refused`);
      const missing = ours.columns.filter((c) => !t.columns.includes(c));
      const extra = t.columns.filter((c) => !ours.columns.includes(c));
      if (missing.length || extra.length) {
        throw new BackupError(
          `the backup's table ${t.name} does not match memex's at this schema level: ` +
            [extra.length ? `columns memex does not have: ${extra.join(', ')}` : '', missing.length ? `columns missing: ${missing.join(', ')}` : '']
              .filter(Boolean)
              .join('; ') +
            ': refused',
        );
      }
      const list = ours.columns.map(ident).join(', ');
      const rel = `public.${ident(t.name)}`;
      loader.tables.set(t.name, {
        name: t.name,
        columns: new Set(ours.columns),
        insert: `INSERT INTO ${rel} (${list}) SELECT ${list} FROM jsonb_populate_recordset(NULL::${rel}, $1::jsonb)`,
        expected: t.rows,
        loaded: 0,
      });
      // The rows are the source's, already derived: its triggers (the search change log) stay quiet.
      await tx.exec(`ALTER TABLE ${rel} DISABLE TRIGGER USER`);
    }
    // A table referring to itself (a document's previous version, a person merged into another)
    // may list a row before the one it refers to: those checks wait for the end of the load.
    const selfRefs = await tx.query<{ t: string; k: string; deferrable: boolean; deferred: boolean }>(
      `SELECT c.relname AS t, k.conname AS k, k.condeferrable AS deferrable, k.condeferred AS deferred
         FROM pg_constraint k JOIN pg_class c ON c.oid = k.conrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE k.contype = 'f' AND n.nspname = 'public' AND k.conrelid = k.confrelid`,
    );
    for (const r of selfRefs.rows) {
      if (!loader.tables.has(r.t)) continue;
      await tx.exec(`ALTER TABLE public.${ident(r.t)} ALTER CONSTRAINT ${ident(r.k)} DEFERRABLE INITIALLY DEFERRED`);
      loader.deferred.push({ table: r.t, name: r.k, deferrable: r.deferrable, deferred: r.deferred });
    }
    if (loader.deferred.length) await tx.exec('SET CONSTRAINTS ALL DEFERRED');
    return loader;
  }

  has(table: string): boolean {
    return this.tables.has(table);
  }

  /** Inserts the rows of one member (NDJSON lines), in batches. */
  async load(table: string, lines: AsyncIterable<string>, batchRows = 500, batchBytes = 8 << 20): Promise<void> {
    const t = this.tables.get(table);
    if (!t) throw new BackupError(`the backup holds rows of ${table}, which its manifest does not declare: refused`);
    let batch: unknown[] = [];
    let bytes = 0;
    const flush = async () => {
      if (!batch.length) return;
      try {
        await this.tx.query(t.insert, [JSON.stringify(batch)]);
      } catch (err) {
        throw new BackupError(`a row of ${table} was refused by memex's schema: ${(err as Error).message.slice(0, 300)}`);
      }
      t.loaded += batch.length;
      batch = [];
      bytes = 0;
    };
    for await (const line of lines) {
      if (line === '') continue;
      let row: unknown;
      try {
        row = JSON.parse(line);
      } catch {
        throw new BackupError(`a row of ${table} is not JSON (row ${t.loaded + batch.length + 1}): the backup is damaged`);
      }
      if (!row || typeof row !== 'object' || Array.isArray(row)) throw new BackupError(`a row of ${table} is not a JSON object: the backup is damaged`);
      for (const k of Object.keys(row)) {
        if (!t.columns.has(k)) throw new BackupError(`a row of ${table} has a column ${JSON.stringify(k.slice(0, 80))} memex's table does not have: refused`);
      }
      batch.push(row);
      bytes += line.length;
      if (batch.length >= batchRows || bytes >= batchBytes) await flush();
    }
    await flush();
  }

  /** Rows loaded per table. */
  counts(): Map<string, number> {
    return new Map([...this.tables.values()].map((t) => [t.name, t.loaded]));
  }

  async finish(): Promise<void> {
    for (const t of this.tables.values()) {
      if (t.loaded !== t.expected) {
        throw new BackupError(`the backup holds ${t.loaded} rows of ${t.name} where its manifest says ${t.expected}: it is damaged or cut short`);
      }
    }
    if (this.deferred.length) {
      try {
        await this.tx.exec('SET CONSTRAINTS ALL IMMEDIATE');
      } catch (err) {
        throw new BackupError(`the backup's rows do not hold together: ${(err as Error).message.slice(0, 300)}`);
      }
    }
    for (const d of this.deferred) {
      const how = d.deferrable ? `DEFERRABLE INITIALLY ${d.deferred ? 'DEFERRED' : 'IMMEDIATE'}` : 'NOT DEFERRABLE';
      await this.tx.exec(`ALTER TABLE public.${ident(d.table)} ALTER CONSTRAINT ${ident(d.name)} ${how}`);
    }
    for (const t of this.tables.values()) await this.tx.exec(`ALTER TABLE public.${ident(t.name)} ENABLE TRIGGER USER`);
    // Sequences owned by restored columns continue after the rows that came in.
    const seqs = await this.tx.query<{ t: string; c: string; s: string }>(
      `SELECT t.relname AS t, a.attname AS c, s.oid::regclass::text AS s
         FROM pg_class s
         JOIN pg_depend d ON d.objid = s.oid AND d.deptype IN ('a', 'i') AND d.classid = 'pg_class'::regclass
         JOIN pg_class t ON t.oid = d.refobjid
         JOIN pg_namespace n ON n.oid = t.relnamespace
         JOIN pg_attribute a ON a.attrelid = t.oid AND a.attnum = d.refobjsubid
        WHERE s.relkind = 'S' AND n.nspname = 'public'`,
    );
    for (const r of seqs.rows) {
      if (!this.tables.has(r.t)) continue;
      await this.tx.query(`SELECT setval($1::regclass, max_v, true) FROM (SELECT max(${ident(r.c)}) AS max_v FROM public.${ident(r.t)}) m WHERE max_v IS NOT NULL`, [r.s]);
    }
    if (this.tables.has('system_settings')) {
      await this.tx.query('DELETE FROM system_settings WHERE key = ANY($1::text[])', [SETTINGS_NOT_RESTORED]);
    }
  }
}
