/**
 * Scale (issue 34): a store of N generated documents served by a real `memex serve` child process,
 * measured from outside as an operator would:
 *
 *   1. ingest: N documents through POST /v1/ingest:batch (500 a request, 2 clients), documents/s;
 *      the embedding worker off (EMBEDDING_WORKER=false: the model's rate is bench/embed's subject);
 *   2. the database's size and the server's RSS once everything is stored;
 *   3. a restart: process start to GET /v1/readyz 200 (searches answered from a complete index),
 *      the server's own phase lines, and its RSS then; twice: with the index read from the
 *      database (SEARCH_INDEX_SNAPSHOT=false), then from its snapshot (DATA_DIR/search-index.snapshot,
 *      written at the stop before);
 *   4. lexical search p50/p95/p99 at 1 and 8 clients (the planned queries of bench/search: keywords,
 *      phrases, a person, a date range, a thread).
 *   5. with --vectors: every chunk given a vector, then a restart, hybrid search p50/p95/p99 at 1 and
 *      8 clients, and the same with the vector-memory cap (SEARCH_VECTOR_MEMORY_MB) set below the
 *      store's vectors, as a store past the default 256 MB (~500k chunks) would run. The vectors come
 *      from the hashing embedder at USE-lite's 512 dimensions (EMBEDDING_PROVIDER=hash): what is
 *      measured here is storing, loading and scanning vectors, whose cost does not depend on their
 *      values; the real model's rate is bench/embed's subject and would take hours at this size.
 *
 * The documents are bench/search's generated corpus (corpus.ts): emails in threads, chats, sms and
 * notes over two years between 300 people, words drawn with a Zipf law from real English (SciFact's
 * abstracts, ../shared/data/scifact), 30-1,300 characters.
 *
 *   node --import tsx bench/scale/run.ts [--docs 100000] [--pglite] [--seconds 20] [--empty] [--vectors]
 *
 * PostgreSQL by default, on a database of its own (created, dropped at the end); --pglite uses a
 * temporary DATA_DIR. --empty: the start of an empty store only (N = 0), three times.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { generateCorpus, type BenchDocument, type PlannedQuery } from '../search/corpus.ts';
import { machineLine, percentile, ROOT } from '../lib/server.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const empty = args.includes('--empty');
const N = empty ? 0 : opt('--docs', 100_000);
const SECONDS = opt('--seconds', 20);
const backend = args.includes('--pglite') ? 'pglite' : 'postgres';
const withVectors = args.includes('--vectors');
/** The server's environment for every start; with --vectors the hashing embedder at USE-lite's width. */
const VECTOR_ENV: Record<string, string> = withVectors ? { EMBEDDING_PROVIDER: 'hash', EMBEDDING_HASH_DIMS: '512' } : {};
const TOKEN = 'bench-token-0123456789';
const BATCH = 500;

const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
console.log(`scale bench: ${N} documents on ${backend}; ${machineLine()}; load ${load()}`);

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-scale-'));
const adminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
let databaseUrl: string | undefined;
const dbName = `memex_scale_${Date.now()}`;
async function admin(sql: string): Promise<any[]> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}
if (backend === 'postgres') {
  await admin(`CREATE DATABASE ${dbName}`);
  const u = new URL(adminUrl);
  u.pathname = `/${dbName}`;
  databaseUrl = u.toString();
}
const port = 20000 + Math.floor(Math.random() * 20000);
const base = `http://127.0.0.1:${port}`;

interface Served {
  child: ChildProcess;
  /** Process start to the first 200 from /v1/readyz, in seconds. */
  readyS: number;
  lines: string[];
}

function rssMb(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** `memex serve` as a user starts it (bin/memex.js), timed from the spawn to readiness. */
async function serve(env: Record<string, string> = {}): Promise<Served> {
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(ROOT, 'bin', 'memex.js'), 'serve'], {
    cwd: ROOT,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      AUTH_TOKEN: TOKEN,
      LOG_LEVEL: 'warn',
      OCR_ENABLED: 'false',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...VECTOR_ENV,
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const lines: string[] = [];
  let buf = '';
  child.stderr!.on('data', (c: Buffer) => {
    buf += c.toString();
    for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (line.startsWith('memex:')) lines.push(line);
    }
  });
  for (;;) {
    if (child.exitCode !== null) throw new Error(`memex serve exited with ${child.exitCode}: ${lines.join('\n')}${buf}`);
    try {
      const r = await fetch(`${base}/v1/readyz`);
      if (r.status === 200) break;
    } catch {
      /* the port is not open yet */
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { child, readyS: (performance.now() - started) / 1000, lines };
}

async function stop(s: Served): Promise<void> {
  s.child.kill('SIGTERM');
  if (s.child.exitCode === null) await new Promise((r) => s.child.once('exit', r));
}

function body(d: BenchDocument): Record<string, unknown> {
  const person = (p: BenchDocument['sender'], role: string) => ({
    identifier: d.source === 'email' ? p.email : p.phone,
    identifier_type: d.source === 'email' ? 'email' : 'phone',
    role,
    display_name: p.name,
  });
  return {
    source_type: d.source,
    source_id: d.id,
    title: d.title,
    content: { mime_type: 'text/plain', data: d.text },
    content_timestamp: new Date(d.ts).toISOString(),
    people: d.source === 'note' ? [] : [person(d.sender, 'sender'), person(d.to, 'recipient')],
    ...(d.thread ? { thread: { external_id: d.thread, title: d.title ?? `Thread ${d.thread.slice(0, 8)}` } } : {}),
    metadata: d.att ? { attachments: [{ index: 0, kind: 'image', mime_type: 'image/jpeg', size_bytes: 48_213 }] } : {},
  };
}

const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
const corpus = generateCorpus(N);

async function ingestAll(): Promise<number> {
  const batches = corpus.batches(BATCH);
  const started = performance.now();
  let done = 0;
  let lastSaid = 0;
  const client = async () => {
    for (;;) {
      const next = batches.next();
      if (next.done) return;
      const res = await fetch(`${base}/v1/ingest:batch`, { method: 'POST', headers, body: JSON.stringify({ documents: next.value.map(body) }) });
      if (res.status >= 300 && res.status !== 207) throw new Error(`ingest ${res.status}: ${(await res.text()).slice(0, 300)}`);
      await res.text();
      done += next.value.length;
      if (done - lastSaid >= 50_000) {
        lastSaid = done;
        console.log(`  ingested ${done} (${Math.round(done / ((performance.now() - started) / 1000))} docs/s, load ${load()})`);
      }
    }
  };
  await Promise.all([client(), client()]);
  return done / ((performance.now() - started) / 1000);
}

async function databaseMb(): Promise<number> {
  if (backend === 'postgres') return Math.round(Number((await admin(`SELECT pg_database_size('${dbName}') AS b`))[0].b) / 2 ** 20);
  let bytes = 0;
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else bytes += fs.statSync(p).size;
    }
  };
  walk(path.join(dataDir, 'pglite'));
  return Math.round(bytes / 2 ** 20);
}

function url(q: PlannedQuery): string {
  const { kind: _kind, ...params } = q;
  const p = new URLSearchParams({ k: '20' });
  for (const [key, v] of Object.entries(params)) p.set(key, String(v));
  return `${base}/v1/search?${p}`;
}

/** `clients` concurrent clients for SECONDS over the planned queries: latencies in ms. */
async function latencies(queries: string[], clients: number): Promise<number[]> {
  const lat: number[] = [];
  const slowest: { ms: number; at: number; q: string; legs: unknown }[] = [];
  const started = performance.now();
  const until = started + SECONDS * 1000;
  let next = 0;
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (performance.now() < until) {
        const u = queries[next++ % queries.length];
        const t = performance.now();
        const res = await fetch(u, { headers });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`search ${res.status}`);
        const ms = performance.now() - t;
        lat.push(ms);
        if (slowest.length < 3 || ms > slowest[2].ms) {
          const legs = (JSON.parse(text) as { legs?: unknown }).legs;
          slowest.push({ ms, at: (t - started) / 1000, q: new URL(u).search, legs });
          slowest.sort((a, b) => b.ms - a.ms).splice(3);
        }
      }
    }),
  );
  // The tail says more with its queries: which kind, when in the run, and what each leg reported.
  for (const s of slowest) console.log(`    slow: ${s.ms.toFixed(0)} ms at ${s.at.toFixed(1)} s, ${s.q}, legs ${JSON.stringify(s.legs)}`);
  return lat.sort((a, b) => a - b);
}

interface Status {
  chunks: { pending: number; processing: number; embedded: number; total: number };
}
async function status(): Promise<Status> {
  const res = await fetch(`${base}/v1/status`, { headers });
  if (res.status !== 200) throw new Error(`status ${res.status}`);
  return (await res.json()) as Status;
}

/** Waits until the embedding worker has given every chunk a vector: chunks per second. */
async function embedAll(): Promise<number> {
  const started = performance.now();
  let lastSaid = started;
  for (;;) {
    const { chunks } = await status();
    if (chunks.pending + chunks.processing === 0) return chunks.embedded / ((performance.now() - started) / 1000);
    if (performance.now() - lastSaid > 60_000) {
      lastSaid = performance.now();
      console.log(`  embedded ${chunks.embedded} of ${chunks.total} chunks (load ${load()})`);
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

const fmt = (l: number[]) => `p50 ${percentile(l, 50).toFixed(1)} ms, p95 ${percentile(l, 95).toFixed(1)} ms, p99 ${percentile(l, 99).toFixed(1)} ms (${l.length} searches)`;

try {
  if (empty) {
    for (let i = 0; i < 3; i++) {
      if (i > 0 && backend === 'pglite') fs.rmSync(path.join(dataDir, 'pglite'), { recursive: true, force: true });
      const s = await serve();
      console.log(`empty store, start ${i + 1}: ready in ${s.readyS.toFixed(1)} s; RSS ${rssMb(s.child.pid!)} MB; load ${load()}`);
      for (const l of s.lines) console.log(`    ${l}`);
      await stop(s);
    }
  } else {
    const first = await serve({ EMBEDDING_WORKER: 'false' });
    console.log(`first start (empty): ready in ${first.readyS.toFixed(1)} s`);
    const rate = await ingestAll();
    console.log(`ingest: ${N} documents at ${Math.round(rate)} docs/s (2 clients, ${BATCH} a request); load ${load()}`);
    console.log(`database: ${await databaseMb()} MB; server RSS after ingest ${rssMb(first.child.pid!)} MB`);
    let stopping = performance.now();
    await stop(first);
    const snapshotFile = path.join(dataDir, 'search-index.snapshot');
    const snapshotMb = () => (fs.existsSync(snapshotFile) ? (fs.statSync(snapshotFile).size / 2 ** 20).toFixed(1) : 'none');
    console.log(`stop: ${((performance.now() - stopping) / 1000).toFixed(1)} s (the index snapshot written: ${snapshotMb()} MB)`);

    // The same restart twice: reading every document (the snapshot switched off), then from the snapshot.
    const rebuilt = await serve({ EMBEDDING_WORKER: 'false', SEARCH_INDEX_SNAPSHOT: 'false' });
    console.log(`restart with ${N} documents, index read from the database: ready in ${rebuilt.readyS.toFixed(1)} s; RSS at ready ${rssMb(rebuilt.child.pid!)} MB; load ${load()}`);
    for (const l of rebuilt.lines) console.log(`    ${l}`);
    await stop(rebuilt);

    const again = await serve({ EMBEDDING_WORKER: 'false' });
    console.log(`restart with ${N} documents, index read from its snapshot: ready in ${again.readyS.toFixed(1)} s; RSS at ready ${rssMb(again.child.pid!)} MB; load ${load()}`);
    for (const l of again.lines) console.log(`    ${l}`);
    const queries = corpus.plan(20_000).map(url);
    const measure = async (leg: string, s: Served) => {
      for (const clients of [1, 8]) {
        await latencies(queries.slice(0, 50), clients); // warm-up
        console.log(`${leg}, ${clients} client(s): ${fmt(await latencies(queries, clients))}; RSS ${rssMb(s.child.pid!)} MB; load ${load()}`);
      }
    };
    await measure('lexical', again);
    stopping = performance.now();
    await stop(again);
    console.log(`stop: ${((performance.now() - stopping) / 1000).toFixed(1)} s (snapshot ${snapshotMb()} MB)`);

    if (withVectors) {
      const embedding = await serve();
      const perSecond = await embedAll();
      const { chunks } = await status();
      console.log(`vectors: ${chunks.embedded} chunks at ${Math.round(perSecond)}/s (hashing embedder, 512 dimensions); database ${await databaseMb()} MB; RSS ${rssMb(embedding.child.pid!)} MB; load ${load()}`);
      await stop(embedding);
      const hybrid = await serve();
      console.log(`restart with ${chunks.embedded} vectors: ready in ${hybrid.readyS.toFixed(1)} s; RSS at ready ${rssMb(hybrid.child.pid!)} MB; load ${load()}`);
      for (const l of hybrid.lines) console.log(`    ${l}`);
      await measure('hybrid', hybrid);
      await stop(hybrid);
      // Past the cap: a quarter of the store's 8-bit copies fit (512 bytes a chunk), the rest is read per query.
      const capMb = Math.max(1, Math.floor((chunks.embedded * 512) / 4 / 2 ** 20));
      const capped = await serve({ SEARCH_VECTOR_MEMORY_MB: String(capMb) });
      await measure(`hybrid, vector memory capped at ${capMb} MB (a quarter of the vectors)`, capped);
      await stop(capped);
    }
  }
} finally {
  fs.rmSync(dataDir, { recursive: true, force: true });
  if (backend === 'postgres') await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
}
