/**
 * What a killed restore leaves, removed at the next start (`memex serve`, `memex restore`).
 *
 * A restore builds the embedded database in DATA_DIR/.restore-<pid> and renames it into place only
 * when complete; a restore that is killed leaves that folder with the backup's rows in it. Older
 * memex restores unpacked the whole backup into TMPDIR/memex-restore-* (and backups into
 * TMPDIR/memex-backup-*), which a kill left there too (issue 47 item 6). Both are the person's data
 * in places nobody looks: a folder whose process is gone is removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { processAlive } from '../db/lock.ts';

const STAGING = /^\.restore-(\d+)$/;
/** Left by older memex versions (random suffixes, no pid): removed when an hour old. */
const LEGACY_TMP = /^memex-(restore|backup)-[A-Za-z0-9]{6}$/;
const LEGACY_STALE_MS = 3600_000;

/** The staging folder of a restore by this process into `dataDir`. */
export function stagingDirFor(dataDir: string): string {
  return path.join(dataDir, `.restore-${process.pid}`);
}

/** Removes staging folders of restores whose process is gone, and old temporary copies; answers what went. */
export function removeRestoreLeftovers(dataDir: string, tmpDir = os.tmpdir()): string[] {
  const removed: string[] = [];
  const uid = process.getuid?.();
  const rm = (p: string) => {
    try {
      fs.rmSync(p, { recursive: true, force: true });
      removed.push(p);
    } catch {
      /* not ours to remove, or gone meanwhile */
    }
  };
  for (const name of list(dataDir)) {
    const m = STAGING.exec(name);
    if (m && Number(m[1]) !== process.pid && !processAlive(Number(m[1]))) rm(path.join(dataDir, name));
  }
  for (const name of list(tmpDir)) {
    if (!LEGACY_TMP.test(name)) continue;
    const p = path.join(tmpDir, name);
    try {
      const st = fs.statSync(p);
      if (st.isDirectory() && (uid === undefined || st.uid === uid) && Date.now() - st.mtimeMs > LEGACY_STALE_MS) rm(p);
    } catch {
      /* gone meanwhile */
    }
  }
  return removed;
}

function list(dir: string): string[] {
  try {
    return fs.readdirSync(dir);
  } catch {
    return [];
  }
}
