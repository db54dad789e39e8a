/**
 * Starts `memex serve` in a child process for a benchmark, on PGlite (a temporary data dir) or
 * on a fresh database of the local PostgreSQL server, and waits until /v1/healthz answers.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';

export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const BENCH_TOKEN = 'bench-token-0123456789';

export interface BenchServer {
  url: string;
  token: string;
  backend: 'pglite' | 'postgres';
  child: ChildProcess;
  /** The server's DATA_DIR (PGlite's database and the object store live under it). */
  dataDir: string;
  /** PostgreSQL: the database's URL; undefined for PGlite. */
  databaseUrl?: string;
  /** Peak resident set size of the server process in MB, read from /proc while it ran. */
  peakRssMb(): number;
  stop(): Promise<void>;
}

export async function startBenchServer(
  backend: 'pglite' | 'postgres',
  env: Record<string, string> = {},
  /** The memex checkout whose `bin/memex.js serve` runs (another worktree, to compare a change). */
  root = ROOT,
  /** A store the caller keeps (a data dir, and on PostgreSQL its database's URL): used as it is, left in place by stop(). */
  kept?: { dataDir: string; databaseUrl?: string },
): Promise<BenchServer> {
  const dataDir = kept?.dataDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-'));
  let dbName: string | undefined;
  const adminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  let databaseUrl: string | undefined = kept?.databaseUrl;
  if (backend === 'postgres' && !kept) {
    dbName = `memex_bench_${Date.now()}`;
    const c = new pg.Client({ connectionString: adminUrl });
    await c.connect();
    await c.query(`CREATE DATABASE ${dbName}`);
    await c.end();
    const u = new URL(adminUrl);
    u.pathname = `/${dbName}`;
    databaseUrl = u.toString();
  }
  const port = 20000 + Math.floor(Math.random() * 20000);
  // BENCH_SERVER_NODE_ARGS: extra node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof".
  const nodeArgs = process.env.BENCH_SERVER_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...nodeArgs, path.join(root, 'bin', 'memex.js'), 'serve'], {
    cwd: root,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      AUTH_TOKEN: BENCH_TOKEN,
      LOG_LEVEL: 'warn',
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
      ...env,
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  let peak = 0;
  const sampler = setInterval(() => {
    try {
      const status = fs.readFileSync(`/proc/${child.pid}/status`, 'utf8');
      const m = /VmRSS:\s+(\d+) kB/.exec(status);
      if (m) peak = Math.max(peak, Number(m[1]) / 1024);
    } catch {
      /* process gone */
    }
  }, 200);
  const url = `http://127.0.0.1:${port}`;
  // Three model copies load in seconds on a quiet machine, in minutes on a crowded one.
  const deadline = Date.now() + 180_000;
  for (;;) {
    try {
      const r = await fetch(`${url}/v1/healthz`);
      if (r.ok) break;
    } catch {
      /* not up yet */
    }
    if (child.exitCode !== null) throw new Error(`server exited with ${child.exitCode}`);
    if (Date.now() > deadline) throw new Error('server did not start within 180 s');
    await new Promise((r) => setTimeout(r, 100));
  }
  return {
    url,
    token: BENCH_TOKEN,
    backend,
    child,
    dataDir,
    databaseUrl,
    peakRssMb: () => Math.round(peak),
    async stop() {
      clearInterval(sampler);
      child.kill('SIGTERM');
      if (child.exitCode === null && child.signalCode === null) await new Promise((r) => child.once('exit', r));
      if (kept) return;
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (dbName) {
        const c = new pg.Client({ connectionString: adminUrl });
        await c.connect();
        await c.query(`DROP DATABASE IF EXISTS ${dbName} WITH (FORCE)`);
        await c.end();
      }
    },
  };
}

export function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

export function machineLine(): string {
  return `${os.cpus().length} cores (${os.cpus()[0]?.model ?? 'cpu'}), ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}`;
}
