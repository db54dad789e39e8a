/**
 * End-to-end chat collector benchmark: a generated chat.db backfilled by the host agent's chatapp module
 * into a running gateway (`memex serve` in a child process).
 *
 *   node --import tsx bench/chat/run.ts [--messages 200000] [--backend pglite|postgres] [--batch-size 200]
 *        [--single] [--chunk 20000] [--db PATH (reuse an existing chat.db)]
 *
 * The agent runs in this process (createAgentServer, the real module and gateway client over HTTP), and
 * the backfill is driven through POST /v1/collectors/chatapp:run in chunks of --chunk rows (max_rows) so
 * progress is printed; the cursor carries on between chunks exactly as between scheduled runs. Prints
 * messages/s (rows read / wall time), documents accepted, peak RSS of the agent process and of the
 * gateway process, and the documents the gateway holds at the end. Embeddings are off in the gateway.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { createAgentServer } from '../../src/agent/server.ts';
import { machineLine, ROOT, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '200000' },
    backend: { type: 'string', default: 'postgres' },
    'batch-size': { type: 'string', default: '200' },
    single: { type: 'boolean', default: false },
    chunk: { type: 'string', default: '20000' },
    db: { type: 'string' },
  },
});
const N = Number(values.messages);
const backend = values.backend as 'pglite' | 'postgres';
const batchSize = Number(values['batch-size']);
const chunk = Number(values.chunk);

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-chat-e2e-'));
let dbPath = values.db;
if (!dbPath) {
  dbPath = path.join(work, 'chat.db');
  const t = performance.now();
  execFileSync(process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/chat/generate.ts'), '--messages', String(N), '--out', dbPath], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  console.log(`generated ${N} messages in ${((performance.now() - t) / 1000).toFixed(1)} s (${(fs.statSync(dbPath).size / 2 ** 20).toFixed(1)} MiB)`);
}

const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
let agentPeak = 0;
const sampler = setInterval(() => {
  agentPeak = Math.max(agentPeak, process.memoryUsage().rss);
}, 200);
const secret = 'bench-agent-secret-0123';
const config = validateAgentConfig(
  {
    auth: { secret },
    gateway: { base_url: server.url, auth_token: server.token, timeout: 120 },
    modules: { chatapp: { enabled: true, chat_db_path: dbPath, state_path: path.join(work, 'state.json'), batch_size: batchSize, ocr_enabled: false } },
  },
  'bench',
  {},
);
const agent = await createAgentServer(config, { logger: false });
const rssBefore = process.memoryUsage().rss;

let processed = 0;
let submitted = 0;
let rejected = 0;
const t0 = performance.now();
try {
  for (;;) {
    const s = performance.now();
    const res = await agent.inject({
      method: 'POST',
      url: '/v1/collectors/chatapp:run',
      headers: { 'x-auth': secret },
      payload: { mode: 'backfill', batch: !values.single, batch_size: batchSize, max_rows: chunk },
    });
    const body = res.json();
    if (res.statusCode !== 200) throw new Error(`run answered ${res.statusCode}: ${JSON.stringify(body).slice(0, 500)}`);
    processed += body.processed;
    submitted += body.submitted;
    rejected += body.rejected;
    const el = (performance.now() - t0) / 1000;
    console.log(
      `  +${body.processed} rows in ${((performance.now() - s) / 1000).toFixed(1)} s; total ${processed} rows, ${submitted} docs, ` +
        `${(processed / el).toFixed(0)} msg/s, cursor ${body.cursor_rowid}/${body.head_rowid}, agent RSS ${(process.memoryUsage().rss / 2 ** 20).toFixed(0)} MiB`,
    );
    if (body.processed === 0 || body.cursor_rowid >= body.head_rowid) break;
  }
  const secs = (performance.now() - t0) / 1000;
  const count = await fetch(`${server.url}/v1/documents?source_type=chatapp&limit=1`, { headers: { authorization: `Bearer ${server.token}` } });
  const total = ((await count.json()) as { total: number }).total;
  console.log('');
  console.log(`machine: ${machineLine()}, load average ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  console.log(`backend: ${backend}, mode: ${values.single ? 'single posts' : `batch (${batchSize} per request)`}`);
  console.log(`rows read: ${processed}, documents accepted: ${submitted}, rejected: ${rejected}, documents stored (active chatapp): ${total}`);
  console.log(`backfill: ${secs.toFixed(1)} s, ${(processed / secs).toFixed(0)} messages/s, ${(submitted / secs).toFixed(0)} documents/s`);
  console.log(`peak RSS: agent process ${(agentPeak / 2 ** 20).toFixed(0)} MiB (at start ${(rssBefore / 2 ** 20).toFixed(0)} MiB), gateway process ${server.peakRssMb()} MiB`);
} finally {
  clearInterval(sampler);
  await agent.close();
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
