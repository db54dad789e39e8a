/**
 * Local email collector throughput, end to end: .emlx files on disk -> parse -> clean -> redact ->
 * POST /v1/ingest to `memex serve` (child process) -> cataloged. Runs the collector in this process
 * through the agent's real route (POST /v1/collectors/email_local:run, simulate mode) and reports
 * messages/s, the agent's peak RSS (this process) and the server's, then a second run (nothing new).
 *
 *   node --import tsx bench/email/local.ts [--messages 10000] [--concurrency 4] [--batch 100] [--backend pglite|postgres]
 *
 * The server's embedding worker is off (EMBEDDING_WORKER=off) so the figure is the collector + catalog path.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { createAgentServer } from '../../src/agent/server.ts';
import { machineLine, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '10000' },
    concurrency: { type: 'string', default: '4' },
    batch: { type: 'string', default: '100' },
    backend: { type: 'string', default: 'pglite' },
  },
});
const total = Number(values.messages);
const concurrency = Number(values.concurrency);
const batchSize = Number(values.batch);
const backend = values.backend as 'pglite' | 'postgres';

const WORDS = 'budget meeting invoice project review travel flight hotel schedule report draft contract team lunch update release deadline client proposal order'.split(' ');

function lcg(seed: number) {
  let s = seed >>> 0;
  return () => ((s = (s * 1664525 + 1013904223) >>> 0) / 2 ** 32);
}

/** Realistic mix: plain, multipart/alternative with HTML, replies with quotes and signatures, some PII. */
function message(i: number, r: () => number): string {
  const words = (n: number) => Array.from({ length: n }, () => WORDS[Math.floor(r() * WORDS.length)]).join(' ');
  const para = () => `${words(12 + Math.floor(r() * 30))}.`;
  const body = Array.from({ length: 1 + Math.floor(r() * 6) }, para).join('\n\n');
  const kind = i % 4;
  const date = new Date(Date.UTC(2023, 0, 1) + i * 3_600_000).toUTCString().replace('GMT', '+0000');
  const head = [
    `From: Person ${i % 97} <person${i % 97}@example.org>`,
    `To: Jane Doe <jane@example.org>${i % 3 === 0 ? ', "Smith, Al" <al@example.com>' : ''}`,
    `Subject: ${words(4)} #${i}`,
    `Date: ${date}`,
    `Message-ID: <bench-${i}@example.org>`,
    ...(kind === 2 ? [`In-Reply-To: <bench-${i - 1}@example.org>`, `References: <bench-${i - 2}@example.org> <bench-${i - 1}@example.org>`] : []),
    'MIME-Version: 1.0',
  ];
  if (kind === 1) {
    return [...head, 'Content-Type: multipart/alternative; boundary="b1"', '', '--b1', 'Content-Type: text/plain; charset=utf-8', '', body, '--b1', 'Content-Type: text/html; charset=utf-8', '', `<html><body><p>${body.replace(/\n\n/g, '</p><p>')}</p></body></html>`, '--b1--', ''].join('\r\n');
  }
  const extra = kind === 2 ? `\n\n-- \nPerson ${i % 97}\nCall 555-123-${String(1000 + (i % 9000)).slice(-4)}\n\nOn Mon, Jane wrote:\n> ${para()}\n> ${para()}` : kind === 3 ? `\n\nAccount 12345678${i % 10} is due.` : '';
  return [...head, 'Content-Type: text/plain; charset=utf-8', '', body + extra, ''].join('\r\n');
}

function emlx(msg: string): Buffer {
  const b = Buffer.from(msg);
  return Buffer.concat([Buffer.from(`${b.length}\n`), b, Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>flags</key><integer>1</integer></dict></plist>\n')]);
}

async function main() {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-mail-'));
  const r = lcg(7);
  let bytes = 0;
  for (let i = 0; i < total; i++) {
    const dir = path.join(root, `Box${i % 5}.mbox`, `UUID`, 'Data', String(Math.floor(i / 1000)), 'Messages');
    if (i % 1000 < 5) fs.mkdirSync(dir, { recursive: true });
    const data = emlx(message(i, r));
    bytes += data.length;
    fs.writeFileSync(path.join(dir, `${i}.emlx`), data);
  }
  console.log(`generated ${total} .emlx files (${(bytes / 2 ** 20).toFixed(1)} MiB) in ${root}`);

  const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
  const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-mail-state-'));
  const config = validateAgentConfig(
    {
      auth: { secret: 'bench-agent-secret-0123456789' },
      logging: { level: 'error' },
      gateway: { base_url: server.url, auth_token: server.token },
      modules: {
        mail: {
          enabled: true,
          submit_concurrency: concurrency,
          batch_size: batchSize,
          sources: [{ id: 'bench', type: 'local', source_path: root }],
          state: {
            run_state_path: path.join(stateDir, 'state.json'),
            rejected_log_path: path.join(stateDir, 'rejected.log'),
            lock_file_path: path.join(stateDir, 'lock'),
          },
        },
      },
    },
    'bench',
    {},
  );
  const app = await createAgentServer(config, { logger: false });
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 100);
  const run = async () => {
    const t0 = performance.now();
    const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: { 'x-auth': 'bench-agent-secret-0123456789' }, payload: { simulate_path: root, limit: 10000 } });
    return { ms: performance.now() - t0, body: res.json() as any };
  };
  try {
    const first = await run();
    const s = first.body.stats;
    console.log(`\n${machineLine()}; backend ${backend}; submit concurrency ${concurrency}; batch_size ${batchSize}`);
    console.log(`first run: status ${first.body.status}; ${s.messages_processed} parsed, ${s.documents_accepted} accepted (${s.documents_duplicate} duplicates), ${s.documents_rejected} rejected, ${s.errors_encountered} errors`);
    console.log(`  ${(first.ms / 1000).toFixed(1)} s -> ${(s.documents_accepted / (first.ms / 1000)).toFixed(0)} messages/s end to end (parse -> redact -> submit -> cataloged)`);
    const m = (await app.inject({ method: 'GET', url: '/v1/metrics', headers: { 'x-auth': 'bench-agent-secret-0123456789' } })).body;
    const sum = [...m.matchAll(/email_local_submission_latency_ms_sum\{[^}]*\} ([\d.]+)/g)].reduce((a, x) => a + Number(x[1]), 0);
    console.log(`  mean gateway time per message ${(sum / s.documents_submitted).toFixed(1)} ms (a batch's time is shared by its messages)`);
    const second = await run();
    console.log(`second run (nothing new): ${(second.ms / 1000).toFixed(2)} s, ${second.body.stats.files_skipped_unchanged} files skipped unchanged, ${second.body.stats.documents_submitted} submitted`);
    clearInterval(sampler);
    console.log(`agent peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MB (this process: collector + Fastify + the generated-file bookkeeping); server peak RSS ${server.peakRssMb()} MB`);
  } finally {
    clearInterval(sampler);
    await app.close();
    await server.stop();
    fs.rmSync(root, { recursive: true, force: true });
    fs.rmSync(stateDir, { recursive: true, force: true });
  }
}

await main();
