/**
 * Embedding pipeline benchmark. Inserts N realistic message-like chunks and measures, in one run:
 *   - raw model throughput: embed() alone on the same texts and batch size, single thread (model on
 *     the main thread) and with the worker-thread pool;
 *   - pipeline throughput pending -> embedded through the worker, on PGlite and on PostgreSQL;
 *   - GET /healthz latency (a tiny HTTP server doing SELECT 1, probed from a child process) and
 *     event-loop lag while the worker runs; peak RSS.
 *
 *   node --import tsx bench/embed/run.ts [--chunks 5000] [--batch 32] [--threads N] [--backends pglite,postgres]
 * PostgreSQL: TEST_DATABASE_URL (default postgres://postgres@127.0.0.1:5432/postgres); a throwaway
 * database is created and dropped.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import os from 'node:os';
import { fork } from 'node:child_process';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import pg from 'pg';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createPooledEmbedder } from '../../src/embedding/pool.ts';
import { createUseLiteEmbedder } from '../../src/embedding/providers/use-lite.ts';
import type { Embedder } from '../../src/embedding/types.ts';
import { startEmbeddingWorker } from '../../src/embedding/worker.ts';
import { embeddingStatus } from '../../src/embedding/ops.ts';
import { createProgress } from '../../src/embedding/progress.ts';
import { insertManyDocuments } from '../../test/embedding/fixtures.ts';

function arg(name: string, def: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? process.argv[i + 1] : def;
}
const N = Number(arg('chunks', '5000'));
const BATCH = Number(arg('batch', '32'));
const THREADS = Number(arg('threads', String(os.availableParallelism())));
const BACKENDS = arg('backends', 'pglite,postgres').split(',');
const SERVER_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

// ---- realistic texts: chat messages, emails, notes; 10% long enough to need several windows ----
let seed = 42;
const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
const names = ['Maria', 'Tom', 'Aisha', 'Kenji', 'Lena', 'Carlos', 'Priya', 'Sam', 'Olga', 'David'];
const places = ['the office', 'Lisbon', 'the dentist', 'the airport', 'Cafe Nero', 'the school', 'Berlin', 'the gym'];
const days = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'tomorrow', 'next week', 'tonight'];
const topics = ['the quarterly budget', 'the kitchen renovation', 'our flight tickets', 'the project deadline',
  'the insurance claim', 'the birthday party', 'the server outage', 'the rent increase', 'the new contract', 'soccer practice'];
const templates = [
  () => `Hey ${pick(names)}, are we still meeting at ${pick(places)} ${pick(days)}?`,
  () => `Can you send me the notes about ${pick(topics)} before ${pick(days)}?`,
  () => `Reminder: ${pick(topics)} is due ${pick(days)}. Please check with ${pick(names)}.`,
  () => `I just landed in ${pick(places)}. Traffic is terrible, I'll be about ${Math.floor(rnd() * 50) + 10} minutes late.`,
  () => `Thanks ${pick(names)}! The invoice for ${pick(topics)} came to ${Math.floor(rnd() * 900) + 100} euros, I paid it this morning.`,
  () => `Dear ${pick(names)}, following up on our call about ${pick(topics)}: we agreed to revisit the numbers ${pick(days)} and to share a draft with ${pick(names)} first.`,
  () => `Don't forget to pick up the kids from ${pick(places)} at ${Math.floor(rnd() * 4) + 3}:30.`,
];
/** Mostly 1-3 sentence messages; 10% are full catalog chunks (the catalog cuts at 1,200 characters). */
function makeText(i: number): string {
  const long = rnd() < 0.1;
  const sentences = long ? 40 : 1 + Math.floor(rnd() * 3);
  const parts: string[] = [];
  for (let s = 0; s < sentences; s++) parts.push(pick(templates)());
  let t = parts.join(' ');
  if (t.length > 1190) t = t.slice(0, t.lastIndexOf(' ', 1190));
  return `${t} (#${i})`;
}
const texts = Array.from({ length: N }, (_, i) => makeText(i));

function pct(a: number[], p: number): number {
  const s = [...a].sort((x, y) => x - y);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : NaN;
}
const fmt = (x: number, d = 1) => x.toFixed(d);

/** CPU of this whole process (all threads) per chunk, and CPU-seconds per wall-second (cores in use). */
function cpuSince(c0: NodeJS.CpuUsage, wallS: number, n: number) {
  const c = process.cpuUsage(c0);
  const cpuS = (c.user + c.system) / 1e6;
  return { cpuMsPerChunk: (cpuS * 1000) / n, cores: cpuS / wallS };
}
const load = () => os.loadavg()[0].toFixed(1);
interface Raw { rate: number; cpuMsPerChunk: number; cores: number }

async function rawThroughput(e: Embedder, label: string, concurrency: number): Promise<Raw> {
  const batches: string[][] = [];
  for (let i = 0; i < texts.length; i += BATCH) batches.push(texts.slice(i, i + BATCH));
  const p = createProgress({ label: `raw ${label}`, total: texts.length, lineEveryMs: 15_000 });
  let done = 0;
  let next = 0;
  const t0 = performance.now();
  const c0 = process.cpuUsage();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) {
        const b = batches[next++];
        await e.embed(b, 'passage');
        done += b.length;
        p.update(done);
      }
    }),
  );
  const s = (performance.now() - t0) / 1000;
  p.stop();
  return { rate: texts.length / s, ...cpuSince(c0, s, texts.length) };
}

async function openBackend(kind: string): Promise<{ db: Database; drop: () => Promise<void> }> {
  if (kind === 'pglite') {
    const db = await openDatabase({});
    return { db, drop: () => db.close() };
  }
  const name = `memex_bench_${crypto.randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: SERVER_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const u = new URL(SERVER_URL);
  u.pathname = `/${name}`;
  const db = await openDatabase({ databaseUrl: u.toString() });
  return {
    db,
    async drop() {
      await db.close();
      const a = new pg.Client({ connectionString: SERVER_URL });
      await a.connect();
      await a.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await a.end();
    },
  };
}

interface PipelineResult { cpuMsPerChunk: number; cores: number; rate: number; healthP50: number; healthP95: number; healthMax: number; lagP95: number; lagMax: number; probes: number }

async function pipeline(kind: string, embedder: Embedder): Promise<PipelineResult> {
  const { db, drop } = await openBackend(kind);
  try {
    await insertManyDocuments(db, texts);
    // The gateway's health route stand-in: answers after a database round trip.
    const server = http.createServer(async (req, res) => {
      if (req.url === '/healthz') {
        await db.query('SELECT 1');
        res.setHeader('content-type', 'application/json');
        res.end('{"status":"ok"}');
      } else {
        res.statusCode = 404;
        res.end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const probe = fork(new URL('./healthz-probe.mjs', import.meta.url), [], {
      env: { ...process.env, PROBE_URL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/healthz` },
    });
    const lag = monitorEventLoopDelay({ resolution: 10 });
    lag.enable();
    const p = createProgress({ label: `pipeline ${kind}`, total: texts.length, lineEveryMs: 15_000 });
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    const w = startEmbeddingWorker({ db, embedder, batchSize: BATCH, concurrency: THREADS, pollMs: 50, leaseSeconds: 600,
      onBatch: (s) => p.update(s.embedded + s.reused + s.empty) });
    let s;
    for (;;) {
      s = await embeddingStatus(db);
      if (s.chunks.pending + s.chunks.processing === 0) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const secs = (performance.now() - t0) / 1000;
    await w.stop();
    p.stop();
    lag.disable();
    const lat: number[] = await new Promise((resolve) => {
      probe.once('message', (m: any) => resolve(m.latencies));
      probe.send('stop');
    });
    server.close();
    if (s.chunks.embedded !== texts.length) throw new Error(`only ${s.chunks.embedded} of ${texts.length} embedded (${s.chunks.failed} failed)`);
    const ok = lat.filter((x) => x >= 0);
    return {
      ...cpuSince(c0, secs, texts.length),
      rate: texts.length / secs,
      healthP50: pct(ok, 50), healthP95: pct(ok, 95), healthMax: Math.max(...ok), probes: ok.length,
      lagP95: lag.percentile(95) / 1e6, lagMax: lag.max / 1e6,
    };
  } finally {
    await drop();
  }
}

const words = texts.reduce((n, t) => n + t.split(/\s+/).length, 0);
console.log(`# embed bench: ${N} chunks (avg ${fmt(words / N)} words), batch ${BATCH}, threads ${THREADS}, ` +
  `${os.cpus().length} cores (${os.cpus()[0]?.model.trim()}), Node ${process.version}`);

const single = await createUseLiteEmbedder();
console.log(`load average at start: ${load()}`);
const rawSingle = await rawThroughput(single, 'single thread (main)', 1);
console.log(`raw use-lite, single thread:  ${fmt(rawSingle.rate)} chunks/s | ${fmt(rawSingle.cpuMsPerChunk)} CPU-ms/chunk | ${fmt(rawSingle.cores, 2)} cores busy | load ${load()}`);
const pool = await createPooledEmbedder(loadEmbeddingConfig({}), THREADS, { queryThread: false });
const rawPool = await rawThroughput(pool, `pool x${THREADS}`, THREADS);
console.log(`raw use-lite, ${THREADS}-thread pool: ${fmt(rawPool.rate)} chunks/s (${fmt(rawPool.rate / rawSingle.rate, 2)}x single) | ` +
  `${fmt(rawPool.cpuMsPerChunk)} CPU-ms/chunk | ${fmt(rawPool.cores, 2)} cores busy | load ${load()}`);

const results: Record<string, PipelineResult> = {};
for (const b of BACKENDS) {
  results[b] = await pipeline(b, pool);
  const r = results[b];
  console.log(`pipeline ${b.padEnd(8)} pending->embedded: ${fmt(r.rate)} chunks/s = ${fmt((100 * r.rate) / rawPool.rate)}% of raw pool` +
    ` | ${fmt(r.cpuMsPerChunk)} CPU-ms/chunk in this process (${fmt((100 * rawPool.cpuMsPerChunk) / r.cpuMsPerChunk)}% CPU efficiency vs raw pool)` +
    ` | ${fmt(r.cores, 2)} cores busy | GET /healthz p50 ${fmt(r.healthP50)} ms p95 ${fmt(r.healthP95)} ms max ${fmt(r.healthMax)} ms (${r.probes} probes)` +
    ` | event-loop lag p95 ${fmt(r.lagP95)} ms max ${fmt(r.lagMax)} ms | load ${load()}`);
}
await pool.close?.();
console.log(`peak RSS: ${fmt(process.resourceUsage().maxRSS / 1024, 0)} MB`);
