/**
 * Searching while a large import batch is being written (issue 20): over real HTTP, a search sent once the
 * batch's first transaction is writing is answered before the batch's response, and the batch still stores
 * every document once. On PGlite (one connection in the gateway's thread, whose calls never yield to the
 * event loop) the search used to stay unread until the whole batch was written.
 */
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BATCH_GROUP_SIZE, Catalog, PGLITE_READER_GROUP_SIZE } from '../../src/catalog/catalog.ts';
import type { Database } from '../../src/db/types.ts';
import { createSearch, type Search } from '../../src/search/search.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { buildTestGateway, noteBody, TEST_TOKEN, testConfig } from '../helpers/gateway.ts';

let testDb: TestDatabase;
let search: Search;
let app: Awaited<ReturnType<typeof buildTestGateway>>;
let url: string;
/** Resolved when the catalog starts its first write transaction after `watchWrites()`. */
let writing: Promise<void> = new Promise(() => {});
let onWrite: (() => void) | null = null;
/** Write transactions the catalog has started. */
let transactions = 0;
const watchWrites = () => (writing = new Promise<void>((resolve) => (onWrite = resolve)));

beforeAll(async () => {
  testDb = await createTestDatabase();
  // The catalog's database, telling the test when a batch transaction is under way.
  const watched: Database = {
    ...testDb.db,
    kind: testDb.db.kind,
    query: (sql, params, opts) => testDb.db.query(sql, params, opts),
    exec: (sql) => testDb.db.exec(sql),
    transaction: (fn) =>
      testDb.db.transaction((tx) => {
        transactions++;
        onWrite?.();
        onWrite = null;
        return fn(tx);
      }),
  };
  const config = testConfig();
  search = createSearch({ db: testDb.db, embedder: null, config: { vectorBudgetMs: 0 }, ask: { provider: null } });
  app = await buildTestGateway({ config, db: testDb.db, catalog: new Catalog(watched, { phoneRegion: config.defaultPhoneRegion }), search });
  await app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await app?.close();
  search?.close();
  await testDb?.drop();
});

const headers = { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' };

describe(`searching while a batch is written on ${backend}`, () => {
  // First in this file: no request has noted a reader yet.
  it('writes a batch in one transaction while nobody reads; on PGlite, in small ones for a while after a search', async () => {
    const batchOf = (tag: string) =>
      Array.from({ length: BATCH_GROUP_SIZE }, (_, i) => noteBody({ source_id: `${tag}-${i}`, content: { data: `Note ${i} of ${tag} about the orchard.` } }));
    const send = async (tag: string) => {
      const before = transactions;
      const res = await fetch(`${url}/v1/ingest:batch`, { method: 'POST', headers, body: JSON.stringify({ documents: batchOf(tag) }) });
      expect(res.status).toBe(202);
      expect(((await res.json()) as any).success_count).toBe(BATCH_GROUP_SIZE);
      return transactions - before;
    };
    // Nobody has asked for anything: the batch is one transaction, the import's full speed.
    expect(await send('quiet')).toBe(1);
    const found = await fetch(`${url}/v1/search?q=orchard&k=5`, { headers });
    expect(found.status).toBe(200);
    // Someone searched: on PGlite the next batch gives way between small transactions (PostgreSQL unchanged).
    expect(await send('reading')).toBe(backend === 'pglite' ? BATCH_GROUP_SIZE / PGLITE_READER_GROUP_SIZE : 1);
  });

  it('answers a search sent during a 1,000-document batch before the batch is done, and the batch stores them all', async () => {
    const first = await fetch(`${url}/v1/ingest:batch`, {
      method: 'POST',
      headers,
      body: JSON.stringify({ documents: [noteBody({ source_id: 'earlier-a', content: { data: 'The quarterly budget review is on Friday.' } }), noteBody({ source_id: 'earlier-b' })] }),
    });
    expect(first.status).toBe(202);

    const documents = Array.from({ length: 1000 }, (_, i) =>
      noteBody({ source_id: `import-${i}`, content: { data: `Imported note ${i} about the garden, the kitchen and the plumber.` } }),
    );
    const finished: string[] = [];
    watchWrites();
    const batch = fetch(`${url}/v1/ingest:batch`, { method: 'POST', headers, body: JSON.stringify({ documents }) }).then(async (res) => {
      finished.push('batch');
      return { status: res.status, body: (await res.json()) as any };
    });
    await writing;
    const found = await fetch(`${url}/v1/search?q=budget&k=5`, { headers }).then(async (res) => {
      finished.push('search');
      return { status: res.status, body: (await res.json()) as any };
    });
    const stored = await batch;

    expect(finished).toEqual(['search', 'batch']);
    expect(found.status).toBe(200);
    expect(found.body.hits.map((h: any) => h.snippet).join(' ')).toMatch(/budget/i);
    // Nothing lost or doubled by writing the batch in turns.
    expect(stored.status).toBe(202);
    expect(stored.body).toMatchObject({ batch_status: 'completed', total_count: 1000, success_count: 1000, failure_count: 0 });
    const docs = await testDb.db.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'import-%'");
    expect(docs.rows[0].n).toBe(1000);
    const record = await testDb.db.query<{ status: string; success_count: number }>(
      'SELECT status, success_count FROM ingest_batches WHERE batch_id = $1',
      [stored.body.batch_id],
    );
    expect(record.rows).toEqual([{ status: 'completed', success_count: 1000 }]);
  });

});
