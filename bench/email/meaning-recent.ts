/**
 * The last 30 days searchable by meaning (issue 34: "after importing 10,000 generated emails with
 * default settings, the last 30 days are meaning-searchable in ≤ 2 minutes"), as a user gets there:
 *
 *   1. a generated Maildir of N emails over a few years up to yesterday (bench/email/corpus.ts with
 *      quoting: replies quote what they answer, half the senders sign), written before anything is timed;
 *   2. `memex serve` with every setting at its default (the default model included), until
 *      `GET /v1/readyz` is 200; the model threads start after that, inside the timed part;
 *   3. `memex import mail DIR` in its own process, as a user types it; the clock starts here;
 *   4. `GET /v1/status` every second: `meaning_searchable.last_30_days` / `last_365_days` and the
 *      chunk queue, until the last 30 days are at 100 % (and, with --all, until everything is).
 *
 *   node --import tsx bench/email/meaning-recent.ts [--pg] [--messages 10000] [--max-minutes 10] [--all] [--root DIR] [KEY=VALUE ...]
 *
 * PGlite by default. --root runs another checkout's server and CLI (to compare a change);
 * KEY=VALUE arguments go into the server's environment.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { generateCorpus, writeMaildir } from './corpus.ts';
import { machineLine, ROOT, startBenchServer } from '../lib/server.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : d);
const backend = args.includes('--pg') ? 'postgres' : 'pglite';
const N = Number(opt('--messages', '10000'));
const MAX_MS = Number(opt('--max-minutes', '10')) * 60_000;
const root = path.resolve(opt('--root', ROOT));
const extraEnv = Object.fromEntries(args.filter((a) => /^[A-Z_]+=/.test(a)).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
/** CPU seconds (user + system, every thread) a process has used; NaN once it is gone. */
function cpuSeconds(pid: number | undefined): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100;
  } catch {
    return NaN;
  }
}
const DAY = 86_400_000;

// The corpus's span does not depend on its start: generate once to learn it, then end it yesterday.
const span = (() => {
  const c = generateCorpus({ messages: N, quoting: true, start: 0 });
  return Math.max(...c.messages.map((m) => m.date));
})();
const corpus = generateCorpus({ messages: N, quoting: true, start: Date.now() - DAY - span });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-meaning-'));
const maildir = writeMaildir(path.join(work, 'Maildir'), corpus.messages);
const recent = corpus.messages.filter((m) => m.date > Date.now() - 30 * DAY).length;
const bytes = corpus.messages.reduce((s, m) => s + m.raw.length, 0);
console.log(`meaning-recent bench: ${root}; ${backend}; ${machineLine()}; load ${load()}`);
console.log(
  `corpus: ${N} emails, ${(span / DAY / 365).toFixed(1)} years to yesterday, ${recent} in the last 30 days, ` +
    `${(bytes / 2 ** 20).toFixed(1)} MB${Object.keys(extraEnv).length ? `; server env ${JSON.stringify(extraEnv)}` : '; default settings'}`,
);

const server = await startBenchServer(backend, extraEnv, root);
try {
  const auth = { authorization: `Bearer ${server.token}` };
  for (;;) {
    const r = await fetch(`${server.url}/v1/readyz`).catch(() => null);
    if (r?.status === 200) break;
    await new Promise((res) => setTimeout(res, 100));
  }
  const status = async () => (await fetch(`${server.url}/v1/status`, { headers: auth })).json() as Promise<any>;
  console.log(`server ready; load ${load()}`);

  const serverCpuAtStart = cpuSeconds(server.child.pid);
  const serverCpu = () => (cpuSeconds(server.child.pid) - serverCpuAtStart).toFixed(1);
  let importCpu = 0;
  const started = performance.now();
  const secs = () => ((performance.now() - started) / 1000).toFixed(1);
  let importDone: number | null = null;
  const imp = spawn(process.execPath, [path.join(root, 'bin', 'memex.js'), 'import', 'mail', maildir], {
    cwd: root,
    env: { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let importOut = '';
  imp.stdout!.on('data', (c: Buffer) => (importOut += c.toString()));
  imp.stderr!.on('data', (c: Buffer) => (importOut += c.toString()));
  const importCpuTimer = setInterval(() => {
    const c = cpuSeconds(imp.pid);
    if (!Number.isNaN(c)) importCpu = c;
  }, 250);
  imp.on('exit', (code) => {
    clearInterval(importCpuTimer);
    importDone = (performance.now() - started) / 1000;
    console.log(`  ${secs()} s: import finished (exit ${code}): ${importOut.trim().split('\n').pop()}; CPU: import ${importCpu.toFixed(1)} s, server ${serverCpu()} s; load ${load()}`);
  });

  let reached30: number | null = null;
  let last = '';
  const all = args.includes('--all');
  for (;;) {
    await new Promise((res) => setTimeout(res, 1000));
    const s = await status().catch(() => null);
    if (!s) continue;
    const m = s.meaning_searchable;
    const q = s.chunks;
    const line =
      `30 d ${m.last_30_days.searchable}/${m.last_30_days.documents}, 365 d ${m.last_365_days.searchable}/${m.last_365_days.documents}, ` +
      `documents ${s.documents.total}, chunks ${JSON.stringify(q)}`;
    if (line !== last) console.log(`  ${secs()} s: ${line}; load ${load()}`);
    last = line;
    const done30 = importDone !== null && m.last_30_days.documents > 0 && m.last_30_days.searchable === m.last_30_days.documents;
    if (done30 && reached30 === null) {
      reached30 = (performance.now() - started) / 1000;
      console.log(`RESULT last 30 days meaning-searchable ${reached30.toFixed(1)} s after the import started ` +
        `(import ${importDone!.toFixed(1)} s; 365 days then ${m.last_365_days.searchable}/${m.last_365_days.documents}); ` +
        `CPU since the import started: server ${serverCpu()} s, import process ${importCpu.toFixed(1)} s; load ${load()}`);
      if (!all) break;
    }
    const indexedAll = s.documents.by_source.every((x: any) => x.status === 'indexed' || x.count === 0);
    if (all && importDone !== null && indexedAll && s.documents.total >= N) {
      console.log(`RESULT every email meaning-searchable ${secs()} s after the import started; CPU: server ${serverCpu()} s, import ${importCpu.toFixed(1)} s; load ${load()}`);
      break;
    }
    if (performance.now() - started > MAX_MS) {
      console.log(`stopped after ${MAX_MS / 60_000} min; load ${load()}`);
      break;
    }
  }
  if (imp.exitCode === null) imp.kill();
  const st = await status();
  console.log(`throughput ${JSON.stringify(st.throughput)}`);
} finally {
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
