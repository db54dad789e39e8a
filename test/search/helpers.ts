/**
 * Search test fixtures: a gateway with a chosen search service, a deterministic "concept"
 * embedder (words of one synonym group share a direction, so "automobile" is near "car" without
 * sharing a lexeme), and vectors written with SQL the way the embedding worker stores them.
 */
import type { FastifyInstance } from 'fastify';
import { Catalog } from '../../src/catalog/catalog.ts';
import type { Database } from '../../src/db/types.ts';
import type { SearchConfig } from '../../src/search/config.ts';
import { createSearch, type Search, type SearchDeps } from '../../src/search/search.ts';
import type { QueryEmbedder } from '../../src/search/types.ts';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { buildTestGateway, TEST_TOKEN, testConfig } from '../helpers/gateway.ts';

const SYNONYMS: string[][] = [
  ['car', 'automobile', 'vehicle', 'sedan'],
  ['invoice', 'bill', 'receipt'],
  ['holiday', 'vacation', 'trip'],
];

export class ConceptEmbedder implements QueryEmbedder {
  name = 'test-concepts';
  dimensions = 64;
  calls = 0;
  failing = false;

  async embed(texts: string[]): Promise<number[][]> {
    this.calls++;
    if (this.failing) throw new Error('embedding provider unreachable (test)');
    return texts.map((t) => this.vector(t));
  }

  vector(text: string): number[] {
    const v = new Array(this.dimensions).fill(0);
    for (const raw of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
      const w = raw.replace(/s$/, '');
      const group = SYNONYMS.findIndex((g) => g.includes(w));
      const key = group >= 0 ? `concept:${group}` : w;
      let h = 2166136261;
      for (const ch of key) h = Math.imul(h ^ ch.charCodeAt(0), 16777619) >>> 0;
      v[h % this.dimensions] += 1;
    }
    const n = Math.hypot(...v);
    return n > 0 ? v.map((x) => x / n) : v;
  }
}

/** Stores a vector for every chunk that has none, through the embedding store (what the worker calls). */
export async function indexVectors(db: Database, embedder: ConceptEmbedder): Promise<number> {
  const r = await db.query<{ chunk_id: string; text: string }>(
    `SELECT chunk_id, text FROM chunks c
      WHERE NOT EXISTS (SELECT 1 FROM chunk_embeddings e WHERE e.chunk_id = c.chunk_id AND e.model = $1)`,
    [embedder.name],
  );
  if (r.rows.length === 0) return 0;
  await storeEmbeddings(
    db,
    r.rows.map((c) => ({ chunk_id: c.chunk_id, model: embedder.name, vector: embedder.vector(c.text) })),
  );
  return r.rows.length;
}

export interface SearchGateway {
  app: FastifyInstance;
  db: Database;
  catalog: Catalog;
  search: Search;
  get(url: string): Promise<{ statusCode: number; json: () => any; body: string }>;
  post(url: string, body: unknown): Promise<{ statusCode: number; json: () => any; body: string }>;
  ingest(doc: Record<string, unknown>): Promise<any>;
  close(): Promise<void>;
  /** Stops the gateway and its search (writing the index snapshot if it has one), keeps the database. */
  stop(): Promise<void>;
}

export async function startSearchGateway(
  opts: {
    embedder?: SearchDeps['embedder'];
    config?: Partial<SearchConfig>;
    ask?: SearchDeps['ask'];
    testDb?: TestDatabase;
    beforeIndexReady?: SearchDeps['beforeIndexReady'];
    indexSnapshotFile?: SearchDeps['indexSnapshotFile'];
    onSnapshot?: SearchDeps['onSnapshot'];
    quiet?: SearchDeps['quiet'];
    snapshotMaxDeferMs?: SearchDeps['snapshotMaxDeferMs'];
    vectorSnapshotFile?: SearchDeps['vectorSnapshotFile'];
    onVectorSnapshot?: SearchDeps['onVectorSnapshot'];
  } = {},
): Promise<SearchGateway> {
  const testDb = opts.testDb ?? (await createTestDatabase());
  const config = testConfig();
  const catalog = new Catalog(testDb.db, { phoneRegion: config.defaultPhoneRegion });
  const search = createSearch({
    db: testDb.db,
    embedder: opts.embedder ?? null,
    // No vector budget unless a test is about it: on a loaded test machine a k-NN can take longer
    // than the default 50 ms, which would turn a hybrid answer into a lexical-only one.
    config: { vectorBudgetMs: 0, ...opts.config },
    ask: opts.ask ?? { provider: null },
    beforeIndexReady: opts.beforeIndexReady,
    indexSnapshotFile: opts.indexSnapshotFile,
    onSnapshot: opts.onSnapshot,
    quiet: opts.quiet,
    snapshotMaxDeferMs: opts.snapshotMaxDeferMs,
    vectorSnapshotFile: opts.vectorSnapshotFile,
    onVectorSnapshot: opts.onVectorSnapshot,
  });
  const app = await buildTestGateway({ config, db: testDb.db, catalog, search });
  await app.ready();
  const headers = { authorization: `Bearer ${TEST_TOKEN}` };
  return {
    app,
    db: testDb.db,
    catalog,
    search,
    get: (url) => app.inject({ method: 'GET', url, headers }) as any,
    post: (url, body) => app.inject({ method: 'POST', url, headers, payload: body as object }) as any,
    async ingest(doc) {
      const res = await app.inject({ method: 'POST', url: '/v1/ingest', headers, payload: doc });
      if (res.statusCode >= 300) throw new Error(`ingest ${res.statusCode}: ${res.body}`);
      return res.json();
    },
    async close() {
      await app.close();
      await search.close();
      await testDb.drop();
    },
    async stop() {
      await app.close();
      await search.close();
    },
  };
}

let n = 0;
export function doc(text: string, over: Record<string, unknown> = {}): Record<string, unknown> {
  n++;
  return {
    source_type: 'note',
    source_id: `doc-${n}-${Math.random().toString(36).slice(2)}`,
    title: null,
    content: { mime_type: 'text/plain', data: text },
    content_timestamp: '2025-06-01T12:00:00Z',
    ...over,
  };
}

export const q = (params: Record<string, string | number | boolean>) =>
  '/v1/search?' +
  new URLSearchParams(Object.entries(params).map(([k, v]) => [k, String(v)] as [string, string])).toString();
