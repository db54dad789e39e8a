/**
 * A file written into a watched Maildir → found by GET /v1/search (issue 41: median ≤ 2 s, p95 ≤ 5 s).
 * `memex import mail --watch` (runMailImport in this process, the CLI's code) watches a Maildir of
 * `--base` messages against `memex serve` in a child process; then `--messages` messages are delivered one at
 * a time as a delivery agent writes them (tmp/, then a rename into new/), each with a word of its own, and the
 * time until a search for that word answers it is taken (polled every 50 ms).
 *
 *   node --import tsx bench/email/watch-latency.ts [--messages 20] [--base 1000] [--backend pglite|postgres]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { machineLine, percentile, startBenchServer } from '../lib/server.ts';
import { generateCorpus, writeMaildir } from './corpus.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '20' },
    base: { type: 'string', default: '1000' },
    backend: { type: 'string', default: 'pglite' },
  },
});
const count = Number(values.messages);
const backend = values.backend as 'pglite' | 'postgres';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-watch-latency-'));
const md = writeMaildir(path.join(work, 'Maildir'), generateCorpus({ messages: Number(values.base), seed: 41, domain: 'watch41.example' }).messages);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${values.base} messages watched, memex on ${backend}`);

const server = await startBenchServer(backend);
const quiet = { write: () => true, isTTY: false };
const stop = new AbortController();
let watching!: () => void;
const on = new Promise<void>((r) => (watching = r));
const env = { ...process.env, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') };
const done = runMailImport(['mail', md, '--watch', '--url', server.url, '--token', server.token], { out: quiet, err: quiet, env, signal: stop.signal, onWatching: watching });
await on;

const word = (i: number) => `watchprobe${String.fromCharCode(97 + (i % 26))}${String.fromCharCode(97 + Math.floor(i / 26) % 26)}zq`;
const latencies: number[] = [];
for (let i = 0; i < count; i++) {
  const name = `${1800000000 + i}.M${i}P1.bench`;
  const raw = `From: Probe <probe@watch41.example>\r\nTo: me@watch41.example\r\nSubject: probe ${i}\r\nMessage-ID: <probe-${i}@watch41.example>\r\nDate: ${new Date().toUTCString()}\r\n\r\nThe ${word(i)} arrived.\r\n`;
  const t = performance.now();
  fs.writeFileSync(path.join(md, 'tmp', name), raw);
  fs.renameSync(path.join(md, 'tmp', name), path.join(md, 'new', name));
  for (;;) {
    const r = await fetch(`${server.url}/v1/search?q=${word(i)}&k=1`, { headers: { authorization: `Bearer ${server.token}` } });
    const body = (await r.json()) as { hits?: unknown[] };
    if (body.hits?.length) break;
    if (performance.now() - t > 60_000) throw new Error(`message ${i} not found within 60 s`);
    await new Promise((r) => setTimeout(r, 50));
  }
  latencies.push((performance.now() - t) / 1000);
  await new Promise((r) => setTimeout(r, 200));
}
stop.abort();
await done;
const sorted = [...latencies].sort((a, b) => a - b);
console.log(`written → found: median ${percentile(sorted, 50).toFixed(2)} s, p95 ${percentile(sorted, 95).toFixed(2)} s, max ${sorted.at(-1)!.toFixed(2)} s over ${count} messages; load ${os.loadavg()[0].toFixed(1)}`);
await server.stop();
fs.rmSync(work, { recursive: true, force: true });
