/**
 * The local object store's batch of small writes (putSmall, src/files/small-writes.ts): what the originals route
 * stores a request's messages with. It must be indistinguishable from one put per body: the same keys and bytes,
 * owner-only read-only files, dedup against what is stored and within the batch, nothing left in tmp/, and a
 * full disk answered as one (a real tmpfs, filled; needs root).
 */
import { execFileSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DiskFullError, EmptyFileError, LocalObjectStore, objectKeyFor } from '../../src/files/object-store.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-small-writes-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

async function read(store: LocalObjectStore, key: string): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of await store.get(key)) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

describe('LocalObjectStore.putSmall', () => {
  it('stores each body under its SHA-256 as put would, read-only for the owner, nothing left in tmp/', async () => {
    const store = await LocalObjectStore.open({ root });
    const bodies = Array.from({ length: 40 }, (_, i) => randomBytes(500 + i * 97));
    const results = await store.putSmall(bodies);
    expect(results).toHaveLength(bodies.length);
    for (const [i, body] of bodies.entries()) {
      const h = sha(body);
      expect(results[i]).toEqual({ sha256: h, objectKey: objectKeyFor(h), sizeBytes: body.length, existed: false });
      expect((await read(store, results[i].objectKey)).equals(body)).toBe(true);
      expect((await fs.stat(store.localPath(results[i].objectKey))).mode & 0o777).toBe(0o400);
    }
    expect(await fs.readdir(store.tmpDir)).toEqual([]);
  });

  it('says what was stored already: by an earlier put, an earlier batch, or earlier in the same batch', async () => {
    const store = await LocalObjectStore.open({ root });
    const [a, b, c] = [randomBytes(800), randomBytes(900), randomBytes(1000)];
    await store.put(Readable.from([a]), { maxBytes: 10_000 });
    const first = await store.putSmall([a, b, b]);
    expect(first.map((r) => r.existed)).toEqual([true, false, true]);
    expect(first[1].objectKey).toBe(first[2].objectKey);
    const again = await store.putSmall([c, b]);
    expect(again.map((r) => r.existed)).toEqual([false, true]);
    const objects = (await fs.readdir(path.join(root, 'sha256'), { recursive: true })).filter((n) => /[0-9a-f]{64}$/.test(String(n)));
    expect(objects).toHaveLength(3);
  });

  it('refuses an empty body and stores nothing of its batch', async () => {
    const store = await LocalObjectStore.open({ root });
    await expect(store.putSmall([randomBytes(100), Buffer.alloc(0)])).rejects.toBeInstanceOf(EmptyFileError);
    expect(await fs.readdir(path.join(root, 'sha256'))).toEqual([]);
  });
});

describe('LocalObjectStore.putSmall on a full disk', () => {
  const isRoot = process.getuid?.() === 0;
  it.skipIf(!isRoot)('answers DiskFullError and leaves no temp file (skipped unless root: it mounts a tmpfs)', async () => {
    const mnt = path.join(root, 'mnt');
    await fs.mkdir(mnt);
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', mnt]);
    try {
      const store = await LocalObjectStore.open({ root: mnt });
      // Fill the tmpfs to the last byte, then try to store more than is left.
      await fs.writeFile(path.join(mnt, 'filler'), Buffer.alloc(1024 * 1024)).catch(() => undefined);
      const err = await store.putSmall([randomBytes(64 * 1024), randomBytes(64 * 1024)]).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(DiskFullError);
      expect(await fs.readdir(store.tmpDir)).toEqual([]);
    } finally {
      execFileSync('umount', ['-l', mnt]);
    }
  });
});
