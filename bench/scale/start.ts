/**
 * Empty-store start (issue 34, "memex serve to ready ≤ 5 s"): `memex serve` as a user runs it,
 * measured from outside, with every setting at its default (OCR included) unless given:
 *
 *   - process spawn → the first `GET /v1/readyz` 200 (searches answered from a complete index);
 *   - the CPU the server process had used by then (user + system, every thread: /proc/PID/stat),
 *     which moves much less with the machine's load than the wall time does;
 *   - the server's own phase lines (each with the time since the process started).
 *
 * Starts come in pairs: a first start (a new DATA_DIR, or a new PostgreSQL database) and a second
 * start on what the first one left. The pairs are interleaved, so a load change hits both alike.
 *
 *   node --import tsx bench/scale/start.ts [--pglite | --postgres] [--pairs 3] [--root DIR] [KEY=VALUE ...]
 *
 * Both backends by default. --root runs another checkout's bin/memex.js (to compare a change);
 * KEY=VALUE arguments go into the server's environment.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { BENCH_TOKEN, machineLine, ROOT } from '../lib/server.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: string) => (args.includes(k) ? args[args.indexOf(k) + 1] : d);
const PAIRS = Number(opt('--pairs', '3'));
const root = path.resolve(opt('--root', ROOT));
const backends = args.includes('--pglite') ? ['pglite'] : args.includes('--postgres') ? ['postgres'] : ['pglite', 'postgres'];
const extraEnv = Object.fromEntries(args.filter((a) => /^[A-Z_]+=/.test(a)).map((a) => [a.slice(0, a.indexOf('=')), a.slice(a.indexOf('=') + 1)]));
const adminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const CLOCK_TICK = 100; // USER_HZ on Linux

const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');

async function admin(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

/** CPU seconds (user + system, all threads) the process has used. */
function cpuSeconds(pid: number): number {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICK;
}

interface Start {
  wallS: number;
  cpuS: number;
  lines: string[];
  loadAtStart: string;
}

async function start(env: Record<string, string>): Promise<Start> {
  const port = 20000 + Math.floor(Math.random() * 20000);
  const loadAtStart = load();
  const started = performance.now();
  const child = spawn(process.execPath, [path.join(root, 'bin', 'memex.js'), 'serve'], {
    cwd: root,
    env: { ...process.env, PORT: String(port), AUTH_TOKEN: BENCH_TOKEN, LOG_LEVEL: 'warn', ...env, ...extraEnv },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  let cpuS = NaN;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`memex serve exited with ${child.exitCode}: ${err}`);
    try {
      const r = await fetch(`http://127.0.0.1:${port}/v1/readyz`);
      if (r.status === 200) {
        cpuS = cpuSeconds(child.pid!);
        break;
      }
    } catch {
      /* the port is not open yet */
    }
    await new Promise((r) => setTimeout(r, 20));
  }
  const wallS = (performance.now() - started) / 1000;
  child.kill('SIGTERM');
  if (child.exitCode === null) await new Promise((r) => child.once('exit', r));
  const lines = err.split('\n').filter((l) => l.startsWith('memex:') && !/model threads/.test(l));
  return { wallS, cpuS, lines, loadAtStart };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

console.log(`start bench: ${root}; ${machineLine()}; load ${load()}${Object.keys(extraEnv).length ? `; env ${JSON.stringify(extraEnv)}` : ''}`);
const results: Record<string, { first: Start[]; second: Start[] }> = {};
for (const b of backends) results[b] = { first: [], second: [] };
for (let i = 0; i < PAIRS; i++) {
  for (const backend of backends) {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-start-'));
    const dbName = `memex_start_${Date.now()}`;
    const env: Record<string, string> = { DATA_DIR: dataDir };
    if (backend === 'postgres') {
      await admin(`CREATE DATABASE ${dbName}`);
      const u = new URL(adminUrl);
      u.pathname = `/${dbName}`;
      env.DATABASE_URL = u.toString();
    }
    try {
      for (const which of ['first', 'second'] as const) {
        const s = await start(env);
        results[backend][which].push(s);
        console.log(`${backend} ${which} start ${i + 1}: ready ${s.wallS.toFixed(2)} s, CPU ${s.cpuS.toFixed(2)} s (load ${s.loadAtStart})`);
        for (const l of s.lines) console.log(`    ${l}`);
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (backend === 'postgres') await admin(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
    }
  }
}
for (const backend of backends) {
  for (const which of ['first', 'second'] as const) {
    const r = results[backend][which];
    const w = r.map((s) => s.wallS);
    const c = r.map((s) => s.cpuS);
    console.log(
      `${backend} ${which} start: ready median ${median(w).toFixed(2)} s (${Math.min(...w).toFixed(2)}-${Math.max(...w).toFixed(2)}), ` +
        `CPU median ${median(c).toFixed(2)} s (${Math.min(...c).toFixed(2)}-${Math.max(...c).toFixed(2)}); n=${r.length}`,
    );
  }
}
console.log(`load at the end ${load()}`);
