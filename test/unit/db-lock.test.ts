/**
 * The embedded database's lock file (src/db/lock.ts): one owner at a time, a crashed owner's lock is taken over,
 * a lock from another host is never guessed at. The cross-process case runs in test/cli/verbs-beside-server.test.ts.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { acquireDatabaseLock, databaseLockHolder, DatabaseLockedError, lockFileFor } from '../../src/db/lock.ts';
import { openPglite } from '../../src/db/pglite.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-lock-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe('database lock file', () => {
  it('is held until released, and a second open is refused meanwhile', async () => {
    const dbDir = path.join(dir, 'a', 'pglite');
    const db = await openPglite(dbDir);
    expect(databaseLockHolder(dbDir)?.pid).toBe(process.pid);
    const refused = await openPglite(dbDir).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(DatabaseLockedError);
    expect((refused as Error).message).toMatch(/open in another process: .*pid \d+/);
    await db.close();
    expect(fs.existsSync(lockFileFor(dbDir))).toBe(false);
    const again = await openPglite(dbDir);
    await again.close();
  });

  it('takes over the lock of a process that is gone', () => {
    const dbDir = path.join(dir, 'b', 'pglite');
    fs.mkdirSync(path.dirname(dbDir), { recursive: true });
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']).stdout.toString();
    fs.writeFileSync(lockFileFor(dbDir), JSON.stringify({ pid: Number(dead), hostname: os.hostname(), command: 'memex serve', started_at: 'x' }));
    expect(databaseLockHolder(dbDir)).toBeNull();
    const release = acquireDatabaseLock(dbDir);
    expect(databaseLockHolder(dbDir)?.pid).toBe(process.pid);
    release();
  });

  it('refuses a lock written on another host', () => {
    const dbDir = path.join(dir, 'c', 'pglite');
    fs.mkdirSync(path.dirname(dbDir), { recursive: true });
    fs.writeFileSync(lockFileFor(dbDir), JSON.stringify({ pid: 1, hostname: 'elsewhere.example', command: 'memex serve', started_at: 'x' }));
    expect(() => acquireDatabaseLock(dbDir)).toThrow(/pid 1 on elsewhere\.example/);
  });
});
