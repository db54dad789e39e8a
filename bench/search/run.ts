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
 * stored vectors are random (embedding N chunks would take hours here); the k-NN's cost does not
 * depend on what the vectors mean. Hybrid lines report how many answers were lexical-only because
 * the query embedding missed the vector budget (SEARCH_VECTOR_BUDGET_MS).
 *
 *   node --import tsx bench/search/run.ts [--pg] [--docs 100000] [--clients 8] [--seconds 30]
 *     [--hybrid] [--trace-sql] [--profile FILE] [--keep NAME]
 *
 * --keep NAME (PostgreSQL) keeps the loaded database NAME (corpus, and with --hybrid the vectors)
 * for the next run with the same --docs instead of a scratch database dropped at the end; drop it
 * yourself (dropdb NAME) when done.
 *
 * Ends with how often answers came from memory (rows, names, lexemes) and how many change-log polls
 * the searches shared. index-cost.ts measures the index alone on the same corpus.
 */
import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { loadServerConfig } from '../../src/config/server.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { buildGateway } from '../../src/gateway/app.ts';
import { createSearch } from '../../src/search/search.ts';
import { openScratchPostgres } from '../lib/database.ts';
import { generateCorpus, loadCorpus, type PlannedQuery } from './corpus.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const usePg = args.includes('--pg');
const N = opt('--docs', 100_000);
const CLIENTS = opt('--clients', 8);
const SECONDS = opt('--seconds', 30);
const TOKEN = 'bench-token-0123456789';

const corpus = generateCorpus(N);

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
if (usePg && !reused) await db.exec('VACUUM ANALYZE');
const search = createSearch({ db });
const t1 = Date.now();
const built = await search.refreshIndex();
console.log(
  `${db.kind}: loaded ${N} documents (${corpus.threads.length} threads) in ${loadS.toFixed(1)} s; ` +
    `lexical index built in ${((Date.now() - t1) / 1000).toFixed(1)} s (${built.passages} passages, ${built.terms} terms, ` +
    `heap ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(0)} MB)`,
);

const app = await buildGateway({ config: loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), db, search });
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
// --profile FILE: a CPU profile of the gateway thread during the query phase only.
let profiler: import('node:inspector').Session | null = null;
if (args.includes('--profile')) {
  const inspector = await import('node:inspector');
  profiler = new inspector.Session();
  profiler.connect();
  const post = (m: string) => new Promise((res, rej) => profiler!.post(m, (e, r) => (e ? rej(e) : res(r))));
  await post('Profiler.enable');
  await post('Profiler.start');
}
const CLIENT = `
const { parentPort, workerData } = require('node:worker_threads');
const { queries, clients, seconds, token } = workerData;
(async () => {
  const elu0 = performance.eventLoopUtilization();
  const lat = {};
  let errors = 0, next = 0, budget = 0;
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
      if (Date.now() > warm) (lat[q.kind] ??= []).push(ms), (lat.all ??= []).push(ms);
    }
  }));
  parentPort.postMessage({ lat, errors, budget, elu: performance.eventLoopUtilization(elu0).utilization });
})();`;

if (args.includes('--hybrid')) {
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
if (profiler) {
  const file = args[args.indexOf('--profile') + 1];
  const { profile } = await new Promise<any>((res, rej) => profiler!.post('Profiler.stop', (e, r) => (e ? rej(e) : res(r))));
  (await import('node:fs')).writeFileSync(file, JSON.stringify(profile));
  console.log(`gateway CPU profile of the query phase: ${file}`);
}
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
 * PostgreSQL, by the server processes of this bench's connections (Linux /proc).
 */
async function cpuSeconds(): Promise<{ node: number; pg: number }> {
  const u = process.cpuUsage();
  let pg = 0;
  if (usePg) {
    const fs = await import('node:fs');
    const tick = 100; // USER_HZ on Linux
    const pids = (await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()')).rows;
    for (const { pid } of pids) {
      try {
        const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
        pg += (Number(f[11]) + Number(f[12])) / tick;
      } catch {
        // gone, or another user's process
      }
    }
  }
  return { node: (u.user + u.system) / 1e6, pg };
}

/** One run of `clients` concurrent clients for `seconds` (first 3 s not counted). */
async function measure(queries: { kind: string; url: string }[], clients: number, seconds: number) {
  return new Promise<{ lat: Record<string, number[]>; errors: number; elu: number; budget: number }>((resolve, reject) => {
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
  const stored = reused
    ? (await db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunk_embeddings WHERE model = $1', [embedder.name])).rows[0].n
    : 0;
  if (stored > 0) console.log(`${stored} vectors of ${embedder.name} kept from the last run`);
  else await storeRandomVectors();
  async function storeRandomVectors() {
  const first = (await db.query<{ chunk_id: string; text: string }>('SELECT chunk_id, text FROM chunks LIMIT 1')).rows[0];
  const [v] = await embedder.embed([first.text]);
  await db.query('UPDATE chunks SET embedding_status = \'pending\' WHERE chunk_id = $1', [first.chunk_id]);
  await storeEmbeddings(db, [{ chunk_id: first.chunk_id, model: embedder.name, vector: v }]);
  const idx = (await db.query<{ indexdef: string; indexname: string }>(
    `SELECT i.indexname, i.indexdef FROM pg_indexes i JOIN embedding_models m ON m.index_name = i.indexname WHERE m.model = $1`,
    [embedder.name],
  )).rows[0];
  await db.exec(`DROP INDEX ${idx.indexname}`);
  await db.query(
    `INSERT INTO chunk_embeddings (model, chunk_id, embedding)
     SELECT $1, c.chunk_id, (SELECT array_agg(random() - 0.5) FROM generate_series(1, $2) WHERE c.chunk_id IS NOT NULL)::vector
       FROM chunks c WHERE c.chunk_id <> $3`,
    [embedder.name, v.length, first.chunk_id],
  );
  await db.exec(idx.indexdef);
  if (usePg) await db.exec('VACUUM ANALYZE chunk_embeddings');
  console.log(`${N} vectors of ${embedder.name} (${v.length}-d, random) stored and indexed in ${((performance.now() - tv) / 1000).toFixed(1)} s`);
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
  const hybrid = createSearch({
    db,
    embedder: timedEmbedder,
    onLegTiming: (leg, ms, skipped) => {
      if (!skipped) legMs[leg].push(ms);
    },
  });
  await hybrid.refreshIndex();
  const happ = await buildGateway({ config: loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), db, search: hybrid });
  const haddr = await happ.listen({ host: '127.0.0.1', port: 0 });
  const plan = corpus.plan(50_000);
  // Each hybrid run starts at its own place in the plan, so its queries are new to the query cache
  // (repeats within a run are the plan's own: one-word queries of common words recur).
  let nextSlice = 0;
  const modes = [
    { name: 'lexical-only', queries: () => plan.map((q) => ({ kind: q.kind, url: url(q) })) },
    { name: 'hybrid (default)', queries: () => plan.slice(10_000 * nextSlice++).map((q) => ({ kind: q.kind, url: url(q, haddr) })) },
  ];
  console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}, Node ${process.version}`);
  const pct = (a: number[], p: number) => a[Math.min(a.length - 1, Math.floor((p / 100) * a.length))];
  const spread = (a: number[]) => {
    a.sort((x, y) => x - y);
    return a.length ? `p50 ${pct(a, 50).toFixed(1)} / p95 ${pct(a, 95).toFixed(1)} ms (n=${a.length})` : 'none';
  };
  for (const clients of [1, CLIENTS]) {
    for (const m of modes) {
      const calls = hybrid.queryEmbeddings;
      for (const a of Object.values(legMs)) a.length = 0;
      const cpu0 = await cpuSeconds();
      const { lat, errors, budget } = await measure(m.queries(), clients, SECONDS);
      const cpu = await cpuSeconds();
      const a = (lat.all ?? []).sort((x, y) => x - y);
      // Every query of the run (the first 3 s included) used CPU; count them from the client side.
      const queries = a.length * (SECONDS / (SECONDS - 3));
      console.log(
        `${m.name.padEnd(17)} ${clients} client(s): n=${a.length} p50 ${pct(a, 50).toFixed(1)} ms p95 ${pct(a, 95).toFixed(1)} ms ` +
          `p99 ${pct(a, 99).toFixed(1)} ms ${(a.length / (SECONDS - 3)).toFixed(1)} q/s, ${errors} errors` +
          (m.name.startsWith('hybrid') ? `; ${hybrid.queryEmbeddings - calls} query embeddings, ${budget} lexical-only (budget)` : '') +
          `; CPU per query ${((1000 * (cpu.node - cpu0.node)) / queries).toFixed(1)} ms here + ${((1000 * (cpu.pg - cpu0.pg)) / queries).toFixed(1)} ms PostgreSQL` +
          `; load ${os.loadavg()[0].toFixed(1)}`,
      );
      if (m.name.startsWith('hybrid')) {
        console.log(`  legs: lexical ${spread(legMs.lexical)}; vector (embedding wait + k-NN) ${spread(legMs.vector)}; model calls ${spread(legMs.embed)}`);
      }
    }
  }
  await happ.close();
  hybrid.close();
  await embedder.close?.();
}
