/**
 * The vectors in memory that filtered searches rank against (src/search/vector-memory.ts): the same
 * documents and order as the database's exact cosine, similarities within the 8-bit error, chunks
 * embedded later found on demand, a bound on memory that changes no answer, and nothing kept after
 * clear(). Both backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import { ABSENT_RETRY_MS, decodeVector, VectorMemory } from '../../src/search/vector-memory.ts';
import { vectorLiteral } from '../../src/search/vector.ts';
import { ConceptEmbedder, doc, indexVectors, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const MODEL = 'test-random-48';
/** The 8-bit copies' cosine error bound asserted (measured on USE-lite's 512 dimensions: at most 0.0012). */
const TOLERANCE = 0.005;
const DIMS = 48;

/** Seeded unit-free vectors (not normalised: the memory must compute cosines, not dot products). */
function rng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s ^ (s >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0;
    return s / 2 ** 32;
  };
}
const rnd = rng(7);
const randomVector = () => Array.from({ length: DIMS }, () => (rnd() - 0.5) * (0.5 + rnd() * 3));

let g: SearchGateway;
/** Every stored chunk with its document. */
const passages: { chunkIds: string[]; docIds: string[] } = { chunkIds: [], docIds: [] };
let unembedded: { chunk: string; doc: string };

async function store(chunkIds: string[]) {
  await storeEmbeddings(g.db, chunkIds.map((chunk_id) => ({ chunk_id, model: MODEL, vector: randomVector() })));
}

/** The database's exact answer: best chunk per document by cosine, over the given chunks. */
async function exactInDatabase(query: number[], chunkIds: string[], k: number) {
  const r = await g.db.query<{ chunk_id: string; similarity: number }>(
    `SELECT chunk_id::text AS chunk_id, 1 - (embedding <=> $1::vector) AS similarity FROM chunk_embeddings
      WHERE model = $2 AND chunk_id = ANY($3::uuid[])`,
    [vectorLiteral(query), MODEL, chunkIds],
  );
  const docOf = new Map(passages.chunkIds.map((c, i) => [c, passages.docIds[i]]));
  const best = new Map<string, { doc_id: string; similarity: number }>();
  for (const row of r.rows) {
    const doc_id = docOf.get(row.chunk_id)!;
    const s = Number(row.similarity);
    if ((best.get(doc_id)?.similarity ?? -2) < s) best.set(doc_id, { doc_id, similarity: s });
  }
  return [...best.values()].sort((a, b) => b.similarity - a.similarity).slice(0, k);
}

beforeAll(async () => {
  g = await startSearchGateway();
  // Documents of one to three chunks (long texts are chunked), 40 of them.
  for (let i = 0; i < 40; i++) {
    const words = Array.from({ length: 60 + (i % 3) * 260 }, (_, j) => `d${i}w${j % 97}`).join(' ');
    const r = await g.ingest(doc(`${words} number ${i}.`));
    const rows = await g.db.query<{ chunk_id: string }>('SELECT chunk_id::text AS chunk_id FROM chunk_documents WHERE doc_id = $1', [r.doc_id]);
    for (const { chunk_id } of rows.rows) {
      passages.chunkIds.push(chunk_id);
      passages.docIds.push(r.doc_id);
    }
  }
  // The last chunk stays without a vector for now.
  unembedded = { chunk: passages.chunkIds[passages.chunkIds.length - 1], doc: passages.docIds[passages.docIds.length - 1] };
  await store(passages.chunkIds.slice(0, -1));
}, 60_000);
afterAll(async () => g?.close());

describe('VectorMemory', () => {
  it("decodes pgvector's binary form to the stored floats", async () => {
    const r = await g.db.query<{ v: Uint8Array }>(`SELECT vector_send('[1.5,-2,0.25,1e-7]'::vector) AS v`);
    expect([...decodeVector(r.rows[0].v)]).toEqual([1.5, -2, 0.25, Math.fround(1e-7)]);
  });

  it('ranks documents as the database does, with cosines within the 8-bit error', async () => {
    const memory = new VectorMemory(g.db, MODEL, { maxBytes: 1 << 20 });
    await memory.warm();
    expect(memory.size.vectors).toBe(passages.chunkIds.length - 1);
    const subset = { chunkIds: passages.chunkIds.filter((_, i) => i % 3 !== 1), docIds: passages.docIds.filter((_, i) => i % 3 !== 1) };
    let compared = 0;
    let agreed = 0;
    for (let q = 0; q < 20; q++) {
      const query = randomVector();
      const got = await memory.nearest(query, subset, 8);
      const all = await exactInDatabase(query, subset.chunkIds, 1000);
      const exact = new Map(all.map((c) => [c.doc_id, c.similarity]));
      // Each similarity is its document's exact best cosine, to the 8-bit error; the order and the
      // cut at k are the exact ones except between documents that close.
      for (const c of got) expect(Math.abs(c.similarity - exact.get(c.doc_id)!)).toBeLessThan(TOLERANCE);
      for (let i = 1; i < got.length; i++) expect(exact.get(got[i - 1].doc_id)!).toBeGreaterThan(exact.get(got[i].doc_id)! - 2 * TOLERANCE);
      const kth = exact.get(got[got.length - 1].doc_id)!;
      for (const c of all.slice(0, 8)) if (!got.some((x) => x.doc_id === c.doc_id)) expect(c.similarity).toBeLessThan(kth + 2 * TOLERANCE);
      agreed += got.filter((c, i) => c.doc_id === all[i].doc_id).length;
      // Every candidate names a chunk of its document from the allowed set.
      for (const c of got) expect(subset.chunkIds.some((id, i) => id === c.chunk_id && subset.docIds[i] === c.doc_id)).toBe(true);
      compared += got.length;
    }
    expect(compared).toBe(20 * 8);
    // Near-ties aside, the very same order.
    expect(agreed).toBeGreaterThan(0.9 * compared);
  });

  it('reads what it does not hold yet; a chunk without a vector is asked for again after a while', async () => {
    let now = 1_000_000;
    const memory = new VectorMemory(g.db, MODEL, { maxBytes: 1 << 20, now: () => now });
    const only = { chunkIds: [unembedded.chunk], docIds: [unembedded.doc] };
    const query = randomVector();
    expect(await memory.nearest(query, only, 5)).toEqual([]);
    await store([unembedded.chunk]);
    // Remembered as absent: not read again at once.
    expect(await memory.nearest(query, only, 5)).toEqual([]);
    now += ABSENT_RETRY_MS;
    const found = await memory.nearest(query, only, 5);
    expect(found.map((c) => c.doc_id)).toEqual([unembedded.doc]);
    expect(found[0].similarity).toBeCloseTo((await exactInDatabase(query, only.chunkIds, 1))[0].similarity, 2);
    expect(memory.size.vectors).toBe(1);
  });

  it('holds no more than its bound, and still answers exactly for what it could not keep', async () => {
    const memory = new VectorMemory(g.db, MODEL, { maxBytes: DIMS * 10 });
    await memory.warm();
    expect(memory.size.vectors).toBe(10);
    expect(memory.size.bytes).toBeLessThanOrEqual(DIMS * 10);
    const query = randomVector();
    const got = await memory.nearest(query, passages, 6);
    const want = await exactInDatabase(query, passages.chunkIds, 6);
    expect(got.map((c) => c.doc_id).sort()).toEqual(want.map((c) => c.doc_id).sort());
    expect(memory.size.vectors).toBe(10);
  });

  it('a chunk two documents share counts for both', async () => {
    const a = await g.ingest(doc('the same words in two notes about lighthouses'));
    const b = await g.ingest(doc('the same words in two notes about lighthouses'));
    const [{ chunk_id }] = (await g.db.query<{ chunk_id: string }>('SELECT chunk_id::text AS chunk_id FROM chunk_documents WHERE doc_id = $1', [a.doc_id])).rows;
    await store([chunk_id]);
    const memory = new VectorMemory(g.db, MODEL, { maxBytes: 1 << 20 });
    const got = await memory.nearest(randomVector(), { chunkIds: [chunk_id, chunk_id], docIds: [a.doc_id, b.doc_id] }, 5);
    expect(got.map((c) => c.doc_id).sort()).toEqual([a.doc_id, b.doc_id].sort());
    expect(got[0].similarity).toBe(got[1].similarity);
  });

  it('clear() drops every copy; the next warm() loads again', async () => {
    const memory = new VectorMemory(g.db, MODEL, { maxBytes: 1 << 20 });
    await memory.warm();
    expect(memory.size.vectors).toBeGreaterThan(0);
    memory.clear();
    expect(memory.size).toEqual({ vectors: 0, bytes: 0 });
    await memory.warm();
    expect(memory.size.vectors).toBe(passages.chunkIds.length + 1);
  });
});

describe('vectors in memory and forget', () => {
  it('a forgotten document leaves no vector in memory; the others are loaded again', async () => {
    const embedder = new ConceptEmbedder();
    const h = await startSearchGateway({ embedder });
    try {
      const keep = await h.ingest(doc('automobile garage', { source_type: 'email' }));
      const gone = await h.ingest(doc('sedan tyres', { source_type: 'email' }));
      await indexVectors(h.db, embedder);
      // A filtered search uses the vectors in memory, which load in the background.
      const body = (await h.get(q({ q: 'car', source_type: 'email' }))).json();
      expect(body.legs.vector).toBe(true);
      expect(body.hits.map((x: any) => x.document_id).sort()).toEqual([keep.doc_id, gone.doc_id].sort());
      await eventually(() => h.search.memoryStats().vectors === 2);
      const res = await h.post('/v1/forget', { doc_id: gone.doc_id });
      expect(res.statusCode).toBe(200);
      expect(h.search.memoryStats().vectors).toBeLessThan(2);
      await eventually(() => h.search.memoryStats().vectors === 1);
      const after = (await h.get(q({ q: 'car', source_type: 'email' }))).json();
      expect(after.hits.map((x: any) => x.document_id)).toEqual([keep.doc_id]);
    } finally {
      await h.close();
    }
  });
});

async function eventually(check: () => boolean, ms = 10_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}
