/**
 * The S3 adapter against s3rver, an S3 REST server written in Node (npm `s3rver`, devDependency). It is a fake of
 * S3, not S3 itself: Debian bookworm ships no S3-compatible server usable in a test (MinIO, Garage, SeaweedFS and
 * s3proxy are not packaged; radosgw needs a whole Ceph cluster), and nothing else can be fetched here. s3rver does
 * speak the real wire protocol (requests from the real AWS SDK, XML errors, HEAD 404s), so the adapter's
 * requests, error mapping and dedup logic are exercised for real; what it cannot prove is behaviour specific to AWS
 * or MinIO (multipart thresholds, checksum trailers), and s3rver checks the access key id but does not verify SigV4
 * signatures themselves.
 */
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
// @ts-expect-error s3rver ships no type declarations
import S3rver from 's3rver';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createObjectStore, loadFilesConfig } from '../../src/files/config.ts';
import { NotFoundError, ObjectStoreUnavailableError, ObjectStoreWriteError, readObject, removeObjects, TooLargeError } from '../../src/files/object-store.ts';
import { S3ObjectStore } from '../../src/files/s3-store.ts';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
let dir: string;
let server: { run(): Promise<AddressInfo>; close(): Promise<void> };
let endpoint: string;
let store: S3ObjectStore;

async function bucketKeys(s: S3ObjectStore): Promise<string[]> {
  const out = await s.client.send(new ListObjectsV2Command({ Bucket: 'memex-test' }));
  return (out.Contents ?? []).map((o) => o.Key!).sort();
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-s3-'));
  server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: path.join(dir, 'server'),
    configureBuckets: [{ name: 'memex-test' }],
  });
  const addr = await server.run();
  endpoint = `http://127.0.0.1:${addr.port}`;
  const cfg = loadFilesConfig({
    DATA_DIR: path.join(dir, 'data'),
    OBJECT_STORE: 's3',
    S3_ENDPOINT: endpoint,
    S3_BUCKET: 'memex-test',
    S3_ACCESS_KEY_ID: 'S3RVER',
    S3_SECRET_ACCESS_KEY: 'S3RVER',
    S3_REGION: 'us-east-1',
  });
  store = (await createObjectStore(cfg)) as S3ObjectStore;
});

afterAll(async () => {
  store?.destroy();
  await server?.close().catch(() => {});
  await fs.rm(dir, { recursive: true, force: true });
});

describe('S3ObjectStore (against s3rver)', () => {
  it('uploads under sha256/ab/cd/<sha256> and reads the same bytes back', async () => {
    expect(store.backend).toBe('s3');
    const data = randomBytes(700_000);
    const r = await store.put(Readable.from([data.subarray(0, 100), data.subarray(100)]), {
      maxBytes: 1e6,
      filename: 'Quittung März.pdf',
      mimeType: 'application/pdf',
    });
    const h = sha(data);
    expect(r).toEqual({ sha256: h, objectKey: `sha256/${h.slice(0, 2)}/${h.slice(2, 4)}/${h}`, sizeBytes: data.length, existed: false });
    expect(await bucketKeys(store)).toContain(r.objectKey);
    expect((await readObject(store, r.objectKey, 1e6)).equals(data)).toBe(true);
    expect(await store.has(h)).toBe(true);
  });

  it('dedups by SHA-256: the second upload finds the object with HeadObject and sends nothing', async () => {
    const data = Buffer.from('same bytes for s3, twice');
    const a = await store.put(Readable.from([data]), { maxBytes: 100 });
    const b = await store.put(Readable.from([data]), { maxBytes: 100 });
    expect([a.existed, b.existed]).toEqual([false, true]);
    expect((await bucketKeys(store)).filter((k) => k === a.objectKey)).toHaveLength(1);
  });

  it('aborts over the limit before anything reaches the bucket and leaves no spool file', async () => {
    const before = await bucketKeys(store);
    await expect(store.put(Readable.from([Buffer.alloc(5000, 1), Buffer.alloc(5000, 2)]), { maxBytes: 6000 })).rejects.toBeInstanceOf(
      TooLargeError,
    );
    expect(await bucketKeys(store)).toEqual(before);
    expect(await fs.readdir(path.join(dir, 'data', 'objects', 's3-spool'))).toEqual([]);
  });

  it('missing objects: has() is false and get() is NotFoundError; delete removes', async () => {
    const missing = 'c'.repeat(64);
    expect(await store.has(missing)).toBe(false);
    await expect(store.get(`sha256/cc/cc/${missing}`)).rejects.toBeInstanceOf(NotFoundError);
    const r = await store.put(Readable.from([Buffer.from('to delete')]), { maxBytes: 100 });
    await store.delete(r.objectKey);
    expect(await store.has(r.sha256)).toBe(false);
  });

  it('keeps a thumbnail beside an object, and removeObjects takes both', async () => {
    const r = await store.put(Readable.from([Buffer.from('an image, say')]), { maxBytes: 100 });
    expect(await store.getBeside(r.objectKey, 'thumb.webp')).toBeNull();
    await store.putBeside(r.objectKey, 'thumb.webp', Buffer.from('small picture'));
    expect((await store.getBeside(r.objectKey, 'thumb.webp'))?.toString()).toBe('small picture');
    expect(await bucketKeys(store)).toContain(`${r.objectKey}.thumb.webp`);
    await removeObjects(store, [r.objectKey]);
    expect(await store.getBeside(r.objectKey, 'thumb.webp')).toBeNull();
    expect((await bucketKeys(store)).filter((k) => k.includes(r.sha256))).toEqual([]);
  });

  it('credentials reach the server: an unknown access key is refused (ObjectStoreWriteError, not a silent success)', async () => {
    const wrong = await S3ObjectStore.open({
      bucket: 'memex-test',
      endpoint,
      region: 'us-east-1',
      accessKeyId: 'NOT-A-KEY',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
      tmpDir: path.join(dir, 'spool-wrong'),
    });
    try {
      const err = await wrong.put(Readable.from([Buffer.from('signed?')]), { maxBytes: 100 }).catch((e) => e);
      expect(err).toBeInstanceOf(ObjectStoreWriteError);
      expect(err.message).toMatch(/InvalidAccessKeyId|403/);
    } finally {
      wrong.destroy();
    }
  });

  it('an unreachable endpoint is ObjectStoreUnavailableError (503), not a crash', async () => {
    const down = await S3ObjectStore.open({
      bucket: 'memex-test',
      endpoint: 'http://127.0.0.1:1', // nothing listens on port 1
      region: 'us-east-1',
      accessKeyId: 'S3RVER',
      secretAccessKey: 'S3RVER',
      forcePathStyle: true,
      tmpDir: path.join(dir, 'spool-down'),
    });
    try {
      const err = await down.put(Readable.from([Buffer.from('x')]), { maxBytes: 10 }).catch((e) => e);
      expect(err).toBeInstanceOf(ObjectStoreUnavailableError);
      expect(err.statusCode).toBe(503);
      expect(await fs.readdir(path.join(dir, 'spool-down'))).toEqual([]);
    } finally {
      down.destroy();
    }
  });
});
