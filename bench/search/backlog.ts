/**
 * Searching while a first import is embedded (issue 20): a real `memex serve` (default model and
 * settings) receives N generated emails through POST /v1/ingest:batch, and while the worker embeds
 * the backlog one client sends *new* queries (never repeated, so the query cache cannot help), one
 * after another with a short pause. Reports new-query latency and how each query was answered
 * (hybrid, or lexical-only with the reason from `legs.vector_skipped`), the time from the first
 * ingest request until every email is `indexed` (time to searchable), and the model's share of that
 * time: the same chunk texts measured afterwards on the raw thread pool alone.
 *
 * Where the time goes, from the server's /metrics (scraped at the start and at the end): how much
 * of the time the bulk model threads had work (the rest is the pipeline not feeding them), how much
 * of that they ran and how much they waited for a CPU (the machine); and the gateway thread's own
 * CPU and run-queue wait (Linux schedstat), which is what a search's non-model work waits for.
 *
 *   node --import tsx bench/search/backlog.ts [--pg] [--docs 10000] [--sample 400] [--max-minutes 0]
 *
 * --max-minutes stops waiting for the backlog after that long (0: wait until every email is
 * indexed) and reports the rate so far and the projected time to searchable instead.
 */
import fs from 'node:fs';
import os from 'node:os';
import { chunkText } from '../../src/catalog/chunking.ts';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createPooledEmbedder } from '../../src/embedding/pool.ts';
import { normaliseText } from '../../src/util/hash.ts';
import { message, rng, sentence } from '../lib/generate.ts';
import { machineLine, percentile, startBenchServer } from '../lib/server.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const backend = args.includes('--pg') ? 'postgres' : 'pglite';
const N = opt('--docs', 10_000);
const SAMPLE = opt('--sample', 400);
const MAX_MS = opt('--max-minutes', 0) * 60_000;
const BATCH = 100;

const r = rng(20);
const emails: Record<string, any>[] = [];
for (let i = 0; emails.length < N; i++) {
  const m = message(r, i);
  if (m.source_type === 'email') emails.push(m);
}

const server = await startBenchServer(backend);
const auth = { authorization: `Bearer ${server.token}` };
console.log(`machine: ${machineLine()}; load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const embeddingEnv = Object.entries(process.env).filter(([k]) => k.startsWith('EMBEDDING_') || k.startsWith('SEARCH_'));
console.log(`${backend}: ${N} emails, embedding and search settings: ${embeddingEnv.length ? embeddingEnv.map(([k, v]) => `${k}=${v}`).join(' ') : 'defaults'}`);

const status = async () => (await fetch(`${server.url}/v1/status`, { headers: auth })).json() as Promise<any>;
const indexed = (s: any) => s.documents.by_source.filter((x: any) => x.status === 'indexed').reduce((a: number, x: any) => a + x.count, 0);

/** Prometheus text -> value of `name{labels}` (labels as written, e.g. 'role="bulk"'), 0 if absent. */
const metrics = async () => {
  const text = await (await fetch(`${server.url}/metrics`, { headers: auth })).text();
  return (name: string, labels = '') => {
    const m = text.split('\n').find((l) => l.startsWith(labels ? `${name}{${labels}}` : `${name} `));
    return m ? Number(m.slice(m.lastIndexOf(' ') + 1)) : 0;
  };
};
/** The gateway (main) thread's CPU and run-queue wait in seconds; undefined off Linux. */
const mainThread = () => {
  try {
    const [run, wait] = fs.readFileSync(`/proc/${server.child.pid}/task/${server.child.pid}/schedstat`, 'utf8').split(' ').map(Number);
    return { cpu: run / 1e9, wait: wait / 1e9 };
  } catch {
    return undefined;
  }
};

const m0 = await metrics();
const main0 = mainThread();
const t0 = performance.now();
let ingestDone = 0;
const ingest = (async () => {
  for (let i = 0; i < emails.length; i += BATCH) {
    const res = await fetch(`${server.url}/v1/ingest:batch`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ documents: emails.slice(i, i + BATCH) }),
    });
    if (res.status >= 300 && res.status !== 207) throw new Error(`batch ${i}: ${res.status} ${await res.text()}`);
    await res.arrayBuffer();
  }
  ingestDone = performance.now();
})();

// New queries while the backlog is embedded: 2–4 words, never the same text twice.
const q = rng(7);
const asked = new Set<string>();
const lat: number[] = [];
// Split by phase: while ingest requests are still being answered (the gateway thread is writing the
// import) and afterwards, when only the embedding backlog remains.
const latIngest: number[] = [];
const latEmbedding: number[] = [];
const how = new Map<string, number>();
let withResults = 0;
let stop = false;
const client = (async () => {
  while (!stop) {
    let text = '';
    do text = sentence(q, 2, 5).slice(0, -1).toLowerCase(); while (asked.has(text));
    asked.add(text);
    const s = performance.now();
    const res = await fetch(`${server.url}/v1/search?${new URLSearchParams({ q: text, k: '20' })}`, { headers: auth });
    const body = (await res.json()) as any;
    lat.push(performance.now() - s);
    (ingestDone ? latEmbedding : latIngest).push(performance.now() - s);
    if (body.hits?.length > 0) withResults++;
    const kind = res.status !== 200 ? `http ${res.status}` : body.legs.vector ? 'hybrid' : `lexical-only (${body.legs.vector_skipped ?? 'no match'})`;
    how.set(kind, (how.get(kind) ?? 0) + 1);
    await new Promise((done) => setTimeout(done, 250));
  }
})();

let last = 0;
let end = 0;
let done = 0;
let chunks = 0;
let totalChunks = 0;
let finished = false;
for (;;) {
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const s = await status();
  const n = indexed(s);
  if (performance.now() - last > 30_000) {
    last = performance.now();
    console.log(`  ${((performance.now() - t0) / 1000).toFixed(0)} s: ${n}/${N} indexed, ${s.queue.waiting} chunks waiting, ${s.throughput.chunks_embedded.last_minute.toFixed(1)} chunks/s, load ${os.loadavg()[0].toFixed(1)}`);
  }
  finished = ingestDone > 0 && n >= N;
  if (finished || (MAX_MS > 0 && performance.now() - t0 > MAX_MS)) {
    end = performance.now();
    done = n;
    chunks = s.chunks.embedded;
    totalChunks = s.chunks.embedded + s.chunks.pending + s.chunks.processing + s.chunks.failed;
    break;
  }
}
const m1 = await metrics();
const main1 = mainThread();
stop = true;
await client;
await ingest;
const loadEnd = os.loadavg();
const rss = server.peakRssMb();
await server.stop();

lat.sort((a, b) => a - b);
const total = (end - t0) / 1000;
const rate = chunks / total;
const searchable = finished ? total : total + (totalChunks - chunks) / rate;
const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(0)} %`;
console.log(`ingest of ${N} emails answered in ${((ingestDone - t0) / 1000).toFixed(1)} s`);
if (finished) console.log(`time to searchable: every email indexed after ${total.toFixed(1)} s (${chunks} chunks, ${rate.toFixed(1)} chunks/s)`);
else console.log(`stopped after ${total.toFixed(1)} s (--max-minutes): ${done}/${N} emails indexed, ${chunks}/${totalChunks} chunks (${rate.toFixed(2)} chunks/s); at that rate time to searchable ≈ ${searchable.toFixed(0)} s`);
const cfg = loadEmbeddingConfig(process.env);
const threads = cfg.threads;
const d = (name: string, role: string) => m1(name, `role="${role}"`) - m0(name, `role="${role}"`);
const span = threads * total;
const busy = d('embedding_pool_busy_seconds_total', 'bulk');
const cpu = d('embedding_pool_cpu_seconds_total', 'bulk');
const wait = d('embedding_pool_cpu_wait_seconds_total', 'bulk');
console.log(
  `bulk model threads (${threads}) during the backlog: had work ${pct(busy, span)} of the time (idle, waiting for the pipeline: ${pct(span - busy, span)}); ` +
    `on a CPU ${pct(cpu, span)}, runnable but waiting for a CPU ${pct(wait, span)}; ${((1000 * cpu) / Math.max(1, d('embedding_pool_texts_total', 'bulk'))).toFixed(1)} CPU-ms/chunk`,
);
const qJobs = d('embedding_pool_texts_total', 'query');
if (qJobs) console.log(`query thread: ${qJobs} query embeddings, ${((1000 * d('embedding_pool_cpu_seconds_total', 'query')) / qJobs).toFixed(1)} CPU-ms and ${((1000 * d('embedding_pool_cpu_wait_seconds_total', 'query')) / qJobs).toFixed(1)} ms waiting for a CPU each, ${((1000 * d('embedding_pool_busy_seconds_total', 'query')) / qJobs).toFixed(1)} ms in the thread each`);
if (main0 && main1) console.log(`gateway thread: on a CPU ${pct(main1.cpu - main0.cpu, total)} of the time, runnable but waiting for a CPU ${pct(main1.wait - main0.wait, total)}; event loop delay p99 ${(1000 * m1('nodejs_eventloop_lag_p99_seconds')).toFixed(0)} ms, max ${(1000 * m1('nodejs_eventloop_lag_max_seconds')).toFixed(0)} ms`);
console.log(`new queries during the backlog: n=${lat.length} p50 ${percentile(lat, 50).toFixed(1)} ms p95 ${percentile(lat, 95).toFixed(1)} ms p99 ${percentile(lat, 99).toFixed(1)} ms max ${lat.at(-1)?.toFixed(1)} ms; ${withResults} with results`);
const summary = (xs: number[]) => (xs.sort((a, b) => a - b), `n=${xs.length} p50 ${percentile(xs, 50).toFixed(1)} ms p95 ${percentile(xs, 95).toFixed(1)} ms p99 ${percentile(xs, 99).toFixed(1)} ms`);
console.log(`  while the ingest requests ran: ${summary(latIngest)}; afterwards (embedding only): ${summary(latEmbedding)}`);
console.log(`answered: ${[...how].map(([k, v]) => `${k} ${v}`).join(', ')}`);
console.log(`server peak RSS ${rss} MB; load average at end ${loadEnd.map((x) => x.toFixed(1)).join(' ')}`);

// The model alone, after the figures above are printed (it is slow on a crowded machine): a sample of the
// same chunk texts through the raw pool (default threads, no query thread).
const pool = await createPooledEmbedder(cfg, cfg.threads, { queryThread: false });
const sample = emails.slice(0, SAMPLE).flatMap((e) => chunkText(normaliseText(e.content.data)).map((c) => c.text));
await pool.embed(sample.slice(0, 16));
const cpuBefore = pool.stats().work.bulk.cpuSeconds;
const w0 = performance.now();
await pool.embed(sample);
const perChunk = (performance.now() - w0) / sample.length;
const cpuPerChunk = ((pool.stats().work.bulk.cpuSeconds - cpuBefore) * 1000) / sample.length;
await pool.close?.();
const model = (perChunk * totalChunks) / 1000;
console.log(`model alone (raw pool, ${cfg.threads} threads, ${sample.length} chunks of the first ${SAMPLE} emails, after the server stopped): ${perChunk.toFixed(1)} ms/chunk wall (${(1000 / perChunk).toFixed(1)} chunks/s), ${cpuPerChunk.toFixed(1)} CPU-ms/chunk; ${model.toFixed(1)} s for all ${totalChunks} chunks = ${pct(model, searchable)} of the time to searchable`);
