/**
 * Backup and restore: everything — memex's table rows and the stored files — in one tar file, made
 * while the server runs (docs/forget.md, "Back up and restore"). The format is in backup-format.ts:
 * data only, written and read by memex itself, so a backup from anywhere can never run code.
 *
 * Backup reads every table in one snapshot (PostgreSQL: a REPEATABLE READ transaction; PGlite: an
 * in-memory copy of the data directory after a CHECKPOINT, so the server goes on meanwhile), then
 * adds every stored file a file record names (objects never change, so each one the rows refer to
 * is there).
 *
 * The auth token is never in a backup (a backup is a file people copy elsewhere): restore leaves
 * the target's own token alone, and a server started without one generates it (DATA_DIR/auth-token).
 * Nor are web sign-ins (web_sessions) or the search change log (table-data.ts, NOT_BACKED_UP).
 *
 * Restore validates the manifest before it touches the target, makes the schema with this memex's
 * own migrations (exactly the versions the backup was written at), and loads the rows in one
 * transaction: into a staging folder beside DATA_DIR/pglite, renamed into place when complete
 * (PGlite), or into the empty database (PostgreSQL), where a failure or a kill rolls it all back.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar, { type Header as TarHeader } from 'tar-stream';
import { acquireDatabaseLock } from '../db/lock.ts';
import { listMigrations, migrateTo } from '../db/migrate.ts';
import type { Database, Queryable } from '../db/types.ts';
import { readObject, removeObjects, type ObjectStore } from '../files/object-store.ts';
import {
  BACKUP_FORMAT_VERSION,
  BackupError,
  classifyMember,
  END_MEMBER,
  MANIFEST_MEMBER,
  parseEnd,
  parseManifest,
  type BackupEnd,
  type BackupManifest,
  type MemberKind,
} from './backup-format.ts';
import { removeRestoreLeftovers, stagingDirFor } from './restore-leftovers.ts';
import { catalogTables, countRows, tableChunks, TableLoader } from './table-data.ts';
import { codedError } from '../util/errors.ts';

export { BACKUP_FORMAT_VERSION, BackupError, type BackupManifest } from './backup-format.ts';

function addEntry(pack: tar.Pack, name: string, body: Buffer): Promise<void> {
  return new Promise((resolve, reject) => pack.entry({ name, size: body.length, mode: 0o600 }, body, (e) => (e ? reject(e) : resolve())));
}

/** The reader went away (a client that disconnected): the backup stops, costing nothing more. */
export class BackupAborted extends codedError('BACKUP.ABORTED') {
  constructor(cause: unknown) {
    super('the backup was abandoned by its reader', { cause });
    this.name = 'BackupAborted';
  }
}

export interface BackupSource {
  db: Database;
  store: ObjectStore;
  /** Largest stored object (FILE_MAX_BYTES): objects are read whole into the archive. */
  maxObjectBytes: number;
}

/** What a backup needs before the first byte is written (a route can still answer with a status then). */
export function backupPreflight(src: Pick<BackupSource, 'db'>): void {
  if (src.db.kind === 'pglite' && !src.db.snapshotCopy) throw new BackupError('this embedded database cannot copy itself for a backup');
}

const tableMember = (table: string, n: number) => `database/${table}/${String(n).padStart(6, '0')}.ndjson`;

/**
 * Writes the backup tar to `out`; resolves with the manifest (its `objects` the files written) once
 * everything is written. When `out` closes early (the client of POST /v1/admin/backup went away) it
 * rejects with BackupAborted as soon as the step under way ends, and nothing is left unhandled.
 */
export async function writeBackup(src: BackupSource, out: NodeJS.WritableStream): Promise<BackupManifest> {
  backupPreflight(src);
  const pack = tar.pack();
  const stop = new AbortController();
  const done = pipeline(pack, out).catch((e: unknown) => {
    stop.abort(new BackupAborted(e));
    throw stop.signal.reason;
  });
  // Rejected the moment the reader goes away; every step races it so none waits on a dead stream.
  const aborted = new Promise<never>((_, reject) => stop.signal.addEventListener('abort', () => reject(stop.signal.reason), { once: true }));
  aborted.catch(() => undefined);
  done.catch(() => undefined);
  const step = <T>(p: Promise<T>): Promise<T> => {
    p.catch(() => undefined); // the race's loser must not become an unhandled rejection
    return Promise.race([p, aborted]);
  };
  let copy: Database | undefined;
  try {
    const reader = src.db.kind === 'pglite' ? (copy = await step(src.db.snapshotCopy!())) : src.db;
    const { manifest, keys } = await reader.transaction(async (tx) => {
      // One snapshot: the counts, every table's rows and the list of files agree with each other.
      if (reader.kind === 'postgres') await tx.exec('SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY');
      return writeTables(tx, reader.kind, pack, step, stop.signal);
    });
    await copy?.close();
    copy = undefined;
    let objects = 0;
    for (const key of keys) {
      let body: Buffer;
      try {
        body = await step(readObject(src.store, key, src.maxObjectBytes));
      } catch (err) {
        if (stop.signal.aborted) throw stop.signal.reason;
        continue; // forgotten or collected since the snapshot: nothing refers to it any more
      }
      await step(addEntry(pack, `objects/${key.split('/').pop()}`, body));
      objects++;
    }
    const end: BackupEnd = { type: 'memex-backup-end', objects };
    await step(addEntry(pack, END_MEMBER, Buffer.from(`${JSON.stringify(end, null, 2)}\n`)));
    pack.finalize();
    await done;
    return { ...manifest, objects };
  } catch (err) {
    const reason = stop.signal.aborted ? stop.signal.reason : err;
    stop.abort(reason);
    pack.destroy(reason as Error);
    await done.catch(() => undefined);
    throw reason;
  } finally {
    await copy?.close().catch(() => undefined);
  }
}

/** The manifest and every table's rows, from the snapshot `tx` reads; answers the object keys to add after. */
async function writeTables(
  tx: Queryable,
  kind: Database['kind'],
  pack: tar.Pack,
  step: <T>(p: Promise<T>) => Promise<T>,
  signal: AbortSignal,
): Promise<{ manifest: BackupManifest; keys: string[] }> {
  const tables = await step(countRows(tx, await step(catalogTables(tx))));
  const migrations = (await step(tx.query<{ version: number }>('SELECT version FROM schema_migrations ORDER BY version'))).rows.map((r) => Number(r.version));
  const documents = tables.find((t) => t.name === 'documents')?.rows ?? 0;
  const keys = (await step(tx.query<{ object_key: string }>('SELECT object_key FROM files ORDER BY object_key'))).rows.map((r) => r.object_key);
  const manifest: BackupManifest = {
    type: 'memex-backup',
    format_version: BACKUP_FORMAT_VERSION,
    created_at: new Date().toISOString(),
    database: kind,
    migrations,
    tables,
    documents,
    objects: keys.length,
  };
  await step(addEntry(pack, MANIFEST_MEMBER, Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)));
  for (const t of tables) {
    let n = 0;
    for await (const chunk of tableChunks(tx, t)) {
      if (signal.aborted) throw signal.reason;
      await step(addEntry(pack, tableMember(t.name, ++n), chunk));
    }
  }
  return { manifest, keys };
}

export interface RestoreTarget {
  /** DATA_DIR: the embedded database is made in a staging folder here and renamed to DATA_DIR/pglite. */
  dataDir: string;
  /** PostgreSQL: an empty database; unset restores into the embedded database. */
  databaseUrl?: string;
  store: ObjectStore;
  maxObjectBytes: number;
}

export interface RestoreReport {
  manifest: BackupManifest;
  /** Rows put back, per table. */
  rows: Map<string, number>;
  /** Stored files put back. */
  objects: number;
}

/** A member being read (a streamx stream: async-iterable bytes). */
type TarEntry = AsyncIterable<Buffer> & { header: TarHeader; resume(): unknown };

/** Phase of each member kind: members must come in this order (backup-format.ts). */
const PHASE: Record<MemberKind, number> = { manifest: 0, table: 1, object: 2, end: 3 };

async function readAll(stream: AsyncIterable<Buffer>, max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of stream) {
    n += (c as Buffer).length;
    if (n > max) throw new BackupError(`a member is larger than the ${max} bytes allowed for it`);
    chunks.push(c as Buffer);
  }
  return Buffer.concat(chunks);
}

/** The lines of a member, one row each (the member's size is bounded, so is one line). */
async function* lines(stream: AsyncIterable<Buffer>): AsyncGenerator<string> {
  let rest = '';
  for await (const c of stream) {
    const text = rest + (c as Buffer).toString('utf8');
    const parts = text.split('\n');
    rest = parts.pop()!;
    for (const p of parts) yield p;
  }
  if (rest) yield rest;
}

/**
 * Reads a backup file and recreates everything in the target; a BackupError (one line) for any file
 * that is not a whole, valid memex backup, and then the target is as it was.
 */
export async function restoreBackup(file: string, target: RestoreTarget): Promise<RestoreReport> {
  removeRestoreLeftovers(target.dataDir);
  const limits = { maxObjectBytes: target.maxObjectBytes };
  let tarError: Error | undefined;
  const input = fs.createReadStream(file);
  const extract = tar.extract();
  const fail = (e: Error) => {
    tarError ??= e;
    extract.destroy(e);
  };
  input.on('error', (e: NodeJS.ErrnoException) =>
    fail(new BackupError(e.code === 'ENOENT' ? `${file}: no such file` : `cannot read ${file}: ${e.message}`)),
  );
  extract.on('error', (e) => (tarError ??= e));
  input.pipe(extract);
  const entries = extract[Symbol.asyncIterator]() as unknown as AsyncIterator<TarEntry>;
  /** A failure while reading the file is the file's (a cut or damaged tar), whatever step noticed it. */
  const asFileError = async (err: unknown): Promise<unknown> => {
    if (err instanceof BackupError) return err;
    await new Promise((r) => setImmediate(r)); // the extractor's own error comes on the next turn
    if (!tarError) return err;
    if (tarError instanceof BackupError) return tarError;
    return new BackupError(`${path.basename(file)} is not a whole tar file (${tarError.message}): cut short or damaged`);
  };
  const next = async (): Promise<TarEntry | undefined> => {
    try {
      const r = await entries.next();
      return r.done ? undefined : r.value;
    } catch (err) {
      tarError ??= err as Error;
      throw await asFileError(err);
    }
  };

  let release: (() => void) | undefined;
  let staging: string | undefined;
  let db: Database | undefined;
  const added: string[] = [];
  try {
    // The manifest first, before anything of the target is touched.
    const first = await next();
    if (!first) throw new BackupError(`${path.basename(file)} is not a memex backup (it is empty, or not a tar file)`);
    const head = classifyMember(first.header, limits);
    if (head.kind !== 'manifest') {
      first.resume();
      throw new BackupError(`${path.basename(file)} is not a memex backup: its first member is ${JSON.stringify(first.header.name.slice(0, 120))}, not ${MANIFEST_MEMBER}`);
    }
    const manifest = parseManifest(await readAll(first, 1 << 20));
    const known = new Set(listMigrations().map((m) => m.version));
    const unknown = manifest.migrations.filter((v) => !known.has(v));
    if (unknown.length) {
      throw new BackupError(`the backup was made by a newer memex (schema migrations ${unknown.join(', ')} are unknown here): restore it with a newer memex`);
    }

    const opened = await openTarget(target, manifest.migrations);
    ({ db, release, staging } = opened);
    const report: RestoreReport = await db.transaction(async (tx) => {
      if (opened.checkEmpty) await opened.checkEmpty(tx);
      if (!(await migrateTo(tx, manifest.migrations))) throw new Error('the new database is ahead of the backup');
      const loader = await TableLoader.prepare(tx, manifest.tables);
      let phase = PHASE.manifest;
      let end: BackupEnd | undefined;
      let objects = 0;
      for (let entry = await next(); entry; entry = await next()) {
        const m = classifyMember(entry.header, limits);
        const name = JSON.stringify(entry.header.name.slice(0, 120));
        if (end || PHASE[m.kind] < phase || m.kind === 'manifest') {
          throw new BackupError(`the backup's member ${name} is out of place (memex writes the manifest, then tables, then files, then ${END_MEMBER}): refused`);
        }
        phase = PHASE[m.kind];
        try {
          if (m.kind === 'table') {
            await loader.load(m.key!, lines(entry));
          } else if (m.kind === 'object') {
            const put = await target.store.put(Readable.from(entry), { maxBytes: target.maxObjectBytes, allowEmpty: true });
            if (!put.existed) added.push(put.objectKey);
            if (put.sha256 !== m.key) throw new BackupError(`the backup's file ${name} does not hash to its name: it is damaged or altered`);
            objects++;
          } else {
            end = parseEnd(await readAll(entry, 64 << 10));
          }
        } catch (err) {
          throw await asFileError(err);
        }
      }
      if (!end) throw new BackupError(`the backup is incomplete: it ends before ${END_MEMBER} (cut short while it was written or copied)`);
      if (end.objects !== objects) throw new BackupError(`the backup holds ${objects} stored files where it says ${end.objects}: it is damaged`);
      await loader.finish();
      return { manifest, rows: loader.counts(), objects };
    });
    await db.close();
    db = undefined;
    if (staging) {
      // Complete and closed: only now does DATA_DIR/pglite appear, in one rename.
      const dest = path.join(target.dataDir, 'pglite');
      await fsp.rmdir(dest).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'ENOENT') throw e;
      });
      await fsp.rename(path.join(staging, 'pglite'), dest);
    }
    return report;
  } catch (err) {
    // Stored files this restore added are the backup's: they go with it.
    await removeObjects(target.store, added).catch(() => undefined);
    throw err;
  } finally {
    input.destroy();
    extract.destroy();
    await db?.close().catch(() => undefined);
    if (staging) await fsp.rm(staging, { recursive: true, force: true });
    release?.();
  }
}

interface OpenedTarget {
  db: Database;
  release?: () => void;
  /** The PGlite staging folder (DATA_DIR/.restore-<pid>), removed on every way out. */
  staging?: string;
  checkEmpty?: (tx: Queryable) => Promise<void>;
}

async function openTarget(target: RestoreTarget, migrations: number[]): Promise<OpenedTarget> {
  if (target.databaseUrl) {
    const { openPostgres } = await import('../db/postgres.ts');
    let db: Database;
    try {
      db = await openPostgres(target.databaseUrl, 1);
    } catch (err) {
      throw new BackupError(`cannot reach the database at DATABASE_URL: ${(err as Error).message}`);
    }
    return {
      db,
      async checkEmpty(tx) {
        const r = await tx.query<{ t: string }>(
          `SELECT c.relname AS t FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
            WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p', 'v', 'm') ORDER BY 1 LIMIT 5`,
        );
        if (r.rows.length) {
          throw new BackupError(`the database at DATABASE_URL is not empty (it holds ${r.rows.map((x) => x.t).join(', ')}): restore into an empty database`);
        }
      },
    };
  }
  const dest = path.join(target.dataDir, 'pglite');
  if (fs.existsSync(dest) && fs.readdirSync(dest).length > 0) throw new BackupError(`${dest} is not empty: restore into an empty DATA_DIR`);
  const release = acquireDatabaseLock(dest); // no server may open DATA_DIR/pglite while it is being made
  const staging = stagingDirFor(target.dataDir);
  try {
    await fsp.rm(staging, { recursive: true, force: true });
    await fsp.mkdir(staging, { recursive: true, mode: 0o700 });
    const { openPglite } = await import('../db/pglite.ts');
    const dir = path.join(staging, 'pglite');
    let db = await openPglite(dir);
    // The build's template has every migration of this memex; a backup from an older schema starts from initdb.
    const have = (await db.query<{ v: number }>(`SELECT version AS v FROM schema_migrations`).catch(() => ({ rows: [] as { v: number }[] }))).rows;
    if (have.some((r) => !migrations.includes(Number(r.v)))) {
      await db.close();
      await fsp.rm(dir, { recursive: true, force: true });
      db = await openPglite(dir, { templateDir: path.join(staging, 'no-template') });
    }
    return { db, release, staging };
  } catch (err) {
    release();
    await fsp.rm(staging, { recursive: true, force: true });
    throw err;
  }
}
