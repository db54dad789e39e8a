/**
 * Searching while `memex import mail` runs (issue 20): a real `memex serve` (default settings unless told) and
 * a real `memex import mail` child process importing a generated mbox (bench/email/corpus.ts: threads, 30 %
 * HTML, 10 % with an attachment, which the importer uploads) in its default batches of 100, two in flight.
 * While the import runs, one client sends *new* queries (never repeated, so no cache helps), one after another
 * with a short pause. Prints, side by side, search latency p50/p95/p99 of the queries issued while the import
 * ran (and of a few issued before it, on the idle server), the import's messages/s, and the server's mean
 * POST /v1/ingest:batch time and the gateway thread's event-loop delay during the import (from /metrics): on PGlite the batch's
 * database transactions run in that thread, and nothing else runs there while one does.
 *
 *   node --import tsx bench/search/during-import.ts [--pg] [--messages 5000] [--rounds 1] [--pause-ms 20]
 *        [--worker off] [--compare DIR]
 *
 * --worker off: the server runs without the embedding worker (EMBEDDING_WORKER=off), which takes the model's CPU
 * out of the figures. --compare DIR: another checkout of memex (e.g. a `git worktree` of main) whose server and
 * importer run in alternate rounds with this one's, so a change is compared under the same load.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { generateCorpus, writeMbox } from '../email/corpus.ts';
import { rng, sentence } from '../lib/generate.ts';
import { machineLine, percentile, ROOT, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    pg: { type: 'boolean', default: false },
    messages: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '1' },
    'pause-ms': { type: 'string', default: '20' },
    worker: { type: 'string', default: 'on' },
    compare: { type: 'string' },
  },
});
const backend = values.pg ? 'postgres' : 'pglite';
const N = Number(values.messages);
const PAUSE = Number(values['pause-ms']);
const roots = values.compare ? [path.resolve(values.compare), ROOT] : [ROOT];
const env: Record<string, string> = values.worker === 'off' ? { EMBEDDING_WORKER: 'off' } : {};

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-during-import-'));
const mbox = writeMbox(path.join(tmp, 'mail.mbox'), generateCorpus({ messages: N, seed: 20 }).messages);
console.log(`machine: ${machineLine()}; load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`${backend}: ${N} generated emails in one mbox (${(fs.statSync(mbox).size / 2 ** 20).toFixed(1)} MiB), embedding worker ${values.worker}; one search client, ${PAUSE} ms between queries`);

interface Run {
  root: string;
  importSeconds: number;
  during: number[];
  idle: number[];
  batchMs: number;
  lagP99Ms: number;
  lagMaxMs: number;
  lexicalMs: number;
  vectorMs: number;
  load: number;
}

const q = rng(7);
const asked = new Set<string>();
/** A new query of 2–4 words (never the same text twice) and its latency in ms. */
async function search(url: string, auth: Record<string, string>): Promise<number> {
  let text = '';
  do text = sentence(q, 2, 5).slice(0, -1).toLowerCase(); while (asked.has(text));
  asked.add(text);
  const s = performance.now();
  const res = await fetch(`${url}/v1/search?${new URLSearchParams({ q: text, k: '20' })}`, { headers: auth });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`search: HTTP ${res.status}`);
  return performance.now() - s;
}

const pause = () => new Promise((r) => setTimeout(r, PAUSE));

/**
 * From the server's /metrics: the mean POST /v1/ingest:batch time, and the gateway thread's event-loop delay
 * (p99 and max since the previous scrape: how long its longest uninterrupted pieces of work were).
 */
async function serverFigures(url: string, auth: Record<string, string>) {
  const text = await (await fetch(`${url}/metrics`, { headers: auth })).text();
  const value = (name: string, labels = '') => {
    const line = text.split('\n').find((l) => l.startsWith(name) && l.includes(labels));
    return line ? Number(line.slice(line.lastIndexOf(' ') + 1)) : NaN;
  };
  const batch = 'route="/v1/ingest::batch"';
  const leg = (name: string) => ({ sum: value('search_leg_duration_ms_sum', `leg="${name}"`), count: value('search_leg_duration_ms_count', `leg="${name}"`) });
  return {
    batchMs: value('gateway_http_request_duration_ms_sum', batch) / value('gateway_http_request_duration_ms_count', batch),
    lagP99Ms: 1000 * value('nodejs_eventloop_lag_p99_seconds'),
    lagMaxMs: 1000 * value('nodejs_eventloop_lag_max_seconds'),
    lexical: leg('lexical'),
    vector: leg('vector'),
  };
}

/** Mean time of a search leg between two scrapes (the lexical leg includes the index's catch-up with new documents). */
const meanLeg = (a: { sum: number; count: number }, b: { sum: number; count: number }) => (b.sum - a.sum) / (b.count - a.count);

async function round(root: string): Promise<Run> {
  const server = await startBenchServer(backend, env, root);
  const auth = { authorization: `Bearer ${server.token}` };
  try {
    // The idle server first (the same kind of queries, nothing imported yet), a few to warm it.
    const idle: number[] = [];
    for (let i = 0; i < 40; i++) {
      const ms = await search(server.url, auth);
      if (i >= 10) idle.push(ms);
      await pause();
    }
    const load = os.loadavg()[0];
    const start = await serverFigures(server.url, auth); // a scrape starts the event-loop figures afresh: they cover the import
    const t0 = performance.now();
    const importer = spawn(
      process.execPath,
      [path.join(root, 'bin', 'memex.js'), 'import', 'mail', mbox, '--url', server.url, '--token', server.token, '--state', path.join(tmp, `state-${Date.now()}.json`)],
      { cwd: root, stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    importer.stderr.on('data', (d) => (stderr += d));
    let running = true;
    const exited = new Promise<number | null>((resolve) => importer.once('exit', (code) => ((running = false), resolve(code))));
    const during: number[] = [];
    while (running) {
      const ms = await search(server.url, auth);
      // Only queries that were answered before the import ended count as "during".
      if (running) during.push(ms);
      await pause();
    }
    const code = await exited;
    if (code !== 0) throw new Error(`memex import mail exited with ${code}: ${stderr.slice(-2000)}`);
    const importSeconds = (performance.now() - t0) / 1000;
    const end = await serverFigures(server.url, auth);
    const { batchMs, lagP99Ms, lagMaxMs } = end;
    const lexicalMs = meanLeg(start.lexical, end.lexical);
    const vectorMs = meanLeg(start.vector, end.vector);
    return { root, importSeconds, during, idle, batchMs, lagP99Ms, lagMaxMs, lexicalMs, vectorMs, load };
  } finally {
    await server.stop();
  }
}

const summary = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return `n=${s.length} p50 ${percentile(s, 50).toFixed(0)} / p95 ${percentile(s, 95).toFixed(0)} / p99 ${percentile(s, 99).toFixed(0)} / max ${s.at(-1)?.toFixed(0)} ms`;
};
const rounds = Number(values.rounds);
const runs: Run[] = [];
for (let i = 0; i < rounds; i++) {
  for (const root of roots) {
    const r = await round(root);
    runs.push(r);
    console.log(
      `round ${i + 1} ${r.root}: import ${(N / r.importSeconds).toFixed(0)} messages/s (${r.importSeconds.toFixed(1)} s), mean batch request ${r.batchMs.toFixed(0)} ms; event-loop delay p99 ${r.lagP99Ms.toFixed(0)} / max ${r.lagMaxMs.toFixed(0)} ms; ` +
        `search during import ${summary(r.during)} (mean lexical leg ${r.lexicalMs.toFixed(0)} ms, vector leg ${r.vectorMs.toFixed(0)} ms); idle ${summary(r.idle)}; load ${r.load.toFixed(1)}`,
    );
  }
}
if (rounds > 1 || roots.length > 1) {
  for (const root of roots) {
    const mine = runs.filter((r) => r.root === root);
    const secs = mine.reduce((a, r) => a + r.importSeconds, 0);
    console.log(
      `all rounds ${root}: import ${((N * mine.length) / secs).toFixed(0)} messages/s; search during import ${summary(mine.flatMap((r) => r.during))}; ` +
        `idle ${summary(mine.flatMap((r) => r.idle))}`,
    );
  }
}
console.log(`load average at end ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
fs.rmSync(tmp, { recursive: true, force: true });
