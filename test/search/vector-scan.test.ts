/**
 * The k-NN's index variants (VectorQuery.scan, measured by bench/search/run.ts --knn-cost): over the
 * same stored vectors, `halfvec` and `bit` (Hamming candidates re-ranked by exact cosine) answer
 * what the full-vector scan answers when the data is small enough for them to be exact, with the
 * exact cosine as the similarity. Both backends (PGlite's bundled pgvector has halfvec and
 * binary_quantize too).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { vectorCandidates, type VectorScan } from '../../src/search/vector.ts';
import { ConceptEmbedder, doc, indexVectors, startSearchGateway, type SearchGateway } from './helpers.ts';

let g: SearchGateway;
const embedder = new ConceptEmbedder();
const TEXTS = [
  'car repair at the garage on monday',
  'the automobile needs new tyres',
  'invoice for the garage work',
  'bill from the plumber',
  'holiday plans for the summer',
  'vacation photos from the beach',
  'quarterly report draft',
  'meeting notes about the budget',
  'sedan for sale, low mileage',
  'receipt for the train tickets',
  'trip to the mountains in july',
  'garden work on saturday',
  // One bit pattern ({car, garage}) for four documents and a closer vector with another pattern:
  // the Hamming order alone would pick a "… garage" document for "car car car car car garage".
  'car',
  'car garage',
  'automobile garage',
  'vehicle garage',
  'sedan garage',
];

beforeAll(async () => {
  g = await startSearchGateway({ embedder });
  for (const t of TEXTS) await g.ingest(doc(t));
  await indexVectors(g.db, embedder);
  const dims = embedder.dimensions;
  await g.db.exec(
    `CREATE INDEX test_scan_halfvec ON chunk_embeddings USING hnsw ((embedding::halfvec(${dims})) halfvec_cosine_ops) WHERE model = '${embedder.name}'`,
  );
  await g.db.exec(
    `CREATE INDEX test_scan_bit ON chunk_embeddings USING hnsw ((binary_quantize(embedding::vector(${dims}))::bit(${dims})) bit_hamming_ops) WHERE model = '${embedder.name}'`,
  );
}, 60_000);
afterAll(async () => g?.close());

describe('k-NN index variants', () => {
  const scans: VectorScan[] = ['vector', 'halfvec', 'bit'];
  for (const query of ['car garage', 'holiday trip', 'invoice receipt']) {
    it(`"${query}": halfvec and bit answer what the full-vector scan answers`, async () => {
      const answers = new Map<VectorScan, string[]>();
      for (const scan of scans) {
        const found = await vectorCandidates(g.db, { model: embedder.name, queryVector: embedder.vector(query), k: 3, filters: {}, scan });
        expect(found).toHaveLength(3);
        // Documents tied with the third's similarity may be any of them; the rest must be the same.
        const third = found[2].similarity.toFixed(5);
        answers.set(scan, found.map((c) => (c.similarity.toFixed(5) === third ? `tie:${third}` : `${c.doc_id}:${c.similarity.toFixed(5)}`)).sort());
      }
      expect(answers.get('halfvec')).toEqual(answers.get('vector'));
      expect(answers.get('bit')).toEqual(answers.get('vector'));
    });
  }

  it('the binary scan re-ranks its candidates by exact cosine', async () => {
    const [carDoc] = (await g.db.query<{ doc_id: string }>(
      `SELECT cd.doc_id FROM chunks c JOIN chunk_documents cd ON cd.chunk_id = c.chunk_id WHERE c.text = 'car'`,
    )).rows;
    const queryVector = embedder.vector('car car car car car garage');
    for (const scan of scans) {
      const [best] = await vectorCandidates(g.db, { model: embedder.name, queryVector, k: 1, filters: {}, scan });
      expect(best.doc_id, scan).toBe(carDoc.doc_id);
      expect(best.similarity).toBeCloseTo(5 / Math.sqrt(26), 4);
    }
  });
});

describe('filtered searches: the k-NN is exact over the chunks the filter allows (vectors in memory)', () => {
  let h: SearchGateway;
  const D: Record<string, string> = {};
  let threadId = '';
  const person = (identifier: string) => [{ identifier, identifier_type: 'email', role: 'sender', display_name: identifier }];

  beforeAll(async () => {
    h = await startSearchGateway({ embedder, config: { vectorMinSimilarity: 0.3, vectorWeight: 0.5 } });
    D.alice = (await h.ingest(doc('automobile sedan for the weekend', { source_type: 'email', people: person('alice@example.com') }))).doc_id;
    D.bob = (await h.ingest(doc('vehicle inspection reminder', { source_type: 'email', people: person('bob@example.com') }))).doc_id;
    for (const text of ['car wash on the corner', 'lunch plans for friday']) {
      const r = await h.ingest(doc(text, { source_type: 'chatapp', thread: { external_id: 'thread-cars', thread_type: 'group', is_group: true } }));
      if (text.startsWith('car')) D.thread = r.doc_id;
      threadId = r.thread_id;
    }
    for (let i = 0; i < 30; i++) await h.ingest(doc(`sedan number ${i} in the parking lot`));
    D.march = (await h.ingest(doc('the vehicle went to the garage', { content_timestamp: '2024-03-10T09:00:00Z' }))).doc_id;
    await indexVectors(h.db, embedder);
  }, 60_000);
  afterAll(async () => h?.close());

  const vectorHits = async (params: Record<string, string>) => {
    const body = (await h.get(`/v1/search?${new URLSearchParams({ k: '10', ...params })}`)).json();
    expect(body.legs).toMatchObject({ vector: true });
    return body.hits.filter((x: any) => x.sources.includes('vector')).map((x: any) => x.document_id);
  };

  it('a person filter finds that person\'s semantically near document, and only theirs', async () => {
    expect(await vectorHits({ q: 'car', person: 'alice@example.com' })).toEqual([D.alice]);
    expect(await vectorHits({ q: 'car', person: 'bob@example.com' })).toEqual([D.bob]);
    const nobody = (await h.get(`/v1/search?${new URLSearchParams({ q: 'car', person: 'nobody@example.com' })}`)).json();
    expect(nobody.hits).toEqual([]);
  });

  it('a thread filter finds the thread\'s semantically near document', async () => {
    expect(await vectorHits({ q: 'automobile', thread_id: threadId })).toEqual([D.thread]);
  });

  it('a date range (any filter) finds the semantically near documents of that period only', async () => {
    expect(await vectorHits({ q: 'sedan', start_date: '2024-03-01', end_date: '2024-03-31' })).toEqual([D.march]);
    const june = await vectorHits({ q: 'automobile', start_date: '2025-06-01', end_date: '2025-06-01' });
    expect(june).toContain(D.alice);
    expect(june).not.toContain(D.march);
  });
});
