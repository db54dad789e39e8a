/**
 * The worker against a real database (PGlite by default, PostgreSQL with MEMEX_TEST_BACKEND=postgres):
 * spec §3 chunk and document transitions, dedup, failures, leases, re-index and the stored layout.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import type { Database } from '../../src/db/types.ts';
import { createUseLiteEmbedder } from '../../src/embedding/providers/use-lite.ts';
import { createHashEmbedder } from '../../src/embedding/providers/hash.ts';
import { ProviderUnavailableError, type Embedder } from '../../src/embedding/types.ts';
import { claimChunks, startEmbeddingWorker, sweepExpiredLeases, type EmbeddingWorker } from '../../src/embedding/worker.ts';
import {
  activeModel,
  DimensionMismatchError,
  InvalidEmbeddingError,
  ModelNotAcceptedError,
  storeEmbeddings,
  UnknownChunkError,
  vectorLiteral,
} from '../../src/embedding/store.ts';
import { embeddingStatus, reindexFailed, reindexModel } from '../../src/embedding/ops.ts';
import { chunkRow, docStatus, insertDocument, vectorCount, waitFor, watchClaims } from './fixtures.ts';

/** Wraps a real embedder and records every text it is asked to embed. */
function counting(inner: Embedder, name = inner.name) {
  const calls: string[] = [];
  const e: Embedder & { calls: string[] } = {
    name,
    get dimensions() { return inner.dimensions; },
    calls,
    async embed(texts, kind) {
      calls.push(...texts);
      return inner.embed(texts, kind);
    },
  };
  return e;
}

let t: TestDatabase;
let db: Database;
let useLite: Embedder;
let worker: EmbeddingWorker | undefined;

beforeAll(async () => {
  t = await createTestDatabase();
  db = t.db;
  useLite = await createUseLiteEmbedder();
});
afterAll(async () => {
  await worker?.stop();
  await t?.drop();
});
beforeEach(async () => {
  await worker?.stop();
  worker = undefined;
  await db.exec('TRUNCATE chunk_embeddings, chunk_documents, ingest_submissions, chunks, documents, embedding_models CASCADE');
});

async function drain(embedder: Embedder, opts: { batchSize?: number } = {}) {
  worker = startEmbeddingWorker({ db, embedder, pollMs: 20, batchSize: opts.batchSize ?? 8 });
  await waitFor(async () => {
    const s = await embeddingStatus(db);
    return s.chunks.pending + s.chunks.processing === 0;
  });
  await worker.stop();
  const stats = worker.stats;
  worker = undefined;
  return stats;
}

describe('notify()', () => {
  it('a notify() that lands between an empty claim and the sleep is not lost', async () => {
    // A poll interval of 10 minutes: only notify() can get this document embedded within the test. The
    // database wrapper inserts the document and calls notify() right after the worker's first claim came
    // back empty, before the worker goes to sleep: the moment when there is no sleeper to wake.
    let pending: { docId: string } | undefined;
    let w: EmbeddingWorker | undefined;
    const racing: Database = {
      kind: db.kind,
      async query(sql, params, opts) {
        const r = await db.query(sql, params, opts);
        if (!pending && /SET embedding_status = 'processing'/.test(sql) && r.rows.length === 0) {
          pending = await insertDocument(db, ['arrives while the worker decides to sleep']);
          w!.notify();
        }
        return r as any;
      },
      exec: (sql) => db.exec(sql),
      transaction: (fn) => db.transaction(fn),
      close: () => db.close(),
    };
    worker = w = startEmbeddingWorker({ db: racing, embedder: createHashEmbedder(64), pollMs: 600_000 });
    await waitFor(async () => pending !== undefined && (await docStatus(db, pending.docId)).doc === 'indexed', 20_000);
    expect(worker.stats.embedded).toBe(1);
  });
});

describe('chunk and document status (spec §3)', () => {
  it('pending -> embedded with a use-lite vector; the document becomes indexed and its submission completed', async () => {
    const d = await insertDocument(db, ['Lunch with Maria on Friday at noon.', 'Bring the quarterly budget report.']);
    expect((await chunkRow(db, d.chunkIds[0])).embedding_status).toBe('pending');
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'enriched', submission: 'cataloged' });
    await drain(useLite);
    for (const id of d.chunkIds) {
      const row = await chunkRow(db, id);
      expect(row.embedding_status).toBe('embedded');
      expect(row.embedding_model).toBe('use-lite');
      expect(row.lease_expires_at).toBeNull();
      expect(await vectorCount(db, id, 'use-lite')).toBe(1);
    }
    const dims = await db.query<{ d: number }>('SELECT vector_dims(embedding) AS d FROM chunk_embeddings LIMIT 1');
    expect(Number(dims.rows[0].d)).toBe(512);
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
    expect(await activeModel(db)).toEqual({ model: 'use-lite', dimensions: 512 });
  });

  it('a document is not indexed while one of its chunks is still pending', async () => {
    const d = await insertDocument(db, ['first part of the note', 'second part of the note']);
    const e = createHashEmbedder(64);
    await storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: e.name, vector: (await e.embed(['first part of the note']))[0] }]);
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'enriched', submission: 'cataloged' });
    await drain(e);
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  });

  it('empty or whitespace text -> embedded with no vector and no model', async () => {
    const d = await insertDocument(db, ['   \n\t ', 'Real words here.']);
    const e = counting(createHashEmbedder(64));
    const stats = await drain(e);
    const empty = await chunkRow(db, d.chunkIds[0]);
    expect(empty.embedding_status).toBe('embedded');
    expect(empty.embedding_model).toBeNull();
    expect(await vectorCount(db, d.chunkIds[0])).toBe(0);
    expect(e.calls).toEqual(['Real words here.']);
    expect(stats.empty).toBe(1);
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  });

  it('a provider that throws on one text: that chunk fails with the error recorded, its batch-mates are embedded, no retry', async () => {
    const inner = createHashEmbedder(64);
    const calls: string[][] = [];
    const flaky: Embedder = {
      name: inner.name,
      dimensions: 64,
      async embed(texts) {
        calls.push(texts);
        if (texts.some((x) => x.includes('POISON'))) throw new Error('model rejected input: POISON token');
        return inner.embed(texts);
      },
    };
    const d = await insertDocument(db, ['good one', 'this has POISON in it', 'good two']);
    const stats = await drain(flaky);
    const bad = await chunkRow(db, d.chunkIds[1]);
    expect(bad.embedding_status).toBe('failed');
    expect(bad.embedding_error).toContain('POISON token');
    expect((await chunkRow(db, d.chunkIds[0])).embedding_status).toBe('embedded');
    expect((await chunkRow(db, d.chunkIds[2])).embedding_status).toBe('embedded');
    expect(stats.failed).toBe(1);
    // The document cannot be indexed with a failed chunk: it is `failed` (spec §3, a fatal failure), the error kept
    // on it; nothing picks the failed chunk up again.
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'failed', submission: 'cataloged' });
    const details = await db.query<{ error_details: any }>('SELECT error_details FROM documents WHERE doc_id = $1', [d.docId]);
    expect(details.rows[0].error_details.embedding_error).toContain('POISON token');
    const before = calls.length;
    const watched = watchClaims(db);
    worker = startEmbeddingWorker({ db: watched.db, embedder: flaky, pollMs: 20 });
    // Twice round the worker's loop (lease sweep, claim, sleep) without finding anything it may take.
    await waitFor(async () => watched.emptyClaims() >= 2);
    await worker.stop();
    worker = undefined;
    expect(calls.length).toBe(before);
    // Operator reset: failed -> pending, then a healthy model finishes the document.
    expect(await reindexFailed(db)).toBe(1);
    expect((await chunkRow(db, d.chunkIds[1])).embedding_status).toBe('pending');
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'enriched', submission: 'cataloged' });
    await drain(inner);
    expect((await chunkRow(db, d.chunkIds[1])).embedding_error).toBeNull();
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  });

  it('an unreachable provider returns chunks to pending instead of failing them', async () => {
    const down: Embedder = {
      name: 'hash-64',
      dimensions: 64,
      async embed() { throw new ProviderUnavailableError('http://127.0.0.1:9/api/embed unreachable: connect ECONNREFUSED'); },
    };
    const d = await insertDocument(db, ['alpha', 'beta']);
    worker = startEmbeddingWorker({ db, embedder: down, pollMs: 20 });
    await waitFor(async () => worker!.stats.released >= 2);
    await worker.stop();
    expect(worker.stats.failed).toBe(0);
    worker = undefined;
    for (const id of d.chunkIds) expect((await chunkRow(db, id)).embedding_status).toBe('pending');
  });

  it('an expired lease (crashed worker) goes back to pending and is then embedded', async () => {
    const d = await insertDocument(db, ['claimed by a worker that died']);
    const claimed = await claimChunks(db, 10, 3600);
    expect(claimed.map((c) => c.chunk_id)).toEqual(d.chunkIds);
    expect((await chunkRow(db, d.chunkIds[0])).embedding_status).toBe('processing');
    expect(await sweepExpiredLeases(db)).toBe(0); // lease still valid
    expect(await claimChunks(db, 10, 3600)).toEqual([]); // and not claimable by anyone else
    // The worker died; time passes beyond its lease.
    await db.query("UPDATE chunks SET lease_expires_at = now() - interval '1 second' WHERE chunk_id = $1", [d.chunkIds[0]]);
    expect((await embeddingStatus(db)).expiredLeases).toBe(1);
    await drain(createHashEmbedder(64)); // the worker's own sweep returns it, then embeds it
    expect((await chunkRow(db, d.chunkIds[0])).embedding_status).toBe('embedded');
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  });
});

describe('never embed twice', () => {
  it('the same text ingested twice calls the model once (chunk shared by text hash)', async () => {
    const e = counting(useLite);
    const text = 'Flight AB123 to Lisbon departs at 07:40 from gate 12.';
    const d1 = await insertDocument(db, [text]);
    await drain(e);
    const d2 = await insertDocument(db, [text, 'A second, new paragraph.']);
    expect(d2.chunkIds[0]).toBe(d1.chunkIds[0]);
    await drain(e);
    expect(e.calls.filter((c) => c === text)).toHaveLength(1);
    expect(e.calls).toHaveLength(2);
    expect(await docStatus(db, d2.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  });

  it('a chunk reset to pending (re-chunk, manual reset) reuses its stored vector without a model call', async () => {
    const e = counting(useLite);
    const d = await insertDocument(db, ['Pick up the dry cleaning before six.']);
    await drain(e);
    await db.query("UPDATE chunks SET embedding_status = 'pending' WHERE chunk_id = $1", [d.chunkIds[0]]);
    const stats = await drain(e);
    expect(e.calls).toHaveLength(1);
    expect(stats.reused).toBe(1);
    expect((await chunkRow(db, d.chunkIds[0])).embedding_status).toBe('embedded');
  });
});

describe('storeEmbeddings (POST /v1/catalog/embeddings)', () => {
  it('rejects unknown chunks, wrong dimensions, bad vectors and a model not in use, with typed errors', async () => {
    const d = await insertDocument(db, ['some text']);
    const v = new Array(8).fill(0.25);
    await expect(storeEmbeddings(db, [{ chunk_id: '00000000-0000-4000-8000-000000000000', model: 'm8', vector: v }]))
      .rejects.toMatchObject({ name: 'UnknownChunkError', status: 404 });
    await expect(storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: 'm8', vector: v, dimensions: 7 }]))
      .rejects.toBeInstanceOf(DimensionMismatchError);
    await expect(storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: 'm8', vector: [1, NaN] }]))
      .rejects.toBeInstanceOf(InvalidEmbeddingError);
    await expect(storeEmbeddings(db, [{ chunk_id: 'not-a-uuid', model: 'm8', vector: v }])).rejects.toMatchObject({ status: 422 });
    expect((await chunkRow(db, d.chunkIds[0])).embedding_status).toBe('pending');
    await storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: 'm8', vector: v }]);
    // The model's dimension is fixed by its first vector.
    await expect(storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: 'm8', vector: [1, 2, 3] }]))
      .rejects.toMatchObject({ name: 'DimensionMismatchError', status: 400 });
    await expect(storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: 'other-model', vector: v }]))
      .rejects.toBeInstanceOf(ModelNotAcceptedError);
    expect(UnknownChunkError).toBeDefined();
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  });

  it('the documented nearest-neighbour query finds the paraphrase first', async () => {
    const texts = [
      'Steps to change your account password',
      'The weather in Paris is sunny today',
      'Recipe for a quick tomato pasta sauce',
      'Quarterly revenue grew by twelve percent',
    ];
    await insertDocument(db, texts);
    await drain(useLite);
    const m = (await activeModel(db))!;
    const [q] = await useLite.embed(['How do I reset my password?'], 'query');
    const r = await db.query<{ text: string; distance: number }>(
      `SELECT c.text, e.embedding::vector(${m.dimensions}) <=> $1::vector(${m.dimensions}) AS distance
         FROM chunk_embeddings e JOIN chunks c ON c.chunk_id = e.chunk_id
        WHERE e.model = $2
        ORDER BY e.embedding::vector(${m.dimensions}) <=> $1::vector(${m.dimensions}) LIMIT 3`,
      [vectorLiteral(q), m.model],
    );
    expect(r.rows[0].text).toBe(texts[0]);
    const idx = await db.query<{ indexdef: string }>("SELECT indexdef FROM pg_indexes WHERE tablename = 'chunk_embeddings' AND indexdef ILIKE '%hnsw%' AND indexdef LIKE '%use-lite%'");
    expect(idx.rows).toHaveLength(1);
    expect(idx.rows[0].indexdef).toMatch(/vector\(512\)/);
  });
});

describe('re-index with a new model', () => {
  it('old vectors stay active until every chunk has a new vector, then search switches', async () => {
    const d = await insertDocument(db, ['one note about invoices', 'another about holidays', '  ']);
    await drain(useLite);
    expect((await activeModel(db))?.model).toBe('use-lite');
    const next = counting(createHashEmbedder(32));
    const res = await reindexModel(db, next.name);
    expect(res.queued).toBe(2); // the empty chunk needs no vector
    // Mid-way: still the old model, old vectors intact, documents still indexed.
    expect((await activeModel(db))?.model).toBe('use-lite');
    expect(await vectorCount(db, d.chunkIds[0], 'use-lite')).toBe(1);
    expect(await docStatus(db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
    // The old model's worker stops taking work during the re-index.
    await expect(storeEmbeddings(db, [{ chunk_id: d.chunkIds[0], model: 'use-lite', vector: (await useLite.embed(['x']))[0] }]))
      .rejects.toBeInstanceOf(ModelNotAcceptedError);
    // The running worker promotes the new model once it finds the queue empty.
    worker = startEmbeddingWorker({ db, embedder: next, pollMs: 20, batchSize: 1 });
    await waitFor(async () => (await activeModel(db))?.model === 'hash-32');
    await worker.stop();
    worker = undefined;
    expect(next.calls).toHaveLength(2);
    expect(await activeModel(db)).toEqual({ model: 'hash-32', dimensions: 32 });
    const s = await embeddingStatus(db);
    expect(s.models.map((m) => [m.model, m.state])).toEqual([['use-lite', 'retired'], ['hash-32', 'active']]);
    expect(s.chunks).toMatchObject({ embedded: 3, pending: 0, failed: 0 });
    await expect(reindexModel(db, 'hash-32')).rejects.toThrow(/already the active/);
  });
});

describe('embeddingStatus', () => {
  it('counts per status, queue age and throughput match the database', async () => {
    await insertDocument(db, ['a', 'b', 'c']);
    let s = await embeddingStatus(db);
    expect(s.chunks).toEqual({ pending: 3, processing: 0, embedded: 0, failed: 0, total: 3 });
    expect(s.queueAgeSeconds).toBeGreaterThanOrEqual(0);
    expect(s.documents.enriched).toBe(1);
    await drain(createHashEmbedder(16));
    s = await embeddingStatus(db);
    expect(s.chunks).toMatchObject({ pending: 0, embedded: 3 });
    expect(s.throughput.lastMinute).toBeCloseTo(3 / 60, 5);
    expect(s.queueAgeSeconds).toBe(0);
    expect(s.documents).toEqual({ enriched: 0, indexed: 1 });
  });
});
