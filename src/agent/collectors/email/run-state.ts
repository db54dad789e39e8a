/**
 * Persistent state of the local email collector (host-agent spec §2.5, spec-notes B2.4/B2.5):
 *
 * - `entries`: the run-state map — one entry per message, status found -> submitted -> accepted |
 *   rejected, attempts, last_attempt_at, last_error, mailbox. Bodies and attachment bytes never go here.
 * - `accepted`: the index of documents the gateway accepted (collector idempotency key -> where and
 *   when). A later run skips these; everything else (new, rejected, still "submitted" after a crash or
 *   a gateway outage) is submitted again. Without a monotonic row id (simulate mode reads files),
 *   this index plays the role of the original's `last_accepted_rowid`.
 * - `files`: path -> size, mtime and key, so an unchanged, already accepted file is skipped without
 *   being read or parsed again.
 * - `source_ids`: which text each source id (Message-ID) was first seen with and where, so two
 *   different messages sharing one Message-ID get distinct source ids instead of overwriting each other.
 *
 * Writes go to a temp file, are fsynced and renamed over the state file, so a crash never leaves half
 * a JSON document. The rejected log is one NDJSON file per UTC day, pruned after the retention days.
 */
import fs from 'node:fs';
import { writeJsonAtomic } from '../../../util/fs.ts';
import os from 'node:os';
import path from 'node:path';
import { codedError } from '../../../util/errors.ts';

export type EntryStatus = 'found' | 'submitted' | 'accepted' | 'rejected';

export interface RunStateEntry {
  key: string;
  row_id: number | null;
  external_id: string;
  status: EntryStatus;
  attempts: number;
  last_attempt_at: string | null;
  last_error: string | null;
  mailbox: string | null;
  /** Where the message came from (file path); memex addition. */
  path?: string;
  /** Gateway doc id once accepted; memex addition. */
  doc_id?: string | null;
  duplicate?: boolean;
}

export interface AcceptedRecord {
  source_id: string;
  path: string | null;
  doc_id: string | null;
  accepted_at: string;
  /** The gateway accepted but stored nothing: the block list (blocked_source, blocked_identifier). */
  skipped?: string;
  /** The .emlx flags the gateway was last told (absent: none told, read as far as it knows). */
  flags?: string[];
}

export interface PersistedState {
  version: 1;
  last_accepted_rowid: number | null;
  entries: Record<string, RunStateEntry>;
  accepted: Record<string, AcceptedRecord>;
  files: Record<string, { size: number; mtime_ms: number; key: string }>;
  source_ids: Record<string, { text_hash: string; location: string }>;
  /** Per collected root: the redaction policy (policyLabel) its accepted mail was sent with; memex addition. */
  redaction?: Record<string, string>;
}

export function emptyState(): PersistedState {
  return { version: 1, last_accepted_rowid: null, entries: {}, accepted: {}, files: {}, source_ids: {} };
}

export class StateFileError extends codedError('AGENT.STATE_FILE') {
  override name = 'StateFileError';
}

export function loadState(file: string): PersistedState {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return emptyState();
    throw new StateFileError(`cannot read run state ${file}: ${(err as NodeJS.ErrnoException).code}`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    // A corrupt state must not silently restart from zero over the user's data: keep it aside.
    const aside = `${file}.corrupt-${Date.now()}`;
    fs.renameSync(file, aside);
    return emptyState();
  }
  const s = raw as Partial<PersistedState>;
  return {
    version: 1,
    last_accepted_rowid: typeof s.last_accepted_rowid === 'number' ? s.last_accepted_rowid : null,
    entries: s.entries && typeof s.entries === 'object' ? s.entries : {},
    accepted: s.accepted && typeof s.accepted === 'object' ? s.accepted : {},
    files: s.files && typeof s.files === 'object' ? s.files : {},
    source_ids: s.source_ids && typeof s.source_ids === 'object' ? s.source_ids : {},
    ...(s.redaction && typeof s.redaction === 'object' ? { redaction: s.redaction } : {}),
  };
}

/**
 * Mail under `root` accepted with another redaction policy than `label` — or before the state recorded one,
 * when the default redacted everything — is forgotten, so the run sends it again and the gateway keeps the
 * new text as a new version of each message (nothing duplicated: same source ids). Returns how many accepted
 * messages were forgotten.
 */
export function forgetAcceptedUnderOtherPolicy(state: PersistedState, root: string, label: string): number {
  state.redaction ??= {};
  if (state.redaction[root] === label) return 0;
  const under = (p: string) => p === root || p.startsWith(root + path.sep);
  let forgotten = 0;
  for (const [key, a] of Object.entries(state.accepted)) {
    if (a.path && under(a.path)) {
      delete state.accepted[key];
      forgotten++;
    }
  }
  for (const file of Object.keys(state.files)) if (under(file)) delete state.files[file];
  state.redaction[root] = label;
  return forgotten;
}

export function saveState(file: string, state: PersistedState): void {
  writeJsonAtomic(file, state);
}

/** Messages between two saves of the run state during a run, at the least. */
const SAVE_AFTER_MESSAGES = 200;
/** A run state holding many messages is saved at least this often during a run. */
const SAVE_AT_LEAST_EVERY_MS = 30_000;

/**
 * When to save the run state during a run. The state holds every message collected (about 0.9 KB each), so
 * saving all of it every 200 messages wrote O(n²) bytes over a run: 50 saves and 0.09 CPU-ms per message for
 * 10,000 messages, ten times that per message and tens of GB written for 100,000. It is saved once 200 messages
 * came since the last save and either they are a quarter of what it holds or 30 s went by — O(n) bytes in all.
 * A crash loses at most that much bookkeeping: those messages are sent again and answered as duplicates.
 */
export class StateSavePacer {
  private since = 0;
  private lastSave: number;

  constructor(
    /** Messages the state held when the run began. */
    private held: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    this.lastSave = now();
  }

  /**
   * For a run on `state`: what it holds is every accepted message (kept for good) and the entries not accepted yet
   * (a new run clears the accepted ones from `entries`, so their count alone would call a large state small).
   */
  static forState(state: PersistedState, now?: () => number): StateSavePacer {
    const pending = Object.values(state.entries).filter((e) => !state.accepted[e.key]).length;
    return new StateSavePacer(Object.keys(state.accepted).length + pending, now);
  }

  /** Counts `n` more messages in the state; true when it is to be saved now. */
  add(n: number): boolean {
    this.since += n;
    this.held += n;
    if (this.since < SAVE_AFTER_MESSAGES) return false;
    if (this.since * 4 < this.held && this.now() - this.lastSave < SAVE_AT_LEAST_EVERY_MS) return false;
    this.since = 0;
    this.lastSave = this.now();
    return true;
  }
}

/** The snapshot of GET /v1/collectors/email_local/state: entries without bookkeeping maps. */
export function stateSnapshot(state: PersistedState): { last_accepted_rowid: number | null; accepted_count: number; entries: RunStateEntry[] } {
  return {
    last_accepted_rowid: state.last_accepted_rowid,
    accepted_count: Object.keys(state.accepted).length,
    entries: Object.values(state.entries),
  };
}

// ---------------------------------------------------------------------------------------------
// Rejected log

export interface RejectedRecord {
  timestamp: string;
  rowID: number | null;
  externalID: string;
  idempotencyKey: string;
  contentSHA: string;
  attempts: number;
  lastServerResponse: { status: number; body: string | null };
  path?: string;
}

/** `<dir>/<base>-YYYY-MM-DD<ext>` for the UTC day of `at`. */
export function rejectedLogFile(logPath: string, at: Date): string {
  const ext = path.extname(logPath);
  const base = path.basename(logPath, ext);
  return path.join(path.dirname(logPath), `${base}-${at.toISOString().slice(0, 10)}${ext}`);
}

export function appendRejected(logPath: string, record: RejectedRecord, at = new Date()): string {
  const file = rejectedLogFile(logPath, at);
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.appendFileSync(file, JSON.stringify(record) + '\n', { mode: 0o600 });
  return file;
}

/** Deletes daily logs whose day is older than `retentionDays` before `now`. Returns the files removed. */
export function pruneRejectedLogs(logPath: string, retentionDays: number, now = new Date()): string[] {
  const ext = path.extname(logPath);
  const base = path.basename(logPath, ext);
  const dir = path.dirname(logPath);
  const re = new RegExp(`^${base.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}-(\\d{4}-\\d{2}-\\d{2})${ext.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
  const cutoff = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()) - retentionDays * 86_400_000;
  const removed: string[] = [];
  let names: string[] = [];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return removed;
  }
  for (const name of names) {
    const m = re.exec(name);
    if (!m) continue;
    const day = Date.parse(`${m[1]}T00:00:00Z`);
    if (Number.isFinite(day) && day < cutoff) {
      fs.rmSync(path.join(dir, name), { force: true });
      removed.push(name);
    }
  }
  return removed;
}

// ---------------------------------------------------------------------------------------------
// Lock file: one collector per mailbox state, across processes.

export class LockHeldError extends codedError('AGENT.LOCK_HELD') {
  override name = 'LockHeldError';
  constructor(
    message: string,
    readonly holderPid: number | null,
  ) {
    super(message);
  }
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface FileLock {
  path: string;
  release(): void;
}

/**
 * Creates the lock file exclusively with our pid. A lock left by a process that no longer runs (on this
 * host) is stale and taken over; a live holder raises LockHeldError (HTTP 423).
 */
export function acquireLock(lockPath: string): FileLock {
  fs.mkdirSync(path.dirname(lockPath), { recursive: true, mode: 0o700 });
  const body = JSON.stringify({ pid: process.pid, host: os.hostname(), started_at: new Date().toISOString() });
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = fs.openSync(lockPath, 'wx', 0o600);
      fs.writeSync(fd, body);
      fs.closeSync(fd);
      let released = false;
      return {
        path: lockPath,
        release() {
          if (released) return;
          released = true;
          try {
            const cur = JSON.parse(fs.readFileSync(lockPath, 'utf8')) as { pid?: number };
            if (cur.pid === process.pid) fs.rmSync(lockPath, { force: true });
          } catch {
            /* already gone */
          }
        },
      };
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      let holder: { pid?: number; host?: string } = {};
      try {
        holder = JSON.parse(fs.readFileSync(lockPath, 'utf8'));
      } catch {
        /* unreadable or half-written: treat as held unless it is old */
        const st = fs.statSync(lockPath, { throwIfNoEntry: false });
        if (st && Date.now() - st.mtimeMs > 60_000) {
          fs.rmSync(lockPath, { force: true });
          continue;
        }
      }
      const pid = typeof holder.pid === 'number' ? holder.pid : null;
      const sameHost = !holder.host || holder.host === os.hostname();
      if (pid !== null && sameHost && pid !== process.pid && !pidAlive(pid)) {
        fs.rmSync(lockPath, { force: true }); // stale lock of a dead process
        continue;
      }
      throw new LockHeldError(
        `Email collector lock unavailable: ${lockPath} is held by ${pid !== null ? `process ${pid}` : 'another process'}${holder.host && !sameHost ? ` on ${holder.host}` : ''}`,
        pid,
      );
    }
  }
  throw new LockHeldError(`Email collector lock unavailable: ${lockPath}`, null);
}
