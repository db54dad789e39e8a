/**
 * Backup and restore round trip on the active backend: a backup made through the running gateway
 * (POST /v1/admin/backup) restored into an empty data directory (PGlite) or an empty database
 * (PostgreSQL) gives the same search answers, people, relationships and stored files.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/index.ts';
import { LocalObjectStore } from '../../src/files/object-store.ts';
import { BackupError, restoreBackup } from '../../src/maintenance/backup.ts';
import { fileUpload } from '../files/multipart.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { createTestDatabase } from '../helpers/db.ts';

let source: TestGateway;
let restored: TestGateway | undefined;
let dir: string;
let dropRestored: (() => Promise<void>) | undefined;
let sourceUrl: string | undefined;

const ME = 'me@home.example';

async function answers(gw: TestGateway) {
  const search = async (q: string) => (await gw.request('GET', `/v1/search?q=${encodeURIComponent(q)}`)).json().hits.map((h: any) => h.document_id);
  await gw.request('POST', '/v1/admin/relationships/recompute');
  return {
    otter: await search('otter'),
    harbour: await search('harbour plans'),
    people: (await gw.request('GET', '/search/people?q=Rivera')).json().results.map((p: any) => [p.person_id, p.display_name]),
    top: (await gw.request('GET', '/v1/crm/relationships/top?window=365d')).json().results?.map((r: any) => [r.person_id, r.score]),
    doc: (await gw.request('GET', '/v1/documents?limit=50')).json().documents.map((d: any) => [d.doc_id, d.title]).sort(),
  };
}

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-backup-test-'));
  const sourceDb = await createTestDatabase();
  sourceUrl = sourceDb.url;
  source = await startTestGateway({ testDb: sourceDb, config: { databaseUrl: sourceDb.url } as any, files: {} });
  const ingest = async (body: Record<string, unknown>) => expect((await source.request('POST', '/v1/ingest', { content_timestamp: '2026-11-20T09:00:00Z', ...body })).statusCode).toBe(202);
  await ingest({ source_type: 'email', source_id: 's1', title: 'Me', content: { data: 'Notes to self' }, people: [{ identifier: ME, role: 'sender' }] });
  await source.request('PUT', '/v1/admin/self-person', { identifier: ME });
  for (let i = 0; i < 4; i++) {
    await ingest({
      source_type: 'email',
      source_id: `m${i}`,
      title: `Harbour plans ${i}`,
      content: { data: `The otter count at the harbour was ${i * 7}.` },
      people: [{ identifier: 'ana@rivera.example', role: 'sender', display_name: 'Ana Rivera' }, { identifier: ME, role: 'recipient' }],
    });
  }
  const up = fileUpload({ path: '/docs/map.txt', mtime: 1767225600 }, Buffer.from('A map of the harbour with the otter den marked.'), 'map.txt', 'text/plain');
  const res = await source.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: up.payload, headers: { ...up.headers, authorization: `Bearer ${TEST_TOKEN}` } });
  expect(res.statusCode).toBe(202);
}, 180_000);

afterAll(async () => {
  await restored?.close();
  await dropRestored?.();
  await source?.close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe(`backup and restore on ${backend}`, () => {
  it('restores the same answers, people, relationships and files', async () => {
    const before = await answers(source);
    expect(before.otter.length).toBeGreaterThanOrEqual(5);
    expect(before.people).toHaveLength(1);

    const res = await source.app.inject({ method: 'POST', url: '/v1/admin/backup', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('application/x-tar');
    const file = path.join(dir, 'backup.tar');
    await fs.writeFile(file, res.rawPayload);

    const objects = path.join(dir, 'restored', 'objects');
    const store = await LocalObjectStore.open({ root: objects });
    let target: { dataDir?: string; url?: string };
    if (backend === 'postgres') {
      const empty = await createServerDatabase();
      dropRestored = empty.drop;
      target = { url: empty.url };
    } else {
      target = { dataDir: path.join(dir, 'restored') };
    }
    const report = await restoreBackup(file, {
      dataDir: target.dataDir ?? path.join(dir, 'restored'),
      databaseUrl: target.url,
      store,
      maxObjectBytes: 1 << 20,
    });
    expect(report.manifest).toMatchObject({ type: 'memex-backup', database: backend, objects: 1 });
    expect(report.objects).toBe(1);

    const db = await openDatabase({ dataDir: target.dataDir, databaseUrl: target.url });
    restored = await startTestGateway({ testDb: { db, drop: () => db.close() }, files: { store, dataDir: objects } });
    const after = await answers(restored);
    expect(after).toEqual(before);
    const sha = (await restored.db.query<{ file_sha256: string }>('SELECT file_sha256 FROM files')).rows[0].file_sha256;
    expect(await store.has(sha)).toBe(true);
  });

  it('refuses to restore over existing data, and a file that is not a backup', async () => {
    const file = path.join(dir, 'backup.tar');
    const store = await LocalObjectStore.open({ root: path.join(dir, 'again', 'objects') });
    if (backend === 'pglite') {
      await expect(
        restoreBackup(file, { dataDir: path.join(dir, 'restored'), store, maxObjectBytes: 1 << 20 }),
      ).rejects.toThrow(/not empty|open in another process/);
    } else {
      await expect(
        restoreBackup(file, { dataDir: path.join(dir, 'again'), databaseUrl: sourceUrl!, store, maxObjectBytes: 1 << 20 }),
      ).rejects.toThrow(/not empty/);
    }
    const junk = path.join(dir, 'junk.tar');
    await fs.writeFile(junk, Buffer.alloc(1024));
    await expect(
      restoreBackup(junk, { dataDir: path.join(dir, 'x'), store, maxObjectBytes: 1 << 20 }),
    ).rejects.toThrow(/not a memex backup/);
  });
});
