/**
 * A backup never holds the auth token (issue 33 item 4): it is a file people copy elsewhere. Restore
 * keeps the target's own token, and a backup with an `auth-token` member (older memex versions wrote
 * one) is refused without writing it.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalObjectStore } from '../../src/files/object-store.ts';
import { restoreBackup } from '../../src/maintenance/backup.ts';
import { backend, createServerDatabase, createTestDatabase } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const SECRET = 'tok-3b9f6c1e-never-in-a-backup-0123456789';
let gw: TestGateway;
let dir: string;
let dropTarget: (() => Promise<void>) | undefined;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-backup-token-'));
  // The server's generated token lives in DATA_DIR/auth-token.
  await fs.writeFile(path.join(dir, 'auth-token'), `${SECRET}\n`, { mode: 0o600 });
  const testDb = await createTestDatabase();
  gw = await startTestGateway({ testDb, config: { databaseUrl: testDb.url, dataDir: dir } as any, files: {} });
  const res = await gw.request('POST', '/v1/ingest', { source_type: 'note', source_id: 'n1', title: 'Note', content: { data: 'The harbour ferry leaves at nine.' } });
  expect(res.statusCode).toBe(202);
}, 180_000);

afterAll(async () => {
  await gw?.close();
  await dropTarget?.();
  await fs.rm(dir, { recursive: true, force: true });
});

async function entries(bytes: Buffer): Promise<Map<string, Buffer>> {
  const out = new Map<string, Buffer>();
  const extract = tar.extract();
  extract.on('entry', (h, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => (out.set(h.name, Buffer.concat(chunks)), next()));
  });
  await new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve).on('error', reject);
    extract.end(bytes);
  });
  return out;
}

describe(`the auth token and backups on ${backend}`, () => {
  it('is not in the backup, and restore never writes one from a backup', async () => {
    const res = await gw.app.inject({ method: 'POST', url: '/v1/admin/backup', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    const inside = await entries(res.rawPayload);
    expect([...inside.keys()]).toContain('memex-backup.json');
    expect([...inside.keys()]).not.toContain('auth-token');
    expect(res.rawPayload.includes(Buffer.from(SECRET))).toBe(false);

    // A backup with the token inside: restore refuses it and does not bring it back (the server generates its own).
    const pack = tar.pack();
    const chunks: Buffer[] = [];
    pack.on('data', (c: unknown) => chunks.push(c as Buffer));
    for (const [name, body] of inside) pack.entry({ name }, body);
    pack.entry({ name: 'auth-token' }, Buffer.from(`${SECRET}\n`));
    pack.finalize();
    await new Promise<void>((r) => pack.on('end', () => r()));
    const old = path.join(dir, 'old-backup.tar');
    await fs.writeFile(old, Buffer.concat(chunks));

    const target = path.join(dir, 'restored');
    await fs.mkdir(target);
    let databaseUrl: string | undefined;
    if (backend === 'postgres') {
      const empty = await createServerDatabase();
      dropTarget = empty.drop;
      databaseUrl = empty.url;
    }
    const store = await LocalObjectStore.open({ root: path.join(target, 'objects') });
    await expect(
      restoreBackup(old, {
        dataDir: target,
        databaseUrl,
        store,
        maxObjectBytes: 1 << 20,
        ...({ authTokenFile: path.join(target, 'auth-token') } as object),
      }),
    ).rejects.toThrow(/unexpected member "auth-token"/);
    const restoredToken = await fs.readFile(path.join(target, 'auth-token'), 'utf8').catch(() => null);
    expect(restoredToken).toBeNull();
  });
});
