/**
 * SciFact retrieval quality through the public API: ingest the 5,183 abstracts with
 * POST /v1/ingest:batch (title + text, batches of 100), then run the 300 test queries with
 * GET /v1/search (k=10 for nDCG@10 and MRR@10, k=100 for Recall@100), lexical-only, vector-only
 * and hybrid. Vectors: USE-lite (512-d), precomputed by embed-corpus.ts into a cache and written
 * with SQL, because the embedding worker is not on this branch.
 *
 *   node --import tsx bench/scifact/run.ts [--pg] [--queries N] [--no-vectors] [--sweep] [--sweep-vector] [--scan vector|halfvec|bit]
 *
 * --sweep-vector: hybrid and vector-only nDCG@10 against the vector leg's candidates and HNSW
 * ef_search (SEARCH_VECTOR_CANDIDATES, SEARCH_VECTOR_EF_SEARCH), the k-NN's cost.
 */
import fs from 'node:fs';
import { loadServerConfig } from '../../src/config/server.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { composeGateway } from '../../src/app/gateway-services.ts';
import type { SearchConfig } from '../../src/search/config.ts';
import { createSearch } from '../../src/search/search.ts';
import type { VectorScan } from '../../src/search/vector.ts';
import type { QueryEmbedder } from '../../src/search/types.ts';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import { openScratchPostgres } from '../lib/database.ts';
import { sha256Hex } from '../../src/util/hash.ts';
import path from 'node:path';
import { cachePath, loadScifact, REPO_ROOT, SCIFACT_DIR } from './data.ts';
import { mrrAt, ndcgAt, recallAt } from './metrics.ts';
import { chunkKey, loadUseLite, type UseLite } from './use-lite.ts';

const args = process.argv.slice(2);
const usePg = args.includes('--pg');
const sweep = args.includes('--sweep');
const sweepLexical = args.includes('--sweep-lexical');
const sweepVector = args.includes('--sweep-vector');
/** --scan vector|halfvec|bit: the HNSW index the vector leg walks (config.vectorScan); that index is built here after the vectors. */
const scan = (args.includes('--scan') ? args[args.indexOf('--scan') + 1] : 'vector') as VectorScan;
if (!['vector', 'halfvec', 'bit'].includes(scan)) throw new Error('--scan vector|halfvec|bit');
const qLimit = args.includes('--queries') ? Number(args[args.indexOf('--queries') + 1]) : Infinity;
const TOKEN = 'bench-token-0123456789';

const data = loadScifact();
if (!data) {
  console.log(`SciFact not found at ${SCIFACT_DIR} (corpus.jsonl, queries.jsonl, qrels/test.tsv): skipped.`);
  process.exit(0);
}

// Vectors from the cache written by embed-corpus.ts (real USE-lite outputs).
const vectors = new Map<string, number[]>();
if (!args.includes('--no-vectors') && fs.existsSync(cachePath())) {
  for (const line of fs.readFileSync(cachePath(), 'utf8').split('\n')) {
    if (!line) continue;
    try {
      const o = JSON.parse(line);
      vectors.set(o.key, o.v);
    } catch {
      /* a line cut by an interrupted run */
    }
  }
}
const queries = data.testQueries.slice(0, qLimit);
let haveVectors = queries.every((q) => vectors.has(`q:${sha256Hex(q.text)}`));

// The search embeds the query's words and phrases (plan.text), not always the query as written: 32 of the
// 300 test queries lose parentheses or a "(+)-" on the way. Those are embedded here by the same model, so
// the vector leg is measured on every query (before, it threw for them and the vector-only figure fell).
let liveModel: Promise<UseLite> | null = null;
const cachedEmbedder: QueryEmbedder = {
  name: 'use-lite',
  dimensions: 512,
  async embed(texts) {
    const out: number[][] = [];
    for (const t of texts) {
      const key = `q:${sha256Hex(t)}`;
      let v = vectors.get(key);
      if (!v) {
        liveModel ??= loadUseLite();
        [v] = await (await liveModel).embed([t]);
        vectors.set(key, v);
      }
      out.push(v);
    }
    return out;
  },
};

let dropDb: (() => Promise<void>) | null = null;
const reuseDir = args.includes('--reuse') ? path.join(REPO_ROOT, 'data', 'bench-cache', 'pglite-scifact') : undefined;
async function open(): Promise<Database> {
  // --reuse keeps the PGlite database between runs (method tuning without re-ingesting).
  if (!usePg) return openDatabase({ dataDir: reuseDir });
  const scratch = await openScratchPostgres('memex_bench_scifact');
  dropDb = scratch.drop;
  return scratch.db;
}

const db = await open();
const config = { ...loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), bodyLimitBytes: 50 * 1024 * 1024 };
const auth = { authorization: `Bearer ${TOKEN}` };

async function gateway(search: ReturnType<typeof createSearch>) {
  const app = await composeGateway({ config, db, search });
  await app.ready();
  return app;
}

// ---- ingest through the public API
const ingestApp = await gateway(createSearch({ db }));
const corpusIdOf = new Map<string, string>();
let t0 = Date.now();
const already = (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE is_active_version')).rows[0].n;
for (let i = already >= data.corpus.length ? data.corpus.length : 0; i < data.corpus.length; i += 100) {
  const batch = data.corpus.slice(i, i + 100);
  const res = await ingestApp.inject({
    method: 'POST',
    url: '/v1/ingest:batch',
    headers: auth,
    payload: {
      documents: batch.map((d) => ({
        source_type: 'note',
        source_id: `scifact-${d.id}`,
        title: d.title,
        content: { mime_type: 'text/plain', data: d.text },
        content_timestamp: '2020-01-01T00:00:00Z',
      })),
    },
  });
  const body = res.json();
  for (const item of body.results ?? body.items ?? []) {
    if (item.submission) corpusIdOf.set(item.submission.doc_id, batch[item.index].id);
  }
  if (res.statusCode >= 300 && res.statusCode !== 207) throw new Error(`ingest failed: ${res.statusCode} ${res.body.slice(0, 300)}`);
}
for (const r of (
  await db.query<{ doc_id: string; external_id: string }>('SELECT doc_id, external_id FROM documents WHERE is_active_version')
).rows) {
  corpusIdOf.set(r.doc_id, r.external_id.replace(/^scifact-/, ''));
}
const ingestS = (Date.now() - t0) / 1000;
console.log(
  `backend ${db.kind}; ingested ${corpusIdOf.size}/${data.corpus.length} documents in ${ingestS.toFixed(1)} s ` +
    `(${(corpusIdOf.size / ingestS).toFixed(0)} docs/s)`,
);
await ingestApp.close();

// ---- vectors (what the embedding worker would store), then documents become indexed
if (haveVectors) {
  t0 = Date.now();
  const chunks = await db.query<{ chunk_id: string; text: string; title: string | null }>(
    `SELECT DISTINCT ON (c.chunk_id) c.chunk_id, c.text, d.title FROM chunks c
       JOIN chunk_documents cd ON cd.chunk_id = c.chunk_id JOIN documents d ON d.doc_id = cd.doc_id`,
  );
  const missing = chunks.rows.filter((c) => !vectors.has(chunkKey(c.title ?? '', c.text))).length;
  if (missing > 0) {
    // A partial cache would make the vector numbers meaningless: measure with all vectors or none.
    console.log(`USE-lite cache incomplete (${missing} of ${chunks.rows.length} chunks missing): vector-only and hybrid skipped; finish bench/scifact/embed-corpus.ts (it resumes)`);
    haveVectors = false;
  }
  // Through the embedding store, exactly as the embedding worker stores its vectors.
  for (let i = 0; haveVectors && i < chunks.rows.length; i += 200) {
    await storeEmbeddings(
      db,
      chunks.rows.slice(i, i + 200).map((c) => ({
        chunk_id: c.chunk_id,
        model: 'use-lite',
        vector: vectors.get(chunkKey(c.title ?? '', c.text))!,
      })),
    );
  }
  if (haveVectors) {
    await db.query(
      `UPDATE documents d SET status = 'indexed' WHERE status = 'enriched' AND NOT EXISTS (
         SELECT 1 FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
          WHERE cd.doc_id = d.doc_id AND c.embedding_status <> 'embedded')`,
    );
    if (scan !== 'vector') {
      const expr = scan === 'bit' ? 'binary_quantize(embedding::vector(512))::bit(512)) bit_hamming_ops' : 'embedding::halfvec(512)) halfvec_cosine_ops';
      const s = Date.now();
      await db.exec(`CREATE INDEX IF NOT EXISTS bench_scifact_${scan} ON chunk_embeddings USING hnsw ((${expr}) WHERE model = 'use-lite'`);
      console.log(`${scan} HNSW index built in ${((Date.now() - s) / 1000).toFixed(1)} s`);
    }
    const st = await db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE status = 'indexed'`);
    console.log(
      `stored ${chunks.rows.length - missing} USE-lite vectors in ${((Date.now() - t0) / 1000).toFixed(1)} s ` +
        `(${missing} chunks without a cached vector); ${st.rows[0].n} documents indexed`,
    );
  }
} else {
  console.log('no USE-lite vector cache for these queries: vector-only and hybrid skipped (run embed-corpus.ts)');
}

const searchFor = (over: Partial<SearchConfig>, withVectors: boolean) =>
  createSearch({ db, config: { vectorScan: scan, ...over }, embedder: withVectors ? cachedEmbedder : null });
t0 = Date.now();
const st = await searchFor({}, false).refreshIndex();
console.log(`lexical index built in ${((Date.now() - t0) / 1000).toFixed(2)} s (${st.passages} passages, ${st.terms} terms)`);

interface Scores {
  ndcg10: number;
  recall100: number;
  mrr10: number;
  ms: number;
}

async function evaluateHttp(label: string, search: ReturnType<typeof createSearch>): Promise<Scores> {
  const app = await gateway(search);
  let ndcg = 0, rec = 0, mrr = 0;
  /** Top-10 answers without the vector leg, by the reason `legs` gives. */
  const skipped = new Map<string, number>();
  const start = Date.now();
  for (const q of queries) {
    const rel = data!.qrels.get(q.id)!;
    const ids = async (k: number) => {
      const res = await app.inject({ method: 'GET', url: `/v1/search?k=${k}&q=${encodeURIComponent(q.text)}`, headers: auth });
      if (res.statusCode !== 200) throw new Error(`search ${res.statusCode}: ${res.body.slice(0, 200)}`);
      const why = res.json().legs?.vector_skipped;
      if (k === 10 && why) skipped.set(why, (skipped.get(why) ?? 0) + 1);
      return (res.json().hits as { document_id: string }[]).map((h) => corpusIdOf.get(h.document_id) ?? h.document_id);
    };
    const top10 = await ids(10);
    ndcg += ndcgAt(top10, rel, 10);
    mrr += mrrAt(top10, rel, 10);
    rec += recallAt(await recall100(search, q.text), rel, 100);
  }
  await app.close();
  const n = queries.length;
  const s = { ndcg10: ndcg / n, recall100: rec / n, mrr10: mrr / n, ms: (Date.now() - start) / n };
  console.log(
    `${label.padEnd(14)} nDCG@10 ${s.ndcg10.toFixed(4)}  Recall@100 ${s.recall100.toFixed(4)}  MRR@10 ${s.mrr10.toFixed(4)}` +
      `  (${s.ms.toFixed(0)} ms/query: one HTTP k=10 + one k=100 call)` +
      (skipped.size > 0 ? `; vector leg not run (k=10): ${[...skipped].map(([why, n]) => `${why} ${n}`).join(', ')}` : ''),
  );
  return s;
}

/** The public API caps k at 50 (spec 8); Recall@100 reads the same service for 100 documents. */
async function recall100(search: ReturnType<typeof createSearch>, q: string): Promise<string[]> {
  const r = await search.search({ q, k: 100, filters: {}, context_window: 0 });
  return r.hits.map((h) => corpusIdOf.get(h.document_id) ?? h.document_id);
}

async function evaluateDirect(search: ReturnType<typeof createSearch>): Promise<number> {
  let ndcg = 0;
  for (const q of queries) {
    const r = await search.search({ q: q.text, k: 10, filters: {}, context_window: 0 });
    ndcg += ndcgAt(r.hits.map((h) => corpusIdOf.get(h.document_id)!), data!.qrels.get(q.id)!, 10);
  }
  return ndcg / queries.length;
}

if (sweepLexical) {
  for (const k1 of [0.9, 1.2, 1.5]) {
    for (const b of [0.4, 0.6, 0.75]) {
      for (const titleWeight of [0.5, 1, 2]) {
        const v = await evaluateDirect(searchFor({ k1, b, titleWeight }, false));
        console.log(`sweep lexical k1=${k1} b=${b} title=${titleWeight}: nDCG@10 ${v.toFixed(4)}`);
      }
    }
  }
}
if (sweep) {
  if (haveVectors) {
    for (const vectorWeight of [0.02, 0.05, 0.1, 0.2]) {
      for (const vectorMinSimilarity of [0.25, 0.35]) {
        const v = await evaluateDirect(searchFor({ vectorWeight, vectorMinSimilarity }, true));
        console.log(`sweep hybrid w_vec=${vectorWeight} floor=${vectorMinSimilarity}: nDCG@10 ${v.toFixed(4)}`);
      }
    }
  }
}

if (sweepVector && haveVectors) {
  // [documents from the vector leg, ef_search (0 = the chunks asked for, at least 40)]; the first
  // is the k-NN of before (ef_search 450); the default is 50 candidates.
  for (const [vectorCandidates, vectorEfSearch] of [[100, 450], [100, 0], [50, 0], [30, 0], [20, 0], [10, 0]]) {
    const hybrid = await evaluateDirect(searchFor({ vectorCandidates, vectorEfSearch }, true));
    const vectorOnly = await evaluateDirect(
      searchFor({ vectorCandidates, vectorEfSearch, lexicalEnabled: false, vectorMinSimilarity: -1 }, true),
    );
    console.log(
      `sweep vector candidates=${vectorCandidates} ef_search=${vectorEfSearch || 'rows'}: hybrid nDCG@10 ${hybrid.toFixed(4)}, vector-only ${vectorOnly.toFixed(4)}`,
    );
  }
}

console.log(`\nSciFact test, ${queries.length} queries, through GET /v1/search (vector leg: ${scan} HNSW):`);
await evaluateHttp('lexical-only', searchFor({}, false));
if (haveVectors) {
  await evaluateHttp('vector-only', searchFor({ lexicalEnabled: false, vectorMinSimilarity: -1 }, true));
  // The default runs the vector leg only when it could change the page (SEARCH_VECTOR_LEG=auto).
  await evaluateHttp('hybrid', searchFor({}, true));
  await evaluateHttp('hybrid, always', searchFor({ vectorLeg: 'always' }, true));
}
const dropFn = dropDb as (() => Promise<void>) | null;
if (dropFn) await dropFn();
else await db.close();
