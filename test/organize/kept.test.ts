/**
 * Issue 44 item 6 on the active backend: tags (a document's and a conversation's), tagging rules and saved
 * searches are in the NDJSON export, and a backup restored into an empty data directory (PGlite) or an empty
 * database (PostgreSQL) answers tag: and @saved as the original did, its rules still tagging new documents.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/index.ts';
import { LocalObjectStore } from '../../src/files/object-store.ts';
import { restoreBackup } from '../../src/maintenance/backup.ts';
import { backend, createServerDatabase, createTestDatabase } from '../helpers/db.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let source: TestGateway;
let restored: TestGateway | undefined;
let dropRestored: (() => Promise<void>) | undefined;
let dir: string;
const ids: Record<string, string> = {};
const pollBefore = process.env.TAG_RULES_POLL_MS;

const tagged = async (gw: TestGateway, q: string) =>
  (await gw.request('GET', `/v1/search?${new URLSearchParams({ q, k: '50' })}`)).json().hits.map((h: any) => h.document_id).sort();

beforeAll(async () => {
  process.env.TAG_RULES_POLL_MS = '100';
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-organize-kept-'));
  const sourceDb = await createTestDatabase();
  source = await startTestGateway({ testDb: sourceDb, config: { databaseUrl: sourceDb.url } as any, files: {} });
  const ingest = async (body: Record<string, unknown>) => (await source.request('POST', '/v1/ingest', noteBody(body))).json();
  ids.a = (await ingest({ title: 'Dentist', content: { data: 'Dentist appointment on Friday.' }, metadata: { tags: ['health'] } })).doc_id;
  const m = await ingest({ source_type: 'email', title: 'Offsite', thread: { external_id: 'offsite' }, content: { data: 'Offsite agenda attached.' } });
  ids.m = m.doc_id;
  ids.thread = m.thread_id;
  await source.request('POST', '/v1/tags/add', { tag: 'work/events', thread_ids: [ids.thread] });
  expect((await source.request('POST', '/v1/tags/rules', { tag: 'health/teeth', query: 'dentist' })).statusCode).toBe(201);
  expect((await source.request('PUT', '/v1/saved/health', { query: 'tag:health/*' })).statusCode).toBe(200);
}, 180_000);

afterAll(async () => {
  if (pollBefore === undefined) delete process.env.TAG_RULES_POLL_MS;
  else process.env.TAG_RULES_POLL_MS = pollBefore;
  await restored?.close();
  await dropRestored?.();
  await source?.close();
  await fs.rm(dir, { recursive: true, force: true });
});

describe(`tags, rules and saved searches kept on ${backend}`, () => {
  it('are in the NDJSON export', async () => {
    const res = await source.request('GET', '/v1/export');
    expect(res.statusCode).toBe(200);
    const lines = res.body.trim().split('\n').map((l: string) => JSON.parse(l));
    const doc = lines.find((l: any) => l.type === 'document' && l.doc_id === ids.a);
    expect(doc.tags).toEqual([
      { name: 'health', origin: 'import' },
      { name: 'health/teeth', origin: expect.stringMatching(/^rule:/) },
    ]);
    expect(lines.find((l: any) => l.type === 'thread' && l.thread_id === ids.thread).tags).toEqual([{ name: 'work/events', origin: 'manual' }]);
    expect(lines.filter((l: any) => l.type === 'tag_rule')).toEqual([expect.objectContaining({ tag: 'health/teeth', query: 'dentist' })]);
    expect(lines.filter((l: any) => l.type === 'saved_search')).toEqual([expect.objectContaining({ name: 'health', query: 'tag:health/*' })]);
  });

  it('survive a backup and restore, and the rules keep tagging', async () => {
    const res = await source.app.inject({ method: 'POST', url: '/v1/admin/backup', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    const file = path.join(dir, 'backup.tar');
    await fs.writeFile(file, res.rawPayload);
    const store = await LocalObjectStore.open({ root: path.join(dir, 'restored', 'objects') });
    let url: string | undefined;
    if (backend === 'postgres') {
      const empty = await createServerDatabase();
      dropRestored = empty.drop;
      url = empty.url;
    }
    await restoreBackup(file, { dataDir: path.join(dir, 'restored'), databaseUrl: url, store, maxObjectBytes: 1 << 20 });
    const db = await openDatabase({ dataDir: url ? undefined : path.join(dir, 'restored'), databaseUrl: url });
    restored = await startTestGateway({ testDb: { db, drop: () => db.close() } as any });

    expect(await tagged(restored, 'tag:health/teeth')).toEqual([ids.a]);
    expect(await tagged(restored, 'tag:work/events')).toEqual([ids.m]);
    expect((await restored.request('GET', '/v1/saved/health')).json()).toMatchObject({ count: 1 });
    expect((await restored.request('GET', '/v1/tags/rules')).json().rules).toEqual([expect.objectContaining({ tag: 'health/teeth', documents: 1 })]);

    const b = (await restored.request('POST', '/v1/ingest', noteBody({ title: 'Dentist again', content: { data: 'The dentist moved the appointment.' } }))).json().doc_id;
    const end = Date.now() + 60_000;
    while (!(await tagged(restored, 'tag:health/teeth')).includes(b) && Date.now() < end) await new Promise((r) => setTimeout(r, 100));
    expect(await tagged(restored, 'tag:health/teeth')).toEqual([ids.a, b].sort());
  });
});
