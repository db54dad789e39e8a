/**
 * One process owns an embedded database directory. PGlite is PostgreSQL compiled to WASM inside one process: a
 * second process opening the same files corrupts or aborts (`Aborted(). Build with -sASSERTIONS…`). So whoever
 * opens `DATA_DIR/pglite` first (the server, or `memex migrate` while no server runs) holds the lock file
 * `DATA_DIR/pglite.lock` until it closes the database, and everyone else is refused before opening anything.
 *
 * The file holds the owner's pid, host and command. A lock whose process is gone (a crash, `kill -9`) is stale
 * and taken over; a lock written on another host (a data directory on a network share) is never guessed at.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { codedError } from '../util/errors.ts';

export interface LockHolder {
  pid: number;
  hostname: string;
  /** The command line that took the lock, e.g. "memex serve". */
  command: string;
  started_at: string;
}

export class DatabaseLockedError extends codedError('DATABASE.LOCKED') {
  constructor(
    readonly lockFile: string,
    readonly holder: LockHolder,
  ) {
    const who = `${holder.command} (pid ${holder.pid}${holder.hostname === os.hostname() ? '' : ` on ${holder.hostname}`}, since ${holder.started_at})`;
    super(
      `the embedded database in ${path.dirname(lockFile)} is open in another process: ${who}. ` +
        'PGlite serves one process: stop that process first, use the commands that talk to the running server, ' +
        `or use DATABASE_URL with a PostgreSQL server. If no such process exists, delete ${lockFile}.`,
    );
  }
}

/** Lock files this process holds: a lock naming our own pid but not in this set is left from an earlier life. */
const heldHere = new Set<string>();

export function lockFileFor(databaseDir: string): string {
  return `${path.resolve(databaseDir)}.lock`;
}

function commandLine(): string {
  const script = process.argv[1] ? path.basename(process.argv[1]).replace(/\.(js|ts|mjs)$/, '') : 'node';
  return [script, ...process.argv.slice(2)].join(' ').slice(0, 200);
}

function readHolder(file: string): LockHolder | null | 'unreadable' {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw err;
  }
  try {
    const h = JSON.parse(text) as LockHolder;
    if (Number.isInteger(h.pid) && typeof h.hostname === 'string') return h;
  } catch {
    /* fall through */
  }
  return 'unreadable';
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** True when the holder's process still runs (or cannot be checked because it is on another host). */
function holderAlive(file: string, h: LockHolder): boolean {
  if (h.hostname !== os.hostname()) return true;
  if (h.pid === process.pid) return heldHere.has(file);
  return processAlive(h.pid);
}

/** The live holder of the lock on `databaseDir`, or null when it is free (absent or stale). */
export function databaseLockHolder(databaseDir: string): LockHolder | null {
  const file = lockFileFor(databaseDir);
  const h = readHolder(file);
  if (h === null || h === 'unreadable') return null;
  return holderAlive(file, h) ? h : null;
}

/**
 * Takes the lock or throws DatabaseLockedError. The file appears complete or not at all (written aside, then
 * hard-linked into place, which fails when it exists). Returns the release function.
 */
export function acquireDatabaseLock(databaseDir: string): () => void {
  const file = lockFileFor(databaseDir);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const me: LockHolder = { pid: process.pid, hostname: os.hostname(), command: commandLine(), started_at: new Date().toISOString() };
  const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}`;
  fs.writeFileSync(tmp, `${JSON.stringify(me)}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        fs.linkSync(tmp, file);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const holder = readHolder(file);
      if (holder === null) continue; // released between our link and our read
      if (holder !== 'unreadable' && holderAlive(file, holder)) throw new DatabaseLockedError(file, holder);
      if (attempt >= 2) {
        throw new DatabaseLockedError(file, holder === 'unreadable' ? { pid: 0, hostname: os.hostname(), command: 'unknown', started_at: 'unknown' } : holder);
      }
      // Stale (its process is gone) or not ours to read: take it over.
      fs.rmSync(file, { force: true });
    }
  } finally {
    fs.rmSync(tmp, { force: true });
  }
  heldHere.add(file);
  return () => {
    if (!heldHere.delete(file)) return;
    const h = readHolder(file);
    if (h && h !== 'unreadable' && h.pid === process.pid && h.started_at === me.started_at) fs.rmSync(file, { force: true });
  };
}
