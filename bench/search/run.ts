/**
 * Search latency: N generated documents (emails, chat threads, sms, notes; people; timestamps over
 * two years; see corpus.ts) loaded with bulk SQL, then a mixed query set (keywords, phrases, person filters, date
 * ranges, thread context) from C concurrent HTTP clients (in a worker thread) against a listening
 * gateway.
 *
 * Default: lexical leg only. --hybrid measures what users get by default instead, side by side with
 * lexical-only, at 1 and C clients: the default model (USE-lite in its thread pool, query thread
 * included) embeds every query (the planned queries hardly repeat, so the query cache rarely helps),
 * and every chunk has a stored 512-d vector of that model, so the k-NN runs over N vectors. The
 * stored vectors are random by default (embedding N chunks would take hours here); random vectors
 * are HNSW's worst case (--vectors scifact for a realistic stand-in, below). Hybrid lines report how many answers were lexical-only because
 * the query embedding missed the vector budget (SEARCH_VECTOR_BUDGET_MS), how many did not need the
 * vector leg (SEARCH_VECTOR_LEG=auto: the lexical leg decided the page), and the latency of the answers
 * the vector leg took part in; a third line per client count runs the vector leg for every query
 * (SEARCH_VECTOR_LEG=always; --no-always leaves it out).
 *
 *   node --import tsx bench/search/run.ts [--pg] [--docs 100000] [--clients 8] [--seconds 30]
 *     [--hybrid] [--no-always] [--trace-sql] [--profile FILE] [--keep NAME]
 *     [--vectors random|scifact] [--noise 0.02] [--knn-cost | --knn-only] [--variants LIST] [--knn-queries 300] [--scan vector|halfvec|bit]
 *
 * --vectors scifact (with --hybrid or --knn-cost): instead of random vectors, a labelled STAND-IN for real
 * embeddings at N documents, since embedding N generated chunks with the model would take hours:
 * the real USE-lite vectors of the SciFact chunks (bench/scifact/embed-corpus.ts's cache, 8,654
 * chunks), each the base of about N / 8,654 stored vectors, with Gaussian noise (--noise, standard
 * deviation per dimension) added and renormalised. Random vectors are HNSW's worst case.
 * --knn-cost: the k-NN alone, before the latency runs (--knn-only: instead of them), for each of
 * --variants (default vector,vector-ef40,halfvec,bit; the halfvec and bit HNSW indexes are built
 * here, kept with --keep): PostgreSQL CPU per k-NN from /proc, wall time, shared blocks, recall
 * against the exact answer, over the real SciFact query vectors. --scan: the index the hybrid runs
 * walk (built by a --knn-cost run first).
 *
 * --keep NAME (PostgreSQL) keeps the loaded database NAME (corpus, and with --hybrid the vectors)
 * for the next run with the same --docs instead of a scratch database dropped at the end; drop it
 * yourself (dropdb NAME) when done.
 *
 * Ends with how often answers came from memory (rows, names, lexemes) and how many change-log polls
 * the searches shared. index-cost.ts measures the index alone on the same corpus.
 */
import fs from 'node:fs';
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { loadServerConfig } from '../../src/config/server.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { upkeepPass } from '../../src/db/upkeep.ts';
import { composeGateway } from '../../src/app/gateway-services.ts';
import type { SearchConfig } from '../../src/search/config.ts';
import { createSearch } from '../../src/search/search.ts';
import { BIT_RERANK_FACTOR, efSearch, ROWS_PER_DOCUMENT, vectorCandidates, type VectorScan } from '../../src/search/vector.ts';
import { MEMORY_MAX_PASSAGES, VectorMemory } from '../../src/search/vector-memory.ts';
import { cachePath } from '../scifact/data.ts';
import { openScratchPostgres } from '../lib/database.ts';
import { processCpuMs } from '../lib/cpu.ts';
import { rng } from '../lib/generate.ts';
import { generateCorpus, loadCorpus, type PlannedQuery } from './corpus.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const usePg = args.includes('--pg');
const N = opt('--docs', 100_000);
const CLIENTS = opt('--clients', 8);
const SECONDS = opt('--seconds', 30);
const TOKEN = 'bench-token-0123456789';

const corpus = generateCorpus(N);
const argOf = (k: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : undefined);
/**
 * --vectors random (default) | scifact: what the stored vectors are. scifact = a labelled STAND-IN
 * for real embeddings at N documents: the SciFact chunks' real USE-lite vectors (the cache of
 * bench/scifact/embed-corpus.ts, ~8,700 chunks), each used for about N / 8,700 chunks with Gaussian
 * noise of standard deviation --noise per dimension added and the result renormalised.
 */
const VECTOR_KIND_RANDOM = 'random';
const NOISE = opt('--noise', 0.02);
const vectorKind = argOf('--vectors') === 'scifact' ? `scifact-standin noise=${NOISE}` : VECTOR_KIND_RANDOM;
if (argOf('--vectors') && !['random', 'scifact'].includes(argOf('--vectors')!)) throw new Error('--vectors random|scifact');
/** --knn-cost: the k-NN alone, per index variant (--variants), before the latency runs; --knn-only skips those. */
const knnCost = args.includes('--knn-cost') || args.includes('--knn-only');
/** --scan vector|halfvec|bit: the index the hybrid runs' k-NN walks (config.vectorScan; --knn-cost builds the halfvec and bit indexes). */
const scanArg = argOf('--scan');

const keep = args.includes('--keep') ? args[args.indexOf('--keep') + 1] : undefined;
if (keep !== undefined && (!usePg || !/^[a-z_][a-z0-9_]*$/.test(keep))) throw new Error('--keep NAME needs --pg and a lower-case identifier');

async function openDb(): Promise<{ db: Database; drop: () => Promise<void> }> {
  if (!usePg) {
    const db = await openDatabase({});
    return { db, drop: () => db.close() };
  }
  if (keep) {
    const base = new URL(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres');
    const admin = await openDatabase({ databaseUrl: base.toString() });
    const exists = (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [keep])).rows.length > 0;
    if (!exists) await admin.exec(`CREATE DATABASE ${keep}`);
    await admin.close();
    base.pathname = `/${keep}`;
    const db = await openDatabase({ databaseUrl: base.toString() });
    return { db, drop: () => db.close() };
  }
  return openScratchPostgres('memex_bench_search');
}

const { db, drop } = await openDb();
/** With --keep: the corpus is loaded already when the database holds N documents. */
const reused =
  keep !== undefined && (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents')).rows[0].n === N;
// --trace-sql: wall time per statement kind during the query phase (includes waiting for a connection).
const sqlTime = new Map<string, { n: number; ms: number }>();
let tracing = false;
if (args.includes('--trace-sql')) {
  const query = db.query.bind(db);
  (db as any).query = async (sql: string, params?: unknown[], opts?: { name?: string }) => {
    const s = performance.now();
    try {
      return await query(sql, params, opts);
    } finally {
      if (tracing) {
        const key = sql.replace(/\s+/g, ' ').trim().slice(0, 70);
        const e = sqlTime.get(key) ?? { n: 0, ms: 0 };
        e.n++;
        e.ms += performance.now() - s;
        sqlTime.set(key, e);
      }
    }
  };
}
const t0 = Date.now();
if (reused) for (const _ of corpus.batches(2000)); // the query plan samples the generated documents
else await loadCorpus(db, corpus);
const loadS = (Date.now() - t0) / 1000;
// What the database does by itself soon after a load: autovacuum on a server, memex's table upkeep
// on PGlite (src/db/upkeep.ts; `memex serve` runs it while nobody reads).
if (usePg && !reused) await db.exec('VACUUM ANALYZE');
if (!usePg) console.log(`table upkeep after the load: ${(await upkeepPass(db)).done.map((t) => `${t.action} ${t.table} ${t.ms} ms`).join(', ')}`);
const search = createSearch({ db });
const t1 = Date.now();
const built = await search.refreshIndex();
console.log(
  `${db.kind}: loaded ${N} documents (${corpus.threads.length} threads) in ${loadS.toFixed(1)} s; ` +
    `lexical index built in ${((Date.now() - t1) / 1000).toFixed(1)} s (${built.passages} passages, ${built.terms} terms, ` +
    `heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MB)`,
);

const app = await composeGateway({ config: loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), db, search });
const address = await app.listen({ host: '127.0.0.1', port: 0 });

function url(q: PlannedQuery, base = address): string {
  const { kind: _kind, ...params } = q;
  const p = new URLSearchParams({ k: '20' });
  for (const [key, v] of Object.entries(params)) p.set(key, String(v));
  return `${base}/v1/search?${p}`;
}


// The clients run in a worker thread (their own event loop, as separate client processes would
// have), on a query list generated up front.
const planned = corpus.plan(50_000).map((q) => ({ kind: q.kind, url: url(q) }));
tracing = true;
// --profile FILE: a CPU profile of the gateway thread during the query phase only (with --hybrid:
// during the default hybrid run at C clients).
let profiler: import('node:inspector').Session | null = null;
async function startProfile(): Promise<void> {
  const inspector = await import('node:inspector');
  profiler = new inspector.Session();
  profiler.connect();
  const post = (m: string) => new Promise((res, rej) => profiler!.post(m, (e, r) => (e ? rej(e) : res(r))));
  await post('Profiler.enable');
  await post('Profiler.start');
}
async function writeProfile(): Promise<void> {
  if (!profiler) return;
  const file = args[args.indexOf('--profile') + 1];
  const { profile } = await new Promise<any>((res, rej) => profiler!.post('Profiler.stop', (e, r) => (e ? rej(e) : res(r))));
  (await import('node:fs')).writeFileSync(file, JSON.stringify(profile));
  console.log(`gateway CPU profile of the query phase: ${file}`);
  profiler = null;
}
if (args.includes('--profile') && !args.includes('--hybrid')) await startProfile();
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { queries, clients, seconds, token } = workerData;
(async () => {
  const elu0 = performance.eventLoopUtilization();
  const lat = {};
  let errors = 0, next = 0, budget = 0;
  const skipped = {};
  const until = Date.now() + seconds * 1000, warm = Date.now() + 3000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < until) {
      const q = queries[next++ % queries.length];
      const s = performance.now();
      const res = await fetch(q.url, { headers: { authorization: 'Bearer ' + token } });
      const body = await res.json();
      const ms = performance.now() - s;
      if (res.status !== 200) errors++;
      else if (body.legs && body.legs.vector_skipped === 'budget' && Date.now() > warm) budget++;
      if (Date.now() > warm) {
        (lat[q.kind] ??= []).push(ms), (lat.all ??= []).push(ms);
        const why = body.legs && body.legs.vector_skipped;
        if (why) skipped[why] = (skipped[why] ?? 0) + 1;
        // Answers the vector leg took part in, apart: their cost is the model call and the k-NN.
        if (body.legs && body.legs.vector) (lat.withVector ??= []).push(ms);
      }
    }
  }));
  parentPort.postMessage({ lat, errors, budget, skipped, elu: performance.eventLoopUtilization(elu0).utilization });
})();`;

if (args.includes('--hybrid') || knnCost) {
  await hybridRuns();
  await app.close();
  await drop();
  process.exit(0);
}
const gatewayElu0 = performance.eventLoopUtilization();
const cpu0 = process.cpuUsage();
const { lat, errors, elu } = await new Promise<{ lat: Record<string, number[]>; errors: number; elu: number }>((resolve, reject) => {
  const w = new Worker(CLIENT, { eval: true, workerData: { queries: planned, clients: CLIENTS, seconds: SECONDS, token: TOKEN } });
  w.once('message', resolve);
  w.once('error', reject);
});
const gatewayElu = performance.eventLoopUtilization(gatewayElu0).utilization;
const cpu = process.cpuUsage(cpu0);
console.log(
  `event loop busy: gateway thread ${(100 * gatewayElu).toFixed(0)} %, client thread ${(100 * elu).toFixed(0)} %; ` +
    `bench process CPU ${((cpu.user + cpu.system) / 1e4 / SECONDS).toFixed(0)} % of one core`,
);
await writeProfile();
const pct = (a: number[], p: number) => a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}, Node ${process.version}`);
console.log(`${CLIENTS} clients, ${SECONDS} s (first 3 s not counted), ${errors} errors`);
for (const [kind, a] of Object.entries(lat).sort()) {
  a.sort((x, y) => x - y);
  console.log(
    `${kind.padEnd(9)} n=${String(a.length).padStart(5)}  p50 ${pct(a, 50).toFixed(1)} ms  p95 ${pct(a, 95).toFixed(1)} ms  p99 ${pct(a, 99).toFixed(1)} ms` +
      (kind === 'all' ? `  ${(a.length / (SECONDS - 3)).toFixed(1)} queries/s` : ''),
  );
}
for (const [k, e] of [...sqlTime].sort((a, b) => b[1].ms - a[1].ms)) {
  console.log(`sql ${(e.ms / e.n).toFixed(2).padStart(7)} ms avg  n=${String(e.n).padStart(6)}  ${k}`);
}
console.log(`answered from memory (hits/misses): ${JSON.stringify(search.memoryStats())}`);
await app.close();
await drop();

/**
 * CPU seconds used so far by this process (gateway, model threads, client thread) and, on
 * PostgreSQL, by each server process of this bench's connections (Linux /proc). Subtract two with
 * cpuSince: connections come and go, so PostgreSQL's share is summed per process.
 */
async function cpuSeconds(): Promise<{ node: number; pg: Map<number, number> }> {
  const u = process.cpuUsage();
  const pg = new Map<number, number>();
  if (usePg) {
    const pids = (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).rows;
    for (const { pid } of pids) {
      const ms = processCpuMs(pid);
      if (ms > 0) pg.set(pid, ms / 1000);
    }
  }
  return { node: (u.user + u.system) / 1e6, pg };
}

/**
 * CPU seconds between two cpuSeconds() readings. A server process that appeared since counts
 * whole; one that ended in between is not counted (its share is lost, never negative).
 */
function cpuSince(from: Awaited<ReturnType<typeof cpuSeconds>>, to: Awaited<ReturnType<typeof cpuSeconds>>) {
  let pg = 0;
  for (const [pid, s] of to.pg) pg += s - (from.pg.get(pid) ?? 0);
  return { node: to.node - from.node, pg };
}

/**
 * CREATE INDEX with room for the whole HNSW graph in memory (maintenance_work_mem 1 GB for this
 * transaction; the default 64 MB makes pgvector build the graph on disk, many times slower), on
 * PostgreSQL and on PGlite alike.
 */
async function buildIndex(ddl: string): Promise<number> {
  const s = performance.now();
  await db.transaction(async (tx) => {
    await tx.query("SELECT set_config('maintenance_work_mem', '1GB', true)");
    await tx.exec(ddl);
  });
  return (performance.now() - s) / 1000;
}

/** One run of `clients` concurrent clients for `seconds` (first 3 s not counted). */
async function measure(queries: { kind: string; url: string }[], clients: number, seconds: number) {
  return new Promise<{ lat: Record<string, number[]>; errors: number; elu: number; budget: number; skipped: Record<string, number> }>((resolve, reject) => {
    const w = new Worker(CLIENT, { eval: true, workerData: { queries, clients, seconds, token: TOKEN } });
    w.once('message', resolve);
    w.once('error', reject);
  });
}

async function hybridRuns(): Promise<void> {
  const { loadEmbeddingConfig } = await import('../../src/embedding/config.ts');
  const { createEmbedder } = await import('../../src/embedding/providers/index.ts');
  const { storeEmbeddings } = await import('../../src/embedding/store.ts');
  const cfg = loadEmbeddingConfig(process.env);
  const embedder = await createEmbedder(cfg);
  // Vectors of the default model for every chunk: the first through the store (model row and its
  // HNSW index), the rest in bulk with the index dropped and rebuilt (much faster than N inserts).
  const tv = performance.now();
  // Which vectors the kept database holds (a comment on the table; none = random, the older runs).
  const heldKind = usePg
    ? ((await db.query<{ c: string | null }>("SELECT obj_description('chunk_embeddings'::regclass, 'pg_class') AS c")).rows[0].c ?? VECTOR_KIND_RANDOM)
    : VECTOR_KIND_RANDOM;
  const stored = reused
    ? (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunk_embeddings WHERE model = $1', [embedder.name])).rows[0].n
    : 0;
  if (stored > 0 && heldKind === vectorKind) console.log(`${stored} vectors of ${embedder.name} (${heldKind}) kept from the last run`);
  else await storeVectors();
  async function storeVectors() {
  if (stored > 0) {
    console.log(`the kept database holds "${heldKind}" vectors; replacing them with "${vectorKind}"`);
    const idx = (await db.query<{ indexname: string }>(
      `SELECT i.indexname FROM pg_indexes i JOIN embedding_models m ON m.index_name = i.indexname WHERE m.model = $1`,
      [embedder.name],
    )).rows[0];
    if (idx) await db.exec(`DROP INDEX ${idx.indexname}`);
    await db.exec('DROP INDEX IF EXISTS bench_knn_halfvec; DROP INDEX IF EXISTS bench_knn_bit');
    await db.query('DELETE FROM chunk_embeddings WHERE model = $1', [embedder.name]);
    await db.query('UPDATE embedding_models SET index_name = NULL WHERE model = $1', [embedder.name]);
  }
  const first = (await db.query<{ chunk_id: string; text: string }>('SELECT chunk_id, text FROM chunks ORDER BY chunk_id LIMIT 1')).rows[0];
  const standIn = vectorKind === VECTOR_KIND_RANDOM ? null : scifactStandIn(N);
  const [v] = standIn ? [standIn.vector(0)] : await embedder.embed([first.text]);
  await db.query('UPDATE chunks SET embedding_status = \'pending\' WHERE chunk_id = $1', [first.chunk_id]);
  await storeEmbeddings(db, [{ chunk_id: first.chunk_id, model: embedder.name, vector: v }]);
  const idx = (await db.query<{ indexdef: string; indexname: string }>(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN embedding_models m ON m.index_name = i.indexname WHERE m.model = $1`,
    [embedder.name],
  )).rows[0];
  await db.exec(`DROP INDEX ${idx.indexname}`);
  if (!standIn) {
    await db.query(
      `INSERT INTO chunk_embeddings (model, chunk_id, embedding)
       SELECT $1, c.chunk_id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $2) WHERE c.chunk_id IS NOT NULL)::vector
         FROM chunks c WHERE c.chunk_id <> $3`,
      [embedder.name, v.length, first.chunk_id],
    );
  } else {
    // The i-th chunk (in chunk_id order) gets stand-in vector i, in bulk batches.
    const ids = (await db.query<{ chunk_id: string }>('SELECT chunk_id FROM chunks ORDER BY chunk_id')).rows.map((r) => r.chunk_id);
    for (let i = 1; i < ids.length; i += 2000) {
      const part = ids.slice(i, i + 2000);
      await db.query(
        `INSERT INTO chunk_embeddings (model, chunk_id, embedding) SELECT $1, u.c, u.v::vector FROM unnest($2::uuid[], $3::text[]) AS u(c, v)`,
        [embedder.name, part, part.map((_, j) => `[${standIn.vector(i + j).join(',')}]`)],
      );
    }
    console.log(standIn.describe());
  }
  const indexS = await buildIndex(idx.indexdef);
  if (usePg) {
    await db.exec(`COMMENT ON TABLE chunk_embeddings IS '${vectorKind}'`);
    await db.exec('VACUUM ANALYZE chunk_embeddings');
  }
  console.log(
    `${N} vectors of ${embedder.name} (${v.length}-d, ${vectorKind}) stored and indexed in ${((performance.now() - tv) / 1000).toFixed(1)} s ` +
      `(HNSW build ${indexS.toFixed(1)} s)`,
  );
  }
  if (knnCost) {
    await measureKnn(embedder.name);
    if (args.includes('--knn-only')) {
      await embedder.close?.();
      return;
    }
  }

  // Where a hybrid answer's time goes: each leg's wall time (the vector leg = waiting for the query
  // embedding + the k-NN), and the model calls themselves (queue wait included).
  const legMs = { lexical: [] as number[], vector: [] as number[], embed: [] as number[] };
  const timedEmbedder = {
    name: embedder.name,
    dimensions: embedder.dimensions,
    async embed(texts: string[], kind?: 'query' | 'passage', o?: { signal?: AbortSignal }) {
      const s = performance.now();
      try {
        return await embedder.embed(texts, kind, o);
      } finally {
        legMs.embed.push(performance.now() - s);
      }
    },
  };
  /** A hybrid search service with the default model behind a listening gateway of its own. */
  async function hybridGateway(config: Partial<SearchConfig>) {
    const search = createSearch({
      db,
      config: { ...config, ...(scanArg ? { vectorScan: scanArg as VectorScan } : {}) },
      embedder: timedEmbedder,
      onLegTiming: (leg, ms, skipped) => {
        if (!skipped) legMs[leg].push(ms);
      },
    });
    await search.refreshIndex();
    const app = await composeGateway({ config: loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), db, search });
    return { search, app, address: await app.listen({ host: '127.0.0.1', port: 0 }) };
  }
  const { search: hybrid, app: happ, address: haddr } = await hybridGateway({});
  // The same with the vector leg run for every query (SEARCH_VECTOR_LEG=always, the default before
  // the lexical leg could decide the page), unless --no-always.
  const { search: always, app: aapp, address: aaddr } = await hybridGateway({ vectorLeg: 'always' });
  const plan = corpus.plan(50_000);
  // Each hybrid run starts at its own place in the plan, so its queries are new to the query cache
  // (repeats within a run are the plan's own: one-word queries of common words recur).
  let nextSlice = 0;
  const modes = [
    { name: 'lexical-only', search: null, queries: () => plan.map((q) => ({ kind: q.kind, url: url(q) })) },
    { name: 'hybrid (default)', search: hybrid, queries: () => plan.slice(10_000 * nextSlice++).map((q) => ({ kind: q.kind, url: url(q, haddr) })) },
    ...(args.includes('--no-always')
      ? []
      : [{ name: 'hybrid, always', search: always, queries: () => plan.slice(10_000 * nextSlice++).map((q) => ({ kind: q.kind, url: url(q, aaddr) })) }]),
  ];
  console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}, Node ${process.version}`);
  const pct = (a: number[], p: number) => a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
  const spread = (a: number[]) => {
    a.sort((x, y) => x - y);
    return a.length ? `p50 ${pct(a, 50).toFixed(1)} / p95 ${pct(a, 95).toFixed(1)} ms (n=${a.length})` : 'none';
  };
  for (const clients of [1, CLIENTS]) {
    for (const m of modes) {
      const calls = m.search?.queryEmbeddings ?? 0;
      for (const a of Object.values(legMs)) a.length = 0;
      const cpu0 = await cpuSeconds();
      const profiled = args.includes('--profile') && clients === CLIENTS && m.search === hybrid;
      if (profiled) await startProfile();
      const { lat, errors, budget, skipped } = await measure(m.queries(), clients, SECONDS);
      if (profiled) await writeProfile();
      const cpu = cpuSince(cpu0, await cpuSeconds());
      const a = (lat.all ?? []).sort((x, y) => x - y);
      // Every query of the run (the first 3 s included) used CPU; count them from the client side.
      const queries = a.length * (SECONDS / (SECONDS - 3));
      console.log(
        `${m.name.padEnd(17)} ${clients} client(s): n=${a.length} p50 ${pct(a, 50).toFixed(1)} ms p95 ${pct(a, 95).toFixed(1)} ms ` +
          `p99 ${pct(a, 99).toFixed(1)} ms ${(a.length / (SECONDS - 3)).toFixed(1)} q/s, ${errors} errors` +
          (m.search ? `; ${m.search.queryEmbeddings - calls} query embeddings, ${budget} lexical-only (budget)` : '') +
          `; CPU per query ${((1000 * cpu.node) / queries).toFixed(1)} ms here + ${((1000 * cpu.pg) / queries).toFixed(1)} ms PostgreSQL` +
          `; load ${os.loadavg()[0].toFixed(1)}`,
      );
      if (m.search) {
        console.log(`  legs: lexical ${spread(legMs.lexical)}; vector (embedding wait + k-NN) ${spread(legMs.vector)}; model calls ${spread(legMs.embed)}`);
        const w = lat.withVector ?? [];
        console.log(
          `  vector leg in ${w.length} of ${a.length} answers (those: ${spread(w)}); not run: ` +
            (Object.entries(skipped).map(([why, n]) => `${why} ${n}`).join(', ') || 'never'),
        );
      }
    }
  }
  await happ.close();
  hybrid.close();
  await aapp.close();
  always.close();
  await embedder.close?.();
}


/** The SciFact cache of embed-corpus.ts: chunk vectors (sorted by key) and query vectors. */
function scifactCache(): { chunks: number[][]; queries: number[][] } {
  if (!fs.existsSync(cachePath())) throw new Error(`no SciFact vector cache at ${cachePath()}: run bench/scifact/embed-corpus.ts`);
  const chunks: [string, number[]][] = [];
  const queries: [string, number[]][] = [];
  for (const line of fs.readFileSync(cachePath(), 'utf8').split('\n')) {
    if (!line) continue;
    try {
      const o = JSON.parse(line) as { key: string; v: number[] };
      (o.key.startsWith('q:') ? queries : chunks).push([o.key, o.v]);
    } catch {
      /* a line cut by an interrupted run */
    }
  }
  const byKey = (a: [string, number[]], b: [string, number[]]) => (a[0] < b[0] ? -1 : 1);
  return { chunks: chunks.sort(byKey).map((x) => x[1]), queries: queries.sort(byKey).map((x) => x[1]) };
}

/** Stand-in vector i: SciFact chunk vector i mod m plus N(0, NOISE²) per dimension, renormalised. */
function scifactStandIn(n: number) {
  const { chunks } = scifactCache();
  const vector = (i: number): number[] => {
    const base = chunks[i % chunks.length];
    const r = rng(i + 1);
    const out = base.map((x) => x + NOISE * Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r()));
    const norm = Math.sqrt(out.reduce((a, x) => a + x * x, 0));
    return out.map((x) => Math.round((x / norm) * 1e6) / 1e6);
  };
  const describe = () => {
    let cos = 0;
    for (let i = 0; i < 200; i++) {
      const v = vector(i), b = chunks[i % chunks.length];
      cos += v.reduce((a, x, j) => a + x * b[j], 0);
    }
    return `stand-in vectors: ${chunks.length} real SciFact USE-lite chunk vectors, each the base of ~${(n / chunks.length).toFixed(1)} ` +
      `stored vectors (Gaussian noise sd ${NOISE} per dimension, renormalised; mean cosine to its base ${(cos / 200).toFixed(3)})`;
  };
  return { vector, describe };
}

/**
 * The k-NN alone, as the vector leg runs it (vectorCandidates: 50 documents = 100 rows, no filters),
 * for each --variants entry, over the real SciFact query vectors: PostgreSQL CPU per k-NN (the
 * database's backends' utime + stime from /proc, one connection busy at a time), wall time, shared
 * blocks touched (pg_stat_database), and recall@50 documents against the exact answer (sequential
 * scan). Two passes: the first after whatever the cache held, the second warm.
 */
async function measureKnn(model: string): Promise<void> {
  const useQueries = opt('--knn-queries', 300);
  let queries: number[][];
  if (fs.existsSync(cachePath())) queries = scifactCache().queries.slice(0, useQueries);
  else {
    const r = rng(7);
    queries = Array.from({ length: useQueries }, () => Array.from({ length: 512 }, () => r() - 0.5));
  }
  const dims = queries[0].length;
  const k = 50;
  const lit = (s: string) => `'${s.replace(/'/g, "''")}'`;
  const extra: Record<string, string> = {
    halfvec: `CREATE INDEX IF NOT EXISTS bench_knn_halfvec ON chunk_embeddings USING hnsw ((embedding::halfvec(${dims})) halfvec_cosine_ops) WHERE model = ${lit(model)}`,
    bit: `CREATE INDEX IF NOT EXISTS bench_knn_bit ON chunk_embeddings USING hnsw ((binary_quantize(embedding::vector(${dims}))::bit(${dims})) bit_hamming_ops) WHERE model = ${lit(model)}`,
  };
  const variants = (argOf('--variants') ?? 'vector,vector-ef40,halfvec,bit').split(',').map((name) => {
    const m = /^(vector|halfvec|bit)(?:-ef(\d+))?$/.exec(name);
    if (!m) throw new Error(`--variants: unknown "${name}" (vector|halfvec|bit, optional -efN)`);
    return { name, scan: m[1] as VectorScan, ef: m[2] ? Number(m[2]) : undefined };
  });
  // The other variants' indexes would only cost the vector variant's inserts; here they just sit.
  for (const scan of new Set(variants.map((v) => v.scan))) {
    if (!extra[scan]) continue;
    const name = scan === 'halfvec' ? 'bench_knn_halfvec' : 'bench_knn_bit';
    const exists = (await db.query('SELECT 1 FROM pg_indexes WHERE indexname = $1', [name])).rows.length > 0;
    if (!exists) console.log(`${name}: built in ${(await buildIndex(extra[scan])).toFixed(1)} s`);
  }
  const sizes = await db.query<{ indexname: string; mb: number }>(
    `SELECT i.indexname, round(pg_relation_size(format('%I', i.indexname)::regclass) / 1048576.0, 1)::float AS mb
       FROM pg_indexes i WHERE i.tablename = 'chunk_embeddings' AND i.indexdef ILIKE '%hnsw%' ORDER BY 1`,
  );
  console.log(`HNSW indexes: ${sizes.rows.map((r) => `${r.indexname} ${r.mb} MB`).join(', ')}`);
  if (usePg) {
    const sb = (await db.query<{ shared_buffers: string }>('SHOW shared_buffers')).rows[0].shared_buffers;
    console.log(`shared_buffers ${sb}`);
  }

  // The exact answer for recall: best chunk per document over a sequential scan, first 100 queries.
  const exactFor = queries.slice(0, 100);
  const exact: Set<string>[] = [];
  for (const qv of exactFor) {
    const rows = await db.transaction(async (tx) => {
      await tx.query("SELECT set_config('enable_indexscan', 'off', true), set_config('enable_bitmapscan', 'off', true)");
      return (await tx.query<{ doc_id: string }>(
        `SELECT cd.doc_id FROM chunk_embeddings e JOIN chunk_documents cd ON cd.chunk_id = e.chunk_id
           JOIN documents d ON d.doc_id = cd.doc_id WHERE e.model = $2 AND d.is_active_version
          GROUP BY cd.doc_id ORDER BY min(e.embedding::vector(${dims}) <=> $1::vector(${dims})) LIMIT ${k}`,
        [`[${qv.join(',')}]`, model],
      )).rows;
    });
    exact.push(new Set(rows.map((r) => r.doc_id)));
  }

  const blocks = async () => {
    if (!usePg) return { hit: 0, read: 0 };
    await new Promise((r) => setTimeout(r, 1100)); // backends flush their statistics at most once a second
    await db.query('SELECT pg_stat_clear_snapshot()');
    const r = (await db.query<{ hit: string; read: string }>(
      'SELECT blks_hit AS hit, blks_read AS read FROM pg_stat_database WHERE datname = current_database()',
    )).rows[0];
    return { hit: Number(r.hit), read: Number(r.read) };
  };
  console.log(
    `k-NN alone (${queries.length} SciFact query vectors, ${k} documents = ${k * ROWS_PER_DOCUMENT} rows, one at a time), ` +
      `load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}:`,
  );
  for (const v of variants) {
    for (const pass of [1, 2]) {
      const b0 = await blocks();
      const c0 = await cpuSeconds();
      const wall: number[] = [];
      let recall = 0;
      for (let i = 0; i < queries.length; i++) {
        const s = performance.now();
        const got = await vectorCandidates(db, { model, queryVector: queries[i], k, filters: {}, scan: v.scan, efSearch: v.ef });
        wall.push(performance.now() - s);
        if (i < exact.length) recall += got.filter((g) => exact[i].has(g.doc_id)).length / Math.max(1, exact[i].size);
      }
      const c1 = await cpuSeconds();
      const b1 = await blocks();
      wall.sort((a, b) => a - b);
      const n = queries.length;
      // The memory variant runs in this process; the database variants in PostgreSQL (or PGlite, here).
      const used = cpuSince(c0, c1);
      const cpuMs = (1000 * (usePg && v.name !== 'memory' ? used.pg : used.node)) / n;
      console.log(
        `  ${v.name.padEnd(12)} pass ${pass}: ${cpuMs.toFixed(2)} CPU-ms ${usePg ? 'PostgreSQL' : 'PGlite (process)'} per k-NN; ` +
          `wall p50 ${wall[Math.floor(n / 2)].toFixed(2)} / p95 ${wall[Math.floor(n * 0.95)].toFixed(2)} ms; ` +
          (usePg ? `blocks per k-NN ${((b1.hit - b0.hit) / n).toFixed(0)} hit + ${((b1.read - b0.read) / n).toFixed(1)} read; ` : '') +
          `recall@${k} ${(recall / exact.length).toFixed(3)} (ef_search ${v.scan === 'bit' ? `${Math.max(v.ef ?? 0, k * ROWS_PER_DOCUMENT * BIT_RERANK_FACTOR)}, ${k * ROWS_PER_DOCUMENT * BIT_RERANK_FACTOR} re-ranked` : (v.ef ?? efSearch(k * ROWS_PER_DOCUMENT))})`,
      );
    }
  }
  // --knn-filters: the same k-NN with the filters of the bench's planned queries (person, date range,
  // thread): the iterative scan walks the graph until 100 rows pass them (or hnsw.max_scan_tuples).
  if (!args.includes('--knn-filters')) return;
  const { filterSql, parseFilters } = await import('../../src/catalog/filters.ts');
  const memory = new VectorMemory(db, model, { maxBytes: 1 << 30 });
  const tw = performance.now();
  await memory.warm();
  console.log(`vectors in memory: ${memory.size.vectors} (${(memory.size.bytes / 2 ** 20).toFixed(0)} MiB) loaded in ${((performance.now() - tw) / 1000).toFixed(1)} s`);
  const plan = corpus.plan(20_000);
  for (const kind of ['person', 'dates', 'thread'] as const) {
    const filters = plan
      .filter((p) => p.kind === kind)
      .slice(0, 100)
      .map((p) => parseFilters({ person: p.person, start_date: p.start_date, end_date: p.end_date, thread_id: p.thread_id }));
    // What the search does for a filter: the chunks it allows (the search takes them from its
    // lexical index; here SQL, outside the measured time) ranked against the vectors in memory.
    const allowed: ({ chunkIds: string[]; docIds: string[] } | undefined)[] = [];
    for (const f of filters) {
      const params: unknown[] = [];
      const rows = (await db.query<{ chunk_id: string; doc_id: string }>(
        `SELECT cd.chunk_id::text AS chunk_id, d.doc_id::text AS doc_id FROM documents d JOIN chunk_documents cd ON cd.doc_id = d.doc_id
          WHERE d.is_active_version ${filterSql(f, params, 'd')}`,
        params,
      )).rows;
      allowed.push(rows.length <= MEMORY_MAX_PASSAGES ? { chunkIds: rows.map((r) => r.chunk_id), docIds: rows.map((r) => r.doc_id) } : undefined);
    }
    const memoryToo = allowed.every((a) => a !== undefined);
    for (const v of [...variants, ...(memoryToo ? [{ name: 'memory', scan: 'vector' as VectorScan, ef: undefined }] : [])]) {
      const c0 = await cpuSeconds();
      const wall: number[] = [];
      let rows = 0;
      for (let i = 0; i < filters.length; i++) {
        const s = performance.now();
        const queryVector = queries[i % queries.length];
        rows += (v.name === 'memory'
          ? await memory.nearest(queryVector, allowed[i]!, k)
          : await vectorCandidates(db, { model, queryVector, k, filters: filters[i], scan: v.scan, efSearch: v.ef })
        ).length;
        wall.push(performance.now() - s);
      }
      const c1 = await cpuSeconds();
      wall.sort((a, b) => a - b);
      const n = filters.length;
      const used = cpuSince(c0, c1);
      const cpuMs = (1000 * (usePg && v.name !== 'memory' ? used.pg : used.node)) / n;
      console.log(
        `  ${v.name.padEnd(12)} ${kind.padEnd(6)} filter: ${cpuMs.toFixed(2)} CPU-ms per k-NN; wall p50 ${wall[Math.floor(n / 2)].toFixed(2)} / ` +
          `p95 ${wall[Math.floor(n * 0.95)].toFixed(2)} ms; ${(rows / n).toFixed(1)} documents found (${n} queries)`,
      );
    }
  }
}
