/**
 * Searching while a first import is embedded (issue 20): a real `memex serve` (default model and
 * settings) receives N generated emails through POST /v1/ingest:batch, and while the worker embeds
 * the backlog one client sends *new* queries (never repeated, so the query cache cannot help), one
 * after another with a short pause. Reports new-query latency and how each query was answered
 * (hybrid, or lexical-only with the reason from `legs.vector_skipped`), the time from the first
 * ingest request until every email is `indexed` (time to searchable), and the model's share of that
 * time: the same texts' worth of embedding measured afterwards on the raw thread pool alone.
 *
 *   node --import tsx bench/search/backlog.ts [--pg] [--docs 10000] [--sample 400]
 */
import os from 'node:os';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createPooledEmbedder } from '../../src/embedding/pool.ts';
import { message, rng, sentence } from '../lib/generate.ts';
import { machineLine, percentile, startBenchServer } from '../lib/server.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const backend = args.includes('--pg') ? 'postgres' : 'pglite';
const N = opt('--docs', 10_000);
const SAMPLE = opt('--sample', 400);
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
const how = new Map<string, number>();
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
    const kind = res.status !== 200 ? `http ${res.status}` : body.legs.vector ? 'hybrid' : `lexical-only (${body.legs.vector_skipped ?? 'no match'})`;
    how.set(kind, (how.get(kind) ?? 0) + 1);
    await new Promise((done) => setTimeout(done, 250));
  }
})();

let last = 0;
let searchable = 0;
let chunks = 0;
for (;;) {
  await new Promise((done) => setTimeout(done, 2000));
  const s = await status();
  const n = indexed(s);
  if (performance.now() - last > 30_000) {
    last = performance.now();
    console.log(`  ${((performance.now() - t0) / 1000).toFixed(0)} s: ${n}/${N} indexed, ${s.queue.waiting} chunks waiting, ${s.throughput.chunks_embedded.last_minute.toFixed(1)} chunks/s, load ${os.loadavg()[0].toFixed(1)}`);
  }
  if (ingestDone && n >= N) {
    searchable = performance.now();
    chunks = s.chunks.embedded;
    break;
  }
}
stop = true;
await client;
await ingest;
const loadEnd = os.loadavg();
const rss = server.peakRssMb();
await server.stop();

// The model alone: a sample of the same emails through the raw pool (default threads, no query thread).
const cfg = loadEmbeddingConfig(process.env);
const pool = await createPooledEmbedder(cfg, cfg.threads, { queryThread: false });
const sample = emails.slice(0, SAMPLE).map((e) => `${e.title}\n${e.content.data}`);
await pool.embed(sample.slice(0, 16));
const m0 = performance.now();
await pool.embed(sample);
const perDoc = (performance.now() - m0) / SAMPLE;
await pool.close?.();

lat.sort((a, b) => a - b);
const total = (searchable - t0) / 1000;
const model = (perDoc * N) / 1000;
console.log(`ingest of ${N} emails answered in ${((ingestDone - t0) / 1000).toFixed(1)} s; all indexed after ${total.toFixed(1)} s (${chunks} chunks, ${(chunks / total).toFixed(1)} chunks/s)`);
console.log(`model alone (raw pool, ${cfg.threads} threads, ${SAMPLE} of the same emails, after the server stopped): ${model.toFixed(1)} s for ${N} emails = ${((100 * model) / total).toFixed(0)} % of the time to searchable`);
console.log(`new queries during the backlog: n=${lat.length} p50 ${percentile(lat, 50).toFixed(1)} ms p95 ${percentile(lat, 95).toFixed(1)} ms p99 ${percentile(lat, 99).toFixed(1)} ms max ${lat.at(-1)?.toFixed(1)} ms`);
console.log(`answered: ${[...how].map(([k, v]) => `${k} ${v}`).join(', ')}`);
console.log(`server peak RSS ${rss} MB; load average at end ${loadEnd.map((x) => x.toFixed(1)).join(' ')}`);
