/**
 * Hostile and huge inputs against a real `memex serve` (issue 47, item 5), two figures:
 *
 * 1. Memory of one decompression-bomb PDF: a ~1 MB PDF whose FlateDecode content stream inflates to 1 GiB
 *    (test/files/fixtures.ts makeInflatingPdf), uploaded to POST /v1/ingest/file. Prints the server process's
 *    resident memory before, its peak while the upload ran, and 5 s after, and what the upload answered.
 * 2. Stalls from one huge text: while a 50 MB text file (POST /v1/ingest/file), then a 100,000-line message
 *    (POST /v1/ingest), is ingested, a client sends a new search every 250 ms, one after another. Prints the
 *    longest and the p95 search wait while each ingest ran, and how long the ingest took.
 *
 *   node --import tsx bench/files/hostile.ts [--pg] [--bomb-mb 1024] [--text-mb 50] [--compare DIR]
 *
 * --compare DIR: another checkout of memex (a `git worktree` of main) run first, with the same inputs, so a change
 * is compared on the same machine. The embedding worker is off (EMBEDDING_WORKER=off) so the model's CPU does not
 * blur the figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { makeInflatingPdf } from '../../test/files/fixtures.ts';
import { machineLine, percentile, ROOT, startBenchServer, type BenchServer } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    pg: { type: 'boolean', default: false },
    'bomb-mb': { type: 'string', default: '1024' },
    'text-mb': { type: 'string', default: '50' },
    lines: { type: 'string', default: '100000' },
    compare: { type: 'string' },
  },
});
const backend = values.pg ? 'postgres' : 'pglite';
const roots = values.compare ? [path.resolve(values.compare), ROOT] : [ROOT];
const WORDS = ['harbor', 'lantern', 'meadow', 'copper', 'violet', 'orchard', 'canyon', 'ember', 'glacier', 'saffron', 'quartz', 'willow', 'tundra', 'basalt', 'juniper'];

/** Words in ever-new combinations (so every chunk differs), about `bytes` long, one line of ~60 characters each. */
function bigText(bytes: number, lineBreakEvery = 10): string {
  const parts: string[] = [];
  let n = 0;
  for (let i = 0; n < bytes; i++) {
    const w = `${WORDS[i % WORDS.length]}${i % 997}`;
    parts.push(w, (i + 1) % lineBreakEvery === 0 ? '\n' : ' ');
    n += w.length + 1;
  }
  return parts.join('');
}

const rssMb = (pid: number): number => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function upload(s: BenchServer, name: string, bytes: Buffer, type: string): Promise<{ status: number; body: any }> {
  const form = new FormData();
  form.append('meta', JSON.stringify({ path: `/bench/${name}`, mtime: 1767225600 }));
  form.append('upload', new Blob([bytes], { type }), name);
  const res = await fetch(`${s.url}/v1/ingest/file`, { method: 'POST', headers: { authorization: `Bearer ${s.token}` }, body: form });
  return { status: res.status, body: await res.json() };
}

/** Runs `work` while one client searches every 250 ms; returns the waits of the searches sent while it ran. */
async function searchWhile(s: BenchServer, work: () => Promise<unknown>): Promise<{ waits: number[]; seconds: number }> {
  let running = true;
  const waits: number[] = [];
  const client = (async () => {
    for (let i = 0; running; i++) {
      const t = performance.now();
      const res = await fetch(`${s.url}/v1/search?${new URLSearchParams({ q: `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]}${i}` })}`, {
        headers: { authorization: `Bearer ${s.token}` },
      }).catch(() => undefined);
      await res?.arrayBuffer();
      // Counted when sent while the ingest ran, however late the answer came (that is the wait this measures).
      waits.push(performance.now() - t);
      if (running) await sleep(250);
    }
  })();
  const t0 = performance.now();
  await work();
  const seconds = (performance.now() - t0) / 1000;
  running = false;
  await client;
  return { waits, seconds };
}

const fmtWaits = (w: number[]) => {
  const sorted = [...w].sort((a, b) => a - b);
  return `longest search wait ${Math.round(sorted.at(-1) ?? NaN)} ms, p95 ${Math.round(percentile(sorted, 95))} ms (${w.length} searches)`;
};

console.log(`machine: ${machineLine()}; load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
const bomb = await makeInflatingPdf(Number(values['bomb-mb']));
const text = Buffer.from(bigText(Number(values['text-mb']) * 1024 * 1024));
const lines = Number(values.lines);
const message = Array.from({ length: lines }, (_, i) => `line ${i}: ${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]}${i % 991}`).join('\n');
console.log(`${backend}: bomb PDF ${(bomb.length / 1024).toFixed(0)} KiB inflating to ${values['bomb-mb']} MiB; text ${(text.length / 2 ** 20).toFixed(0)} MiB; message of ${message.split('\n').length} lines`);

for (const root of roots) {
  console.log(`\n== ${root}`);
  const s = await startBenchServer(backend, { EMBEDDING_WORKER: 'off', FILE_MAX_BYTES: '200mb', BODY_LIMIT: '50mb' }, root);
  try {
    const pid = s.child.pid!;
    // Ready (migrations, indexes loaded), then settled: the query model's threads load after readiness.
    for (let i = 0; i < 600 && !(await fetch(`${s.url}/v1/readyz`).then((r) => r.ok, () => false)); i++) await sleep(500);
    for (let prev = 0, i = 0; i < 120; i++) {
      await sleep(2000);
      const now = rssMb(pid);
      if (Math.abs(now - prev) < 5) break;
      prev = now;
    }
    const before = rssMb(pid);
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssMb(pid))), 50);
    const t0 = performance.now();
    const r = await upload(s, 'bomb.pdf', bomb, 'application/pdf');
    const ms = performance.now() - t0;
    await sleep(5000);
    clearInterval(sampler);
    console.log(
      `bomb PDF: ${r.status} extraction ${r.body.extraction_status ?? '?'} in ${(ms / 1000).toFixed(1)} s; server RSS before ${before} MB, peak ${peak} MB, 5 s after ${rssMb(pid)} MB`,
    );

    let status = 0;
    const t = await searchWhile(s, async () => (status = (await upload(s, 'big.txt', text, 'text/plain')).status));
    console.log(`${values['text-mb']} MB text upload: ${status}, ingest ${t.seconds.toFixed(1)} s; ${fmtWaits(t.waits)}`);

    const m = await searchWhile(s, async () => {
      const res = await fetch(`${s.url}/v1/ingest`, {
        method: 'POST',
        headers: { authorization: `Bearer ${s.token}`, 'content-type': 'application/json' },
        body: JSON.stringify({ source_type: 'chatapp', source_id: 'long-message', content: { data: message }, content_timestamp: '2026-01-01T00:00:00Z' }),
      });
      await res.arrayBuffer();
      if (!res.ok) console.log(`  message ingest answered ${res.status}`);
    });
    console.log(`${lines}-line message: ingest ${m.seconds.toFixed(1)} s; ${fmtWaits(m.waits)}`);
  } finally {
    await s.stop();
  }
}
