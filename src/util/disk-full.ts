/**
 * A full disk is the server's condition, not the client's mistake (issue 47 item 7): every write that
 * fails for want of space answers 507 Insufficient Storage, code STORAGE.DISK_FULL, with a message that
 * says which disk, and nothing is acknowledged that was not stored. 507 rather than 503: the condition
 * lasts until someone frees space, so a client should not retry on a timer (no Retry-After); it may
 * retry the same request after space is freed, and loses nothing by doing so.
 *
 * The last time a write met a full disk is remembered here, so GET /v1/status (and the web UI's Sources
 * page) can say so together with the free space of the disk holding DATA_DIR.
 */
import fs from 'node:fs';
import type { ErrorCode } from './error-codes.ts';

export const DISK_FULL_CODE = 'STORAGE.DISK_FULL' satisfies ErrorCode;
export const DISK_FULL_STATUS = 507;

export type FullDisk = 'data_dir' | 'database';

export function diskFullMessage(which: FullDisk): string {
  return which === 'data_dir'
    ? 'the disk holding DATA_DIR is full: free some space there, then send again (nothing was stored)'
    : 'the disk holding the database is full: free some space there, then send again (nothing was stored)';
}

/** Which disk a failed write found full, or null when the error is something else. Follows `cause` chains. */
export function fullDiskOf(err: unknown): FullDisk | null {
  for (let e = err as { code?: unknown; message?: unknown; cause?: unknown } | undefined, depth = 0; e && depth < 6; e = e.cause as typeof e, depth++) {
    if (e.code === 'ENOSPC' || e.code === 'EDQUOT') return 'data_dir';
    // PostgreSQL's disk_full (53100): "could not extend file …: No space left on device".
    if (e.code === '53100') return 'database';
    if (typeof e.message === 'string' && /No space left on device|ENOSPC/.test(e.message)) return 'database';
  }
  return null;
}

let lastFull: { at: Date; which: FullDisk } | undefined;

/** Records that a write met a full disk now (the status report shows it). */
export function noteDiskFull(which: FullDisk): void {
  lastFull = { at: new Date(), which };
}

export interface DiskReport {
  /** Free bytes on the disk holding DATA_DIR (null when it cannot be read). */
  data_dir_free_bytes: number | null;
  data_dir_total_bytes: number | null;
  /** True while the last write that met a full disk has not been followed by free space again. */
  full: boolean;
  /** When a write last failed for want of space, and which disk (since this server started). */
  last_full_at: string | null;
  last_full_disk: FullDisk | null;
  message: string | null;
}

/** A database server's disk cannot be measured from here: its verdict stands this long after the last failure. */
const DATABASE_FULL_MS = 5 * 60_000;

/**
 * The disk's state for the status report. "Full" is the last failed write's verdict, until the disk
 * holding DATA_DIR has room again (64 MiB, or 5 % of a smaller disk), which clears it.
 */
export function diskReport(dataDir: string): DiskReport {
  let free: number | null = null;
  let total: number | null = null;
  try {
    const s = fs.statfsSync(dataDir);
    free = s.bavail * s.bsize;
    total = s.blocks * s.bsize;
  } catch {
    /* a DATA_DIR that is not there yet: nothing to say */
  }
  const room = Math.min(64 << 20, (total ?? 0) * 0.05);
  if (lastFull?.which === 'data_dir' && free !== null && free > room) lastFull = undefined;
  if (lastFull?.which === 'database' && Date.now() - lastFull.at.getTime() > DATABASE_FULL_MS) lastFull = undefined;
  const full = lastFull !== undefined;
  return {
    data_dir_free_bytes: free,
    data_dir_total_bytes: total,
    full,
    last_full_at: lastFull?.at.toISOString() ?? null,
    last_full_disk: lastFull?.which ?? null,
    message: lastFull ? diskFullMessage(lastFull.which) : null,
  };
}
