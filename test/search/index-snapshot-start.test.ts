/**
 * The lexical index kept on disk between starts (src/search/index-snapshot.ts, index-sync.ts), as a
 * user of GET /v1/search notices it, on the active backend: a restart answers exactly as before
 * from the snapshot; documents added, re-versioned and deleted while the gateway was down are
 * found (or not) after its start; a damaged snapshot, one older than the pruned change log or one
 * of another database is rebuilt from the database, never used; a snapshot is written at the
 * clean stop and after enough changes, not for a few; a forget deletes it. The background poll is
 * off (indexPollMs 0): every search catches up itself.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/index.ts';
import type { SnapshotEvent } from '../../src/search/index-sync.ts';
import { PRUNED_KEY } from '../../src/search/index-sync.ts';
import type { SearchConfig } from '../../src/search/config.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { doc, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const QUERIES = [
  q({ q: 'harbour' }),
  q({ q: 'harbour inspection', k: 3 }),
  q({ q: 'gardening tomatoes' }),
  q({ q: 'quarterly budget', source_type: 'email' }),
  q({ q: 'meeting' }),
  q({ q: 'meeting', person: 'ana@example.com' }),
  q({ q: 'report', has_attachments: true }),
];

/** What a user sees of an answer (the timing fields aside). */
const answer = (res: { statusCode: number; json: () => any }) => {
  expect(res.statusCode).toBe(200);
  const b = res.json();
  return { hits: b.hits.map((h: any) => [h.document_id, h.chunk_id, h.score]), total: b.total, facets: b.facets };
};

describe(`the search index on disk (${backend})`, () => {
  let testDb: TestDatabase;
  let dir: string;
  let file: string;
  let events: SnapshotEvent[] = [];
  let g: SearchGateway | null = null;

  const start = async (config: Partial<SearchConfig> = {}, extra: Pick<Parameters<typeof startSearchGateway>[0] & {}, 'quiet' | 'snapshotMaxDeferMs'> = {}) => {
    events = [];
    g = await startSearchGateway({
      testDb,
      config: { indexPollMs: 0, ...config },
      indexSnapshotFile: file,
      onSnapshot: (e) => events.push(e),
      ...extra,
    });
    // As `memex serve` does: the index is prepared at the start, not by the first search.
    await g.search.refreshIndex();
    return g;
  };
  const stop = async () => {
    await g?.stop();
    g = null;
  };
  const answers = async (gw: SearchGateway) => {
    const out = [];
    for (const u of QUERIES) out.push(answer(await gw.get(u)));
    return out;
  };
  const kinds = () => events.map((e) => e.kind);
  /** Another writer on the same database while the gateway is down (a second connection on PostgreSQL). */
  const elsewhere = async (fn: (w: SearchGateway) => Promise<void>) => {
    const other = backend === 'postgres' ? await openDatabase({ databaseUrl: testDb.url! }) : testDb.db;
    const w = await startSearchGateway({ testDb: { ...testDb, db: other }, config: { indexPollMs: 0 } });
    await fn(w);
    await w.stop();
    if (other !== testDb.db) await other.close();
  };

  beforeAll(async () => {
    testDb = await createTestDatabase();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-index-start-'));
    file = path.join(dir, 'search-index.snapshot');
  });
  afterAll(async () => {
    await stop();
    await testDb.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  let before: ReturnType<typeof answer>[];
  const ids: Record<string, string> = {};

  it('a restart reads the snapshot written at the stop and answers exactly as before', async () => {
    const gw = await start();
    const people = (email: string) => [{ identifier: email, identifier_type: 'email', role: 'sender', display_name: email.split('@')[0] }];
    ids.harbour = (await gw.ingest(doc('Harbour inspection report: barnacles on the hull', { source_id: 'harbour' }))).doc_id;
    ids.garden = (await gw.ingest(doc('Gardening notes: tomatoes need more sun'))).doc_id;
    for (let i = 0; i < 12; i++) {
      await gw.ingest(
        doc(`Meeting ${i} about the quarterly budget and the harbour report`, {
          source_type: i % 2 ? 'email' : 'note',
          people: people(i % 3 ? 'ana@example.com' : 'ben@example.com'),
          thread: i < 6 ? { external_id: 'budget-thread', title: 'Budget' } : undefined,
          metadata: i % 4 === 0 ? { attachments: [{ index: 0, kind: 'file', mime_type: 'application/pdf', size_bytes: 10 }] } : {},
          content_timestamp: `2025-0${1 + (i % 9)}-10T10:00:00Z`,
        }),
      );
    }
    before = await answers(gw);
    expect(before[0].total).toBeGreaterThan(10);
    // Written once after the first build (no documents then), and at the stop.
    await stop();
    expect(events).toEqual([expect.objectContaining({ kind: 'written', documents: 0 }), expect.objectContaining({ kind: 'written', documents: 14 })]);

    const again = await start();
    expect(await answers(again)).toEqual(before);
    expect(events).toEqual([expect.objectContaining({ kind: 'loaded', documents: 14, caughtUp: 0 })]);
    await stop();
  });

  it('documents added, re-versioned and deleted while it was down are in the index after the start', async () => {
    await elsewhere(async (w) => {
      ids.okapi = (await w.ingest(doc('Field notes on the okapi enclosure'))).doc_id;
      ids.harbour2 = (await w.ingest(doc('Harbour inspection report: propeller polished', { source_id: 'harbour' }))).doc_id;
      const del = await w.app.inject({ method: 'DELETE', url: `/v1/catalog/documents/${ids.garden}`, headers: { authorization: `Bearer ${(await import('../helpers/gateway.ts')).TEST_TOKEN}` } });
      expect(del.statusCode).toBe(202);
    });
    const gw = await start();
    const found = async (word: string) => (await gw.get(q({ q: word }))).json().hits.map((h: any) => h.document_id);
    expect(await found('okapi')).toEqual([ids.okapi]);
    expect(await found('propeller')).toEqual([ids.harbour2]);
    expect(await found('barnacles')).toEqual([]);
    expect(await found('tomatoes')).toEqual([]);
    expect(events[0]).toMatchObject({ kind: 'loaded', documents: 14 });
    expect((events[0] as any).caughtUp).toBeGreaterThanOrEqual(3);
    before = await answers(gw);
    await stop();
  });

  it('a snapshot with a flipped byte, or cut short, is rebuilt from the database, with the same answers', async () => {
    for (const damage of [
      (b: Buffer) => {
        b[Math.floor(b.length / 2)] ^= 0x01;
        return b;
      },
      (b: Buffer) => b.subarray(0, b.length - 100),
    ]) {
      fs.writeFileSync(file, damage(fs.readFileSync(file)));
      const gw = await start();
      expect(await answers(gw)).toEqual(before);
      expect(events[0]).toMatchObject({ kind: 'rejected' });
      expect(kinds()).not.toContain('loaded');
      await stop();
      // The rebuilt index was written again: the next start reads it.
      await start();
      expect(kinds()).toEqual(['loaded']);
      await stop();
    }
  });

  it('a snapshot older than the pruned change log, of another database, or newer than the database is not used', async () => {
    const setting = (key: string, value: string) =>
      testDb.db.query(
        `INSERT INTO system_settings (key, value) VALUES ($1, to_jsonb($2::text)) ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value`,
        [key, value],
      );
    await setting(PRUNED_KEY, '9000000000000');
    let gw = await start();
    expect(events[0]).toMatchObject({ kind: 'rejected', reason: expect.stringContaining('pruned') });
    expect(await answers(gw)).toEqual(before);
    await testDb.db.query('DELETE FROM system_settings WHERE key = $1', [PRUNED_KEY]);
    await stop();

    const instance = (await testDb.db.query<{ v: string }>(`SELECT value #>> '{}' AS v FROM system_settings WHERE key = 'instance_id'`)).rows[0].v;
    await setting('instance_id', '00000000-0000-4000-8000-00000000beef');
    gw = await start();
    expect(events[0]).toMatchObject({ kind: 'rejected', reason: expect.stringContaining('another database') });
    expect(await answers(gw)).toEqual(before);
    await stop();
    await setting('instance_id', instance);
    // Written at the stop for the other instance id: rejected once more, then current again.
    await start();
    await stop();

    // A backup older than the snapshot restored in place: the change log's sequence is behind it.
    const seq = (await testDb.db.query<{ v: string }>('SELECT last_value::text AS v FROM search_changes_seq_seq')).rows[0].v;
    await testDb.db.query(`SELECT setval('search_changes_seq_seq', 1)`);
    gw = await start();
    expect(events[0]).toMatchObject({ kind: 'rejected', reason: expect.stringContaining('newer than the database') });
    expect(await answers(gw)).toEqual(before);
    await stop();
    await testDb.db.query(`SELECT setval('search_changes_seq_seq', $1::bigint)`, [seq]);
    await start();
    await stop();
    await start();
    expect(kinds()).toEqual(['loaded']);
    await stop();
  });

  it('a few changes write no snapshot until the stop; enough changes write one while serving', async () => {
    let gw = await start();
    const written = fs.readFileSync(file);
    await gw.ingest(doc('Notes on the pangolin shelter'));
    await gw.ingest(doc('Notes on the axolotl tank'));
    expect((await gw.get(q({ q: 'pangolin' }))).json().total).toBe(1);
    await new Promise((r) => setTimeout(r, 200));
    expect(fs.readFileSync(file).equals(written)).toBe(true);
    expect(kinds()).toEqual(['loaded']);
    await stop();
    expect(kinds()).toEqual(['loaded', 'written']);

    gw = await start({ indexSnapshotChanges: 3 });
    for (const w of ['quokka', 'narwhal', 'tapir']) await gw.ingest(doc(`Notes on the ${w}`));
    expect((await gw.get(q({ q: 'tapir' }))).json().total).toBe(1);
    for (let i = 0; i < 100 && !kinds().includes('written'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(kinds()).toEqual(['loaded', 'written']);
    await stop();
  });

  it('a due write waits while someone is searching: written once quiet, or after the longest wait', async () => {
    const until = async (kind: SnapshotEvent['kind']) => {
      for (let i = 0; i < 100 && !kinds().includes(kind); i++) await new Promise((r) => setTimeout(r, 50));
    };
    let quiet = false;
    let gw = await start({ indexSnapshotChanges: 2 }, { quiet: () => quiet });
    for (const w of ['binturong', 'aardwolf']) await gw.ingest(doc(`Notes on the ${w}`));
    expect((await gw.get(q({ q: 'binturong' }))).json().total).toBe(1);
    await new Promise((r) => setTimeout(r, 300));
    expect(kinds()).toEqual(['loaded']);
    quiet = true;
    expect((await gw.get(q({ q: 'aardwolf' }))).json().total).toBe(1);
    await until('written');
    expect(kinds()).toEqual(['loaded', 'written']);
    await stop();

    // Searched without a pause: the write waits at most snapshotMaxDeferMs.
    gw = await start({ indexSnapshotChanges: 2 }, { quiet: () => false, snapshotMaxDeferMs: 400 });
    for (const w of ['caracal', 'fossa']) await gw.ingest(doc(`Notes on the ${w}`));
    expect((await gw.get(q({ q: 'fossa' }))).json().total).toBe(1);
    expect(kinds()).toEqual(['loaded']);
    await new Promise((r) => setTimeout(r, 500));
    expect((await gw.get(q({ q: 'caracal' }))).json().total).toBe(1);
    await until('written');
    expect(kinds()).toEqual(['loaded', 'written']);
    await stop();
  });

  it('SEARCH_INDEX_SNAPSHOT=false: none read, none written', async () => {
    fs.rmSync(file);
    const gw = await start({ indexSnapshot: false });
    expect((await gw.get(q({ q: 'tapir' }))).json().total).toBe(1);
    await stop();
    expect(fs.existsSync(file)).toBe(false);
    expect(events).toEqual([]);
  });

  it('a forget deletes the snapshot; the one written next holds nothing of what was forgotten', async () => {
    const gw = await start();
    const secret = await gw.ingest(doc('The zanzibarquux recipe is secret'));
    expect((await gw.get(q({ q: 'zanzibarquux' }))).json().total).toBe(1);
    await stop();
    expect(fs.readFileSync(file).includes('zanzibarquux')).toBe(true);
    const again = await start();
    expect((await again.get(q({ q: 'zanzibarquux' }))).json().total).toBe(1);
    const res = await again.post('/v1/forget', { doc_id: secret.doc_id });
    expect(res.statusCode).toBe(200);
    expect((await again.get(q({ q: 'zanzibarquux' }))).json().total).toBe(0);
    for (let i = 0; i < 100 && !kinds().includes('written'); i++) await new Promise((r) => setTimeout(r, 50));
    expect(kinds()).toContain('written');
    expect(fs.readFileSync(file).includes('zanzibarquux')).toBe(false);
    expect(fs.readFileSync(file).includes(secret.doc_id)).toBe(false);
    await stop();
  });
});
