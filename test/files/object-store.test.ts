import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createObjectStore, loadFilesConfig } from '../../src/files/config.ts';
import {
  EmptyFileError,
  InvalidObjectKeyError,
  LocalObjectStore,
  NotFoundError,
  objectKeyFor,
  readObject,
  TooLargeError,
  UploadReadError,
} from '../../src/files/object-store.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

async function listFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (d: string) => {
    for (const e of await fs.readdir(d, { withFileTypes: true }).catch(() => [])) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) await walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  await walk(dir);
  return out.sort();
}

async function streamToBuffer(r: Readable): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const c of r) parts.push(c as Buffer);
  return Buffer.concat(parts);
}

let root: string;
beforeEach(async () => {
  root = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-objects-'));
});
afterEach(async () => {
  await fs.rm(root, { recursive: true, force: true });
});

describe('LocalObjectStore', () => {
  it('stores content under sha256/ab/cd/<sha256> and reads it back', async () => {
    const store = await LocalObjectStore.open({ root });
    const data = randomBytes(300_000);
    const r = await store.put(Readable.from([data.subarray(0, 1000), data.subarray(1000)]), { maxBytes: 1_000_000, filename: 'a.bin' });
    const h = sha(data);
    expect(r).toEqual({ sha256: h, objectKey: `sha256/${h.slice(0, 2)}/${h.slice(2, 4)}/${h}`, sizeBytes: data.length, existed: false });
    expect(await listFiles(root)).toEqual([r.objectKey]);
    expect((await fs.readFile(path.join(root, r.objectKey))).equals(data)).toBe(true);
    expect((await streamToBuffer(await store.get(r.objectKey))).equals(data)).toBe(true);
    expect(await store.has(h)).toBe(true);
    expect(await store.has(sha(Buffer.from('other')))).toBe(false);
    expect(store.localPath(r.objectKey)).toBe(path.join(root, r.objectKey));
    expect((await readObject(store, r.objectKey, data.length)).equals(data)).toBe(true);
    await expect(readObject(store, r.objectKey, data.length - 1)).rejects.toBeInstanceOf(TooLargeError);
  });

  it('stores the same bytes once, under any name (dedup by SHA-256)', async () => {
    const store = await LocalObjectStore.open({ root });
    const data = Buffer.from('the same receipt, uploaded twice\n');
    const a = await store.put(Readable.from([data]), { maxBytes: 1024, filename: 'receipt.txt' });
    const b = await store.put(Readable.from([data]), { maxBytes: 1024, filename: 'copy of receipt.txt' });
    expect(a.existed).toBe(false);
    expect(b.existed).toBe(true);
    expect(b.objectKey).toBe(a.objectKey);
    expect(await listFiles(root)).toEqual([a.objectKey]); // one object, no temp left
  });

  it('concurrent uploads of the same bytes: exactly one writes, the others see it existed', async () => {
    const store = await LocalObjectStore.open({ root });
    const data = randomBytes(200_000);
    const results = await Promise.all(
      Array.from({ length: 6 }, () => store.put(Readable.from([data.subarray(0, 50_000), data.subarray(50_000)]), { maxBytes: 1e6 })),
    );
    expect(results.filter((r) => !r.existed)).toHaveLength(1);
    expect(await listFiles(root)).toEqual([results[0].objectKey]);
  });

  it('aborts an oversized upload mid-stream with TooLargeError and leaves nothing behind', async () => {
    const store = await LocalObjectStore.open({ root });
    let pulled = 0;
    const chunk = Buffer.alloc(64 * 1024, 7);
    async function* big() {
      for (let i = 0; i < 160; i++) {
        pulled++;
        yield chunk; // 10 MiB in all
      }
    }
    const err = await store.put(Readable.from(big()), { maxBytes: 1024 * 1024 }).catch((e) => e);
    expect(err).toBeInstanceOf(TooLargeError);
    expect(err.statusCode).toBe(413);
    expect(err.message).toContain('1048576');
    expect(pulled).toBeLessThan(40); // stopped reading soon after the limit, not at the end of the 10 MiB
    expect(await listFiles(root)).toEqual([]);
  });

  it('a multipart stream cut by its own parser limit ("limit" event / truncated) is TooLargeError, not a short object', async () => {
    const store = await LocalObjectStore.open({ root });
    // What busboy does at its fileSize limit: emit 'limit', set truncated, end the stream early.
    const part = new Readable({ read() {} }) as Readable & { truncated?: boolean };
    part.push(Buffer.alloc(1000, 3));
    setImmediate(() => {
      part.truncated = true;
      part.emit('limit');
      part.push(null);
    });
    await expect(store.put(part, { maxBytes: 1e6 })).rejects.toBeInstanceOf(TooLargeError);
    const ended = new Readable({ read() {} }) as Readable & { truncated?: boolean };
    ended.truncated = true; // limit hit without the event being seen
    ended.push(Buffer.alloc(10, 1));
    ended.push(null);
    await expect(store.put(ended, { maxBytes: 1e6 })).rejects.toBeInstanceOf(TooLargeError);
    expect(await listFiles(root)).toEqual([]);
  });

  it('accepts an upload of exactly maxBytes', async () => {
    const store = await LocalObjectStore.open({ root });
    const r = await store.put(Readable.from([Buffer.alloc(4096, 1)]), { maxBytes: 4096 });
    expect(r.sizeBytes).toBe(4096);
  });

  it('refuses an empty upload (nothing stored) unless allowed', async () => {
    const store = await LocalObjectStore.open({ root });
    await expect(store.put(Readable.from([]), { maxBytes: 10 })).rejects.toBeInstanceOf(EmptyFileError);
    expect(await listFiles(root)).toEqual([]);
    const r = await store.put(Readable.from([]), { maxBytes: 10, allowEmpty: true });
    expect(r.sizeBytes).toBe(0);
    expect(r.sha256).toBe(sha(Buffer.alloc(0)));
  });

  it('a client that breaks off mid-upload gives UploadReadError and no object', async () => {
    const store = await LocalObjectStore.open({ root });
    async function* broken() {
      yield Buffer.alloc(100_000, 1);
      throw new Error('socket hang up');
    }
    const err = await store.put(Readable.from(broken()), { maxBytes: 1e6 }).catch((e) => e);
    expect(err).toBeInstanceOf(UploadReadError);
    expect(err.message).toContain('socket hang up');
    expect(await listFiles(root)).toEqual([]);
  });

  it('rejects keys it did not make (no path escapes) and reports missing objects', async () => {
    const store = await LocalObjectStore.open({ root });
    for (const bad of ['../../etc/passwd', 'sha256/ab/cd/../../x', `sha256/00/00/${'a'.repeat(64)}`, `sha256/AA/AA/${'A'.repeat(64)}`]) {
      await expect(store.get(bad)).rejects.toBeInstanceOf(InvalidObjectKeyError);
    }
    await expect(store.get(objectKeyFor('b'.repeat(64)))).rejects.toBeInstanceOf(NotFoundError);
    await store.delete(objectKeyFor('b'.repeat(64))); // absent: no error
  });

  it('objects are written read-only and delete removes them', async () => {
    const store = await LocalObjectStore.open({ root });
    const r = await store.put(Readable.from([Buffer.from('x')]), { maxBytes: 10 });
    const st = await fs.stat(store.localPath(r.objectKey));
    expect(st.mode & 0o222).toBe(0);
    await store.delete(r.objectKey);
    expect(await store.has(r.sha256)).toBe(false);
  });

  it('a writer killed between writing and renaming leaves no visible object; reopening cleans its temp file', async () => {
    // A child process streams an upload into the store and is SIGKILLed while its temp file is half written.
    const here = path.dirname(fileURLToPath(import.meta.url));
    const script = path.join(root, 'writer.mts');
    const modUrl = new URL('../../src/files/object-store.ts', import.meta.url).href;
    await fs.writeFile(
      script,
      `import { LocalObjectStore } from ${JSON.stringify(modUrl)};
       import { Readable } from 'node:stream';
       const store = await LocalObjectStore.open({ root: ${JSON.stringify(path.join(root, 'store'))} });
       async function* slow() {
         for (let i = 0; ; i++) { yield Buffer.alloc(65536, i % 256); await new Promise((r) => setTimeout(r, 20)); }
       }
       await store.put(Readable.from(slow()), { maxBytes: 1e12 });`,
    );
    const child = spawn(process.execPath, ['--import', 'tsx', script], { cwd: path.resolve(here, '../..'), stdio: 'ignore' });
    const tmpDir = path.join(root, 'store', 'tmp');
    // Wait until the temp file has data in it.
    let partial: string | undefined;
    for (let i = 0; i < 600 && !partial; i++) {
      await new Promise((r) => setTimeout(r, 50));
      for (const f of await fs.readdir(tmpDir).catch(() => [] as string[])) {
        const st = await fs.stat(path.join(tmpDir, f)).catch(() => undefined);
        if (st && st.size >= 4 * 65536) partial = f;
      }
    }
    expect(partial, 'child never started writing').toBeDefined();
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
    // After the crash: the half file exists only in tmp/, nothing under sha256/.
    expect(await listFiles(path.join(root, 'store', 'sha256'))).toEqual([]);
    expect(await fs.readdir(tmpDir)).toContain(partial);

    // A leftover from a crash after the write completed (complete bytes, still not renamed) is equally invisible.
    const complete = Buffer.from('complete but never published');
    await fs.writeFile(path.join(tmpDir, '999999999-1-abc.part'), complete);

    const store = await LocalObjectStore.open({ root: path.join(root, 'store') });
    expect(await fs.readdir(tmpDir)).toEqual([]); // both leftovers removed on open
    expect(await store.has(sha(complete))).toBe(false);
    // The store works normally afterwards.
    const r = await store.put(Readable.from([complete]), { maxBytes: 1000 });
    expect(r.existed).toBe(false);
    expect(await listFiles(path.join(root, 'store', 'sha256'))).toHaveLength(1);
  });

  it('does not delete a live writer’s temp file when another process opens the store', async () => {
    const tmpDir = path.join(root, 'tmp');
    await fs.mkdir(tmpDir, { recursive: true });
    const live = `${process.pid}-${Date.now()}-aaaa.part`; // our own pid: alive
    await fs.writeFile(path.join(tmpDir, live), 'in progress');
    await LocalObjectStore.open({ root });
    expect(await fs.readdir(tmpDir)).toEqual([live]);
  });
});

describe('files config', () => {
  it('defaults to a local store under DATA_DIR/objects', async () => {
    const cfg = loadFilesConfig({ DATA_DIR: root });
    expect(cfg.objectStore).toBe('local');
    expect(cfg.localRoot).toBe(path.join(root, 'objects'));
    const store = await createObjectStore(cfg);
    expect(store.backend).toBe('local');
    expect((await fs.stat(path.join(root, 'objects', 'tmp'))).isDirectory()).toBe(true);
  });

  it('gives one-line errors naming the key', () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ OBJECT_STORE: 'ftp' }, /^OBJECT_STORE must be local or s3/],
      [{ OBJECT_STORE: 's3' }, /^S3_BUCKET is required/],
      [{ OBJECT_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'not a url' }, /^S3_ENDPOINT must be a URL/],
      [{ OBJECT_STORE: 's3', S3_BUCKET: 'b', S3_ACCESS_KEY_ID: 'k' }, /^S3_ACCESS_KEY_ID and S3_SECRET_ACCESS_KEY must be set together/],
      [{ OBJECT_STORE: 's3', S3_BUCKET: 'b', S3_FORCE_PATH_STYLE: 'maybe' }, /^S3_FORCE_PATH_STYLE must be true or false/],
      [{ FILE_MAX_BYTES: 'lots' }, /^FILE_MAX_BYTES must be a size/],
      [{ EXTRACT_MAX_PAGES: '0' }, /^EXTRACT_MAX_PAGES must be between/],
    ];
    for (const [env, re] of bad) {
      expect(() => loadFilesConfig(env)).toThrow(re);
      try {
        loadFilesConfig(env);
      } catch (e) {
        expect((e as Error).message).not.toContain('\n');
      }
    }
    const s3 = loadFilesConfig({ OBJECT_STORE: 's3', S3_BUCKET: 'b', S3_ENDPOINT: 'http://127.0.0.1:9000', FILE_MAX_BYTES: '5mb' });
    expect(s3.s3).toMatchObject({ bucket: 'b', region: 'us-east-1', forcePathStyle: true });
    expect(s3.maxUploadBytes).toBe(5 * 1024 * 1024);
  });
});
