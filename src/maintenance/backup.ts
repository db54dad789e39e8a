/**
 * Backup and restore: everything — the database and the stored files — in one tar file, made while
 * the server runs (docs/forget.md, "Back up and restore").
 *
 *   memex-backup.json            what is inside (format version, backend, counts, time)
 *   database/pglite.tar.gz       PGlite: its data directory (dumpDataDir, after a CHECKPOINT)
 *   database/postgres.dump       PostgreSQL: pg_dump --format=custom (one consistent snapshot)
 *   objects/<sha256>             every stored file a file record names, listed after the dump, so
 *                                every file the dump refers to is there (objects never change)
 *
 * The auth token is never in a backup (a backup is a file people copy elsewhere): restore leaves
 * the target's own token alone, and a server started without one generates it (DATA_DIR/auth-token).
 * An `auth-token` entry in a backup made by an older memex is ignored.
 *
 * Restore goes into an empty DATA_DIR (and, for PostgreSQL, an empty database): the data directory
 * is recreated from the tarball, or pg_restore loads the dump; then the objects are put back.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import tar from 'tar-stream';
import type { Database } from '../db/types.ts';
import { readObject, type ObjectStore } from '../files/object-store.ts';
import { MemexError } from '../util/errors.ts';

export const BACKUP_FORMAT_VERSION = 1;

export interface BackupManifest {
  type: 'memex-backup';
  format_version: number;
  created_at: string;
  database: 'pglite' | 'postgres';
  objects: number;
  documents: number;
}

/** A backup or restore that cannot run now or here (the gateway answers 409). */
export class BackupError extends MemexError {
  constructor(message: string) {
    super(message, 'BACKUP.CONFLICT', 409);
  }
}

/** pg_dump / pg_restore, with a clear message when they are not installed; `signal` stops the child. */
async function run(cmd: string, args: string[], signal?: AbortSignal): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'], ...(signal ? { signal, killSignal: 'SIGTERM' as const } : {}) });
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    child.on('error', (e: NodeJS.ErrnoException) =>
      reject(
        e.name === 'AbortError'
          ? e
          : new BackupError(
          e.code === 'ENOENT'
            ? `${cmd} is not on PATH: install PostgreSQL's client tools (Debian: postgresql-client-15) to back up or restore a PostgreSQL database`
            : `${cmd} failed to start: ${e.message}`,
        ),
      ),
    );
    child.on('close', (code) => (code === 0 ? resolve() : reject(new BackupError(`${cmd} exited with ${code}: ${err.trim().slice(0, 500)}`))));
  });
}

function addEntry(pack: tar.Pack, name: string, body: Buffer): Promise<void> {
  return new Promise((resolve, reject) => pack.entry({ name, size: body.length, mode: 0o600 }, body, (e) => (e ? reject(e) : resolve())));
}

async function addFile(pack: tar.Pack, name: string, file: string): Promise<void> {
  const { size } = await fsp.stat(file);
  await new Promise<void>((resolve, reject) => {
    const entry = pack.entry({ name, size, mode: 0o600 }, (e) => (e ? reject(e) : resolve()));
    pipeline(fs.createReadStream(file), entry).catch(reject);
  });
}

/** The reader went away (a client that disconnected): the backup stops, costing nothing more. */
export class BackupAborted extends Error {
  constructor(cause: unknown) {
    super('the backup was abandoned by its reader', { cause });
    this.name = 'BackupAborted';
  }
}

export interface BackupSource {
  db: Database;
  /** The server's DATABASE_URL (PostgreSQL); unset for PGlite. */
  databaseUrl?: string;
  store: ObjectStore;
  /** Largest stored object (FILE_MAX_BYTES): objects are read whole into the archive. */
  maxObjectBytes: number;
}

/**
 * What a backup needs before the first byte is written (a route can still answer with a status
 * then): PostgreSQL needs its URL and pg_dump on PATH; PGlite needs to be able to dump itself.
 */
export function backupPreflight(src: Pick<BackupSource, 'db' | 'databaseUrl'>): void {
  if (src.db.kind === 'pglite') {
    if (!src.db.dumpDataDir) throw new BackupError('this embedded database cannot dump its data directory');
    return;
  }
  if (!src.databaseUrl) throw new BackupError('a PostgreSQL backup needs DATABASE_URL');
  const probe = spawnSync('pg_dump', ['--version'], { stdio: 'ignore' });
  if (probe.error) {
    throw new BackupError(
      'pg_dump is not on PATH: install PostgreSQL\'s client tools (Debian: postgresql-client-15) to back up a PostgreSQL database',
    );
  }
}

/**
 * Writes the backup tar to `out`; resolves with the manifest once everything is written. When `out`
 * closes early (the client of POST /v1/admin/backup went away) it rejects with BackupAborted as soon
 * as the step under way ends (pg_dump is stopped), and nothing is left unhandled.
 */
export async function writeBackup(src: BackupSource, out: NodeJS.WritableStream): Promise<BackupManifest> {
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
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'memex-backup-'));
  try {
    const documents = (await step(src.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents'))).rows[0].n;
    if (src.db.kind === 'pglite') {
      if (!src.db.dumpDataDir) throw new BackupError('this embedded database cannot dump its data directory');
      const dump = Buffer.from(await (await step(src.db.dumpDataDir())).arrayBuffer());
      await step(addEntry(pack, 'database/pglite.tar.gz', dump));
    } else {
      if (!src.databaseUrl) throw new BackupError('a PostgreSQL backup needs DATABASE_URL');
      const file = path.join(tmp, 'postgres.dump');
      await step(
        run('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${file}`, `--dbname=${src.databaseUrl}`], stop.signal),
      );
      await step(addFile(pack, 'database/postgres.dump', file));
    }
    const keys = (await step(src.db.query<{ object_key: string }>('SELECT object_key FROM files ORDER BY object_key'))).rows.map(
      (r) => r.object_key,
    );
    let objects = 0;
    for (const key of keys) {
      let body: Buffer;
      try {
        body = await step(readObject(src.store, key, src.maxObjectBytes));
      } catch (err) {
        if (stop.signal.aborted) throw stop.signal.reason;
        continue; // forgotten or collected since the dump: nothing refers to it any more
      }
      await step(addEntry(pack, `objects/${key.split('/').pop()}`, body));
      objects++;
    }
    const manifest: BackupManifest = {
      type: 'memex-backup',
      format_version: BACKUP_FORMAT_VERSION,
      created_at: new Date().toISOString(),
      database: src.db.kind,
      objects,
      documents,
    };
    await step(addEntry(pack, 'memex-backup.json', Buffer.from(`${JSON.stringify(manifest, null, 2)}\n`)));
    pack.finalize();
    await done;
    return manifest;
  } catch (err) {
    const reason = stop.signal.aborted ? stop.signal.reason : err;
    stop.abort(reason);
    pack.destroy(reason as Error);
    await done.catch(() => undefined);
    throw reason;
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
}

export interface RestoreTarget {
  /** PGlite: the data directory to create (DATA_DIR/pglite); must be absent or empty. */
  pgliteDir?: string;
  /** PostgreSQL: an empty database. */
  databaseUrl?: string;
  store: ObjectStore;
  maxObjectBytes: number;
  /** PGlite data directory restore (src/db/pglite.ts), injected to keep this module free of the driver. */
  restorePglite: (dir: string, dump: Blob) => Promise<void>;
  /** Checks that the target PostgreSQL database has no memex tables yet. */
  postgresIsEmpty?: () => Promise<boolean>;
}

/** Reads a backup file and recreates everything in the target. */
export async function restoreBackup(file: string, target: RestoreTarget): Promise<BackupManifest> {
  const tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'memex-restore-'));
  try {
    let manifest: BackupManifest | undefined;
    let database: { kind: 'pglite' | 'postgres'; file: string } | undefined;
    const objects: string[] = [];
    const extract = tar.extract();
    extract.on('entry', (header, stream, next) => {
      const chunks: Buffer[] = [];
      const name = header.name;
      const toFile = name === 'database/postgres.dump' || name === 'database/pglite.tar.gz' || name.startsWith('objects/');
      const target = toFile ? path.join(tmp, name.replace(/[^\w./-]/g, '_')) : undefined;
      if (target && (!path.resolve(target).startsWith(tmp) || name.includes('..'))) return stream.destroy(new BackupError(`unexpected entry ${name}`));
      if (target) fs.mkdirSync(path.dirname(target), { recursive: true });
      const finish = () => {
        if (name === 'memex-backup.json') manifest = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        else if (name === 'database/pglite.tar.gz') database = { kind: 'pglite', file: target! };
        else if (name === 'database/postgres.dump') database = { kind: 'postgres', file: target! };
        else if (name.startsWith('objects/')) objects.push(target!);
        next();
      };
      if (target) {
        pipeline(stream, fs.createWriteStream(target)).then(finish, (e) => extract.destroy(e));
      } else {
        stream.on('data', (c: unknown) => chunks.push(c as Buffer));
        stream.on('end', finish);
      }
    });
    await pipeline(fs.createReadStream(file), extract);
    if (!manifest || manifest.type !== 'memex-backup') throw new BackupError(`${file} is not a memex backup (no memex-backup.json)`);
    if (manifest.format_version > BACKUP_FORMAT_VERSION) throw new BackupError(`backup format ${manifest.format_version} is newer than this memex understands`);
    if (!database) throw new BackupError('the backup holds no database');

    if (database.kind === 'pglite') {
      if (!target.pgliteDir) {
        throw new BackupError('this backup is of the embedded database: restore it without DATABASE_URL (into an empty DATA_DIR)');
      }
      if (fs.existsSync(target.pgliteDir) && fs.readdirSync(target.pgliteDir).length > 0) {
        throw new BackupError(`${target.pgliteDir} is not empty: restore into an empty DATA_DIR`);
      }
      const dump = await fsp.readFile(database.file);
      await target.restorePglite(target.pgliteDir, new Blob([dump]));
    } else {
      if (!target.databaseUrl) {
        throw new BackupError('this backup is of a PostgreSQL database: set DATABASE_URL to an empty database to restore it');
      }
      if (target.postgresIsEmpty && !(await target.postgresIsEmpty())) {
        throw new BackupError('the database at DATABASE_URL already holds memex tables: restore into an empty database');
      }
      await run('pg_restore', ['--no-owner', '--no-privileges', '--exit-on-error', `--dbname=${target.databaseUrl}`, database.file]);
    }
    for (const f of objects) {
      await target.store.put(fs.createReadStream(f) as unknown as Readable, { maxBytes: target.maxObjectBytes, allowEmpty: true });
    }
    return manifest;
  } finally {
    await fsp.rm(tmp, { recursive: true, force: true });
  }
}
