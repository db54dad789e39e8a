/**
 * The 8-bit vector copies kept on disk between starts (src/search/vector-memory.ts, issue 34): a
 * start reads them from their snapshot and then only the vectors stored since (new chunks, and a
 * chunk embedded again), and ranks exactly as copies read from the database; a damaged snapshot, or
 * one of another model, is not used; clear() (a forget) deletes it. Through the gateway: a restart
 * gives the same hybrid answers from both snapshots, and embeddings stored while it was down count.
 * Both backends.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import { VectorMemory, type VectorSnapshotEvent } from '../../src/search/vector-memory.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { ConceptEmbedder, doc, indexVectors, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const MODEL = 'test-random-32';
const DIMS = 32;

function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}
const rnd = rng(11);
const randomVector = () => Array.from({ length: DIMS }, () => (rnd() - 0.5) * (0.5 + rnd() * 3));

describe(`vector copies on disk (${backend})`, () => {
  let g: SearchGateway;
  let dir: string;
  let file: string;
  const passages: { chunkIds: string[]; docIds: string[] } = { chunkIds: [], docIds: [] };

  const addDocs = async (n: number) => {
    const added: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await g.ingest(doc(`vector snapshot document ${passages.docIds.length} ${Math.random()}`));
      const rows = await g.db.query<{ chunk_id: string }>('SELECT chunk_id::text AS chunk_id FROM chunk_documents WHERE doc_id = $1', [r.doc_id]);
      for (const { chunk_id } of rows.rows) {
        passages.chunkIds.push(chunk_id);
        passages.docIds.push(r.doc_id);
        added.push(chunk_id);
      }
    }
    return added;
  };
  const store = (chunkIds: string[]) => storeEmbeddings(g.db, chunkIds.map((chunk_id) => ({ chunk_id, model: MODEL, vector: randomVector() })));
  const memoryOf = (events: VectorSnapshotEvent[], model = MODEL) =>
    new VectorMemory(g.db, model, { maxBytes: 1 << 20, snapshot: { file, onEvent: (e) => events.push(e) } });
  /** Answers for fixed queries over every passage: documents, chunks and similarities. */
  const answers = async (m: VectorMemory) => {
    const r = rng(5);
    const out = [];
    for (let i = 0; i < 8; i++) out.push(await m.nearest(Array.from({ length: DIMS }, () => r() - 0.5), passages, 10));
    return out;
  };
  /** The same from copies read from the database (no snapshot). */
  const fromDatabase = async () => {
    const m = new VectorMemory(g.db, MODEL, { maxBytes: 1 << 20 });
    await m.warm();
    return { answers: await answers(m), vectors: m.size.vectors };
  };

  beforeAll(async () => {
    g = await startSearchGateway();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-vector-snapshot-'));
    file = path.join(dir, 'search-vectors.snapshot');
    await store(await addDocs(30));
  }, 60_000);
  afterAll(async () => {
    await g?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('written once complete, read back with the vectors stored since; the same answers as from the database', async () => {
    const events: VectorSnapshotEvent[] = [];
    const first = memoryOf(events);
    // Nothing to write before the copies are complete.
    await first.saveSnapshot();
    expect(fs.existsSync(file)).toBe(false);
    await first.warm();
    await first.saveSnapshot();
    expect(events).toEqual([expect.objectContaining({ kind: 'written', vectors: 30 })]);
    const before = await answers(first);

    // While it was "down": new chunks embedded, and an old chunk embedded again (another vector).
    await store(await addDocs(4));
    await store([passages.chunkIds[0]]);

    const events2: VectorSnapshotEvent[] = [];
    const second = memoryOf(events2);
    await second.warm();
    expect(events2).toEqual([expect.objectContaining({ kind: 'loaded', vectors: 34 })]);
    expect((events2[0] as { caughtUp: number }).caughtUp).toBeGreaterThanOrEqual(5);
    expect(second.size.vectors).toBe(34);
    const want = await fromDatabase();
    expect(want.vectors).toBe(34);
    const got = await answers(second);
    expect(got).toEqual(want.answers);
    // The re-embedded chunk's new vector is the one used: the answers moved.
    expect(got).not.toEqual(before);

    // Written again (it changed), and read again with nothing to catch up.
    await second.saveSnapshot();
    expect(events2.map((e) => e.kind)).toEqual(['loaded', 'written']);
    const events3: VectorSnapshotEvent[] = [];
    const third = memoryOf(events3);
    await third.warm();
    expect(events3).toEqual([expect.objectContaining({ kind: 'loaded', vectors: 34 })]);
    expect(await answers(third)).toEqual(want.answers);
  });

  it('a damaged snapshot, or one of another model, is not used: the copies are read from the database', async () => {
    const good = fs.readFileSync(file);
    const want = await fromDatabase();
    for (const damage of [(b: Buffer) => ((b[Math.floor(b.length / 2)] ^= 0x40), b), (b: Buffer) => b.subarray(0, b.length - 7)]) {
      fs.writeFileSync(file, damage(Buffer.from(good)));
      const events: VectorSnapshotEvent[] = [];
      const m = memoryOf(events);
      await m.warm();
      expect(events).toEqual([expect.objectContaining({ kind: 'rejected' })]);
      expect(m.size.vectors).toBe(want.vectors);
      expect(await answers(m)).toEqual(want.answers);
    }
    fs.writeFileSync(file, good);
    const events: VectorSnapshotEvent[] = [];
    const other = memoryOf(events, 'another-model');
    await other.warm();
    expect(events).toEqual([expect.objectContaining({ kind: 'rejected', reason: expect.stringContaining('model') })]);
    expect(other.size.vectors).toBe(0);
  });

  it('clear() (a forget) deletes the snapshot', async () => {
    const events: VectorSnapshotEvent[] = [];
    const m = memoryOf(events);
    await m.warm();
    expect(fs.existsSync(file)).toBe(true);
    m.clear();
    expect(fs.existsSync(file)).toBe(false);
    expect(m.size.vectors).toBe(0);
  });
});

describe(`hybrid answers after a restart from both snapshots (${backend})`, () => {
  let testDb: TestDatabase;
  let dir: string;
  const embedder = new ConceptEmbedder();
  let vectorEvents: VectorSnapshotEvent[] = [];
  let g: SearchGateway | null = null;

  const start = async () => {
    vectorEvents = [];
    g = await startSearchGateway({
      testDb,
      embedder,
      config: { indexPollMs: 0, vectorMinSimilarity: 0.2, vectorWeight: 0.5 },
      indexSnapshotFile: path.join(dir, 'search-index.snapshot'),
      vectorSnapshotFile: path.join(dir, 'search-vectors.snapshot'),
      onVectorSnapshot: (e) => vectorEvents.push(e),
    });
    await g.search.refreshIndex();
    return g;
  };
  /** Filtered hybrid searches (the filter sends the k-NN to the copies in memory). */
  const QUERIES = [
    q({ q: 'holiday', source_type: 'note' }),
    q({ q: 'garage trip', source_type: 'note' }),
    q({ q: 'vacation receipt', source_type: 'note', k: 3 }),
    q({ q: 'flights' }),
  ];
  const answers = async (gw: SearchGateway) => {
    const out = [];
    for (const u of QUERIES) {
      const b = (await gw.get(u)).json();
      out.push({ vector: b.legs.vector, hits: b.hits.map((h: any) => [h.document_id, h.chunk_id, h.score, h.scores]) });
    }
    return out;
  };
  /** Until the copies are complete (every stored vector held; with a snapshot, once it was read). */
  const warmed = async (gw: SearchGateway, snapshot = false) => {
    const r = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunk_embeddings WHERE model = $1', [embedder.name]);
    const done = () => gw.search.memoryStats().vectors >= r.rows[0].n && (!snapshot || vectorEvents.length > 0);
    for (let i = 0; i < 400 && !done(); i++) await new Promise((res) => setTimeout(res, 25));
    expect(gw.search.memoryStats().vectors).toBe(r.rows[0].n);
  };

  beforeAll(async () => {
    testDb = await createTestDatabase();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-hybrid-snapshot-'));
  });
  afterAll(async () => {
    await g?.stop();
    await testDb.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('answers exactly as before; an embedding stored while it was down is read at the start', async () => {
    let gw = await start();
    for (const t of ['Booked the vacation flights early', 'Receipt from the garage visit', 'Holiday plans for the coast', 'Quarterly budget meeting']) {
      await gw.ingest(doc(t));
    }
    await indexVectors(gw.db, embedder);
    // Both answers from complete copies: a chunk not copied yet is ranked from the database's float
    // vector, ~0.003 off its 8-bit copy (CI saw 0.378 against 0.375), which is not what is compared here.
    await answers(gw);
    await warmed(gw);
    const before = await answers(gw);
    expect(before.every((a) => a.vector === true)).toBe(true);
    await gw.stop();
    g = null;
    expect(vectorEvents).toEqual([expect.objectContaining({ kind: 'written', vectors: 4 })]);

    gw = await start();
    await answers(gw);
    await warmed(gw, true);
    expect(await answers(gw)).toEqual(before);
    // (Vectors stored in the minutes before the copies were complete are read again: a margin.)
    expect(vectorEvents[0]).toMatchObject({ kind: 'loaded', vectors: 4 });
    await gw.stop();

    // Written elsewhere while this gateway was down: a document and its vector.
    const w = await startSearchGateway({ testDb, embedder, config: { indexPollMs: 0 } });
    const trip = (await w.ingest(doc('Trip to the seaside in August'))).doc_id;
    await indexVectors(w.db, embedder);
    await w.stop();

    gw = await start();
    const b = (await gw.get(q({ q: 'holiday', source_type: 'note' }))).json();
    expect(b.legs.vector).toBe(true);
    await warmed(gw, true);
    expect(vectorEvents[0]).toMatchObject({ kind: 'loaded', vectors: 5 });
    expect((vectorEvents[0] as { caughtUp: number }).caughtUp).toBeGreaterThanOrEqual(1);
    expect(b.hits.map((h: any) => h.document_id)).toContain(trip);
    await gw.stop();
    g = null;
  });
});
