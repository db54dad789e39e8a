/**
 * memex against mu and notmuch on one generated Maildir (bench/email/corpus.ts: conversations by
 * In-Reply-To/References, 30 % HTML alternatives, 10 % attachments), side by side in one run:
 *
 *   node --import tsx bench/email/peer.ts [--messages 10000] [--backend both|postgres|pglite] [--concurrency 2] [--collector yes|no]
 *
 * Prints messages/s of the first import, the wall time of an unchanged re-import, and the threads found.
 * mu and notmuch run as commands (`mu init` + `mu index`, `notmuch new`; installed from Debian when
 * missing and apt-get is usable). memex runs `memex import mail` in this process (runMailImport, the
 * CLI's code, so Node's start-up is not counted) against `memex serve` in a child process with the
 * embedding worker off (EMBEDDING_WORKER=off). The `.emlx` collector (email_local, the agent's
 * POST /v1/collectors/email_local:run in this process, default batch size and concurrency) reads the same
 * messages written as Apple Mail's .emlx files, into a fresh server of its own.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { createAgentServer } from '../../src/agent/server.ts';
import { cpuMeter, type CpuSplit } from '../lib/cpu.ts';
import { machineLine, startBenchServer } from '../lib/server.ts';
import { generateCorpus, writeEmlxTree, writeMaildir } from './corpus.ts';
import { notmuchConfig } from './notmuch.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '10000' },
    backend: { type: 'string', default: 'both' },
    /** Also run the .emlx collector (default yes; --collector no skips it). */
    collector: { type: 'string', default: 'yes' },
    concurrency: { type: 'string' },
    seed: { type: 'string', default: '17' },
  },
});
const total = Number(values.messages);
const backends = values.backend === 'both' ? (['postgres', 'pglite'] as const) : [values.backend as 'postgres' | 'pglite'];

interface Row {
  name: string;
  rate: number;
  reimport: number;
  threads: number | null;
  note?: string;
  /** CPU of the first import (whole machine and per process). */
  cpu?: CpuSplit;
}

function ensureTool(cmd: string, pkg: string): boolean {
  if (spawnSync(cmd, ['--version'], { stdio: 'ignore' }).status === 0) return true;
  if (process.getuid?.() === 0 && spawnSync('apt-get', ['install', '-y', '-q', pkg], { stdio: 'inherit' }).status === 0) return true;
  console.error(`${cmd} missing (apt-get install ${pkg}); its row is skipped`);
  return false;
}

/** Seconds taken by fn, and the machine's CPU meanwhile when `cpu` is given. */
function timed(fn: () => void, cpu?: { split?: CpuSplit }): number {
  const meter = cpuMeter();
  const t = performance.now();
  fn();
  if (cpu) cpu.split = meter();
  return (performance.now() - t) / 1000;
}

async function timedAsync(fn: () => Promise<unknown>): Promise<number> {
  const t = performance.now();
  await fn();
  return (performance.now() - t) / 1000;
}

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-peer-'));
const corpus = generateCorpus({ messages: total, seed: Number(values.seed), domain: `peer${values.seed}.example` });
const maildir = writeMaildir(path.join(work, 'Maildir'), corpus.messages);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`corpus: ${total} messages in ${corpus.threads.length} conversations (${(dirBytes(maildir) / 2 ** 20).toFixed(1)} MiB Maildir)`);

const rows: Row[] = [];

if (ensureTool('mu', 'maildir-utils')) {
  const home = path.join(work, 'mu');
  execFileSync('mu', ['init', `--maildir=${maildir}`, `--muhome=${home}`], { stdio: 'ignore' });
  const cpu: { split?: CpuSplit } = {};
  const first = timed(() => execFileSync('mu', ['index', `--muhome=${home}`], { stdio: 'ignore' }), cpu);
  const again = timed(() => execFileSync('mu', ['index', `--muhome=${home}`], { stdio: 'ignore' }));
  rows.push({ name: '`mu index`', rate: total / first, reimport: again, threads: null, cpu: cpu.split });
}

if (ensureTool('notmuch', 'notmuch')) {
  const env = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(maildir, path.join(work, 'notmuch')) };
  const cpu: { split?: CpuSplit } = {};
  const first = timed(() => execFileSync('notmuch', ['new', '--quiet'], { env, stdio: 'ignore' }), cpu);
  const again = timed(() => execFileSync('notmuch', ['new', '--quiet'], { env, stdio: 'ignore' }));
  const threads = Number(execFileSync('notmuch', ['count', '--output=threads', '*'], { env }).toString().trim());
  rows.push({ name: '`notmuch new`', rate: total / first, reimport: again, threads, cpu: cpu.split });
}

for (const backend of backends) {
  const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
  try {
    const env = { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, `state-${backend}.json`) };
    const sink = { write: () => true, isTTY: false };
    const args = [maildir, ...(values.concurrency ? ['--concurrency', values.concurrency] : [])];
    let out = '';
    const capture = { write: (s: string) => ((out += s), true), isTTY: false };
    const meter = cpuMeter({ server: server.child.pid! });
    const first = await timedAsync(() => runMailImport(args, { out: capture, err: sink, env }));
    const cpu = meter();
    const again = await timedAsync(() => runMailImport(args, { out: sink, err: sink, env }));
    const threads = await countThreads(server.url, server.token);
    rows.push({ name: `\`memex import mail\`, ${backend === 'postgres' ? 'PostgreSQL' : 'PGlite'}`, rate: total / first, reimport: again, threads, note: out.trim().split('\n').pop(), cpu });
  } finally {
    await server.stop();
  }
}

if (values.collector !== 'no') {
  const emlxRoot = writeEmlxTree(path.join(work, 'AppleMail'), corpus.messages);
  for (const backend of backends) {
    const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
    const stateDir = path.join(work, `collector-${backend}`);
    const secret = 'bench-agent-secret-0123456789';
    const config = validateAgentConfig(
      {
        auth: { secret },
        logging: { level: 'error' },
        gateway: { base_url: server.url, auth_token: server.token },
        modules: {
          mail: {
            enabled: true,
            sources: [{ id: 'bench', type: 'local', source_path: emlxRoot }],
            state: { run_state_path: path.join(stateDir, 'state.json'), rejected_log_path: path.join(stateDir, 'rejected.log'), lock_file_path: path.join(stateDir, 'lock') },
          },
        },
      },
      'bench',
      {},
    );
    const agent = await createAgentServer(config, { logger: false });
    // One run collects at most 10,000 messages (spec limit): run until a run finds nothing new.
    const collect = async () => {
      const totals = { processed: 0, accepted: 0, errors: 0 };
      for (;;) {
        const res = await agent.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: { 'x-auth': secret }, payload: { simulate_path: emlxRoot, limit: 10000 } });
        const st = (res.json() as { stats?: { messages_processed: number; documents_accepted: number; errors_encountered: number } }).stats;
        if (!st) throw new Error(`collector answered ${res.statusCode}: ${res.body.slice(0, 300)}`);
        totals.processed += st.messages_processed;
        totals.accepted += st.documents_accepted;
        totals.errors += st.errors_encountered;
        if (st.messages_processed + st.errors_encountered < 10000) return totals;
      }
    };
    try {
      let totals = { processed: 0, accepted: 0, errors: 0 };
      const meter = cpuMeter({ server: server.child.pid! });
      const first = await timedAsync(async () => (totals = await collect()));
      const cpu = meter();
      const again = await timedAsync(() => collect());
      const threads = await countThreads(server.url, server.token);
      rows.push({
        name: `\`.emlx\` collector, ${backend === 'postgres' ? 'PostgreSQL' : 'PGlite'}`,
        rate: total / first,
        reimport: again,
        threads,
        note: `${totals.processed} parsed, ${totals.accepted} accepted, ${totals.errors} errors (batch_size ${config.modules.mail.batch_size}, ${config.modules.mail.submit_concurrency} in flight)`,
        cpu,
      });
    } finally {
      await agent.close();
      await server.stop();
    }
  }
}

// The measure: memex's rate as a share of mu's, from this one run.
const mu = rows.find((r) => r.name === '`mu index`')?.rate;
const share = (r: Row) => (mu && r.name !== '`mu index`' ? `${((100 * r.rate) / mu).toFixed(1)} %` : '—');
console.log('\n| | messages/s | share of mu | unchanged re-import | threads found |\n|---|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(`| ${r.name} | ${r.rate.toFixed(0)} | ${share(r)} | ${r.reimport.toFixed(2)} s | ${r.threads === null ? '—' : r.threads.toLocaleString('en')} |`);
}
for (const r of rows) if (r.note) console.log(`${r.name}: ${r.note}`);
// CPU of the first import per message: the machine's (everything that ran), this process's (memex's importer or
// collector), the memex server's, and the rest (the PostgreSQL backends, or the tool's own process for mu and notmuch).
console.log('\n| first import, CPU per message | machine | importer / collector | memex server | rest | cores busy |\n|---|---:|---:|---:|---:|---:|');
for (const r of rows) {
  if (!r.cpu) continue;
  const per = (ms: number) => `${(ms / total).toFixed(2)} ms`;
  const own = r.cpu.children.server === undefined ? null : r.cpu.selfMs;
  const server = r.cpu.children.server ?? null;
  const rest = r.cpu.machineMs - (own ?? 0) - (server ?? 0);
  console.log(`| ${r.name} | ${per(r.cpu.machineMs)} | ${own === null ? '—' : per(own)} | ${server === null ? '—' : per(server)} | ${per(rest)} | ${r.cpu.coresBusy.toFixed(2)} |`);
}
console.log(`true conversations: ${corpus.threads.length}; load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
fs.rmSync(work, { recursive: true, force: true });

function dirBytes(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  }
  return n;
}

/** Email threads with at least one message, through the gateway's SQL-free API: documents grouped by thread_id. */
async function countThreads(url: string, token: string): Promise<number> {
  const ids = new Set<string>();
  for (let offset = 0; ; offset += 200) {
    const r = await fetch(`${url}/v1/documents?source_type=email_local&limit=200&offset=${offset}`, { headers: { authorization: `Bearer ${token}` } });
    if (!r.ok) throw new Error(`GET /v1/documents answered ${r.status}`);
    const body = (await r.json()) as { documents?: { thread_id: string | null }[]; items?: { thread_id: string | null }[] };
    const docs = body.documents ?? body.items ?? [];
    for (const d of docs) if (d.thread_id) ids.add(d.thread_id);
    if (docs.length < 200) break;
  }
  return ids.size;
}
