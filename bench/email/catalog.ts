/**
 * The catalog alone, in this process: prepared email documents (bench/email/corpus.ts, parsed and built the way
 * `memex import mail` builds them, then prepared the way POST /v1/ingest:batch prepares them) stored with
 * Catalog.ingestBatch in batches of 100, the route's unit of work. No HTTP, no importer: the figure is the
 * catalog's documents/s, and the table says where its time goes (statements per batch and their time, grouped by
 * the statement's first words).
 *
 *   node --import tsx bench/email/catalog.ts [--messages 10000] [--batch 100] [--backend both|pglite|postgres]
 *                                            [--concurrency 1] [--memory] [--statements] [--explain]
 *
 * PGlite runs on a temporary data directory (as `memex serve` does) unless --memory; PostgreSQL on a throwaway
 * database of BENCH_DATABASE_URL's server. --concurrency N keeps N batches in flight (the importer keeps 2).
 * Parsing and building are not timed. --explain (PostgreSQL): every statement's plan with actual times and
 * trigger times goes to the server's log (auto_explain), to see what a statement spends inside the server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Session } from 'node:inspector/promises';
import { parseArgs } from 'node:util';
import { effectiveRedaction } from '../../src/mail/analyze.ts';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { Catalog } from '../../src/catalog/catalog.ts';
import type { CatalogDocumentRequest } from '../../src/catalog/types.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database, Queryable } from '../../src/db/types.ts';
import { batchKeyOf } from '../../src/catalog/catalog.ts';
import { prepareIngest } from '../../src/catalog/prepare.ts';
import type { IngestRequestT } from '../../src/schemas/ingest.ts';
import { openScratchPostgres } from '../lib/database.ts';
import { machineLine } from '../lib/server.ts';
import { generateCorpus } from './corpus.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '100' },
    backend: { type: 'string', default: 'both' },
    concurrency: { type: 'string', default: '1' },
    seed: { type: 'string', default: '17' },
    memory: { type: 'boolean', default: false },
    statements: { type: 'boolean', default: false },
    explain: { type: 'boolean', default: false },
    // Experiments: SQL run once after the migrations (e.g. dropping a trigger to see what it costs).
    alter: { type: 'string' },
    // A V8 CPU profile of the timed part only (not the corpus preparation), written to this file prefix.
    profile: { type: 'string' },
  },
});
const total = Number(values.messages);
const batchSize = Number(values.batch);
const concurrency = Number(values.concurrency);
const backends = values.backend === 'both' ? (['postgres', 'pglite'] as const) : [values.backend as 'postgres' | 'pglite'];

interface StatementStats {
  count: number;
  ms: number;
  /** CPU of this process during the statement: on PGlite (same thread) that is the statement's own cost. */
  cpuMs: number;
}

/** Wraps a database so every statement is counted and timed by its kind (first words of its SQL). */
function instrument(db: Database, stats: Map<string, StatementStats>): Database {
  const kindOf = (sql: string) => {
    const s = sql.replace(/\s+/g, ' ').trim();
    const m = /^(WITH\s+\w+\s+AS\s*\(\s*)?(\w+)\s+(\w+)?\s*(\w+)?\s*(\w+)?/i.exec(s);
    const head = s.slice(0, 70);
    return m ? head : s.slice(0, 40);
  };
  const wrap = (q: Queryable): Queryable => ({
    exec: (sql) => q.exec(sql),
    async query(sql, params, opts) {
      const t = performance.now();
      const c = process.cpuUsage();
      try {
        return await q.query(sql, params, opts);
      } finally {
        const k = kindOf(sql);
        const s = stats.get(k) ?? { count: 0, ms: 0, cpuMs: 0 };
        const dc = process.cpuUsage(c);
        s.count++;
        s.ms += performance.now() - t;
        s.cpuMs += (dc.user + dc.system) / 1000;
        stats.set(k, s);
      }
    },
  });
  const base = wrap(db);
  return { ...db, kind: db.kind, query: base.query, exec: base.exec, transaction: (fn) => db.transaction((tx) => fn(wrap(tx))), close: () => db.close() };
}

/** CPU seconds (user + system) of the server processes serving this database (PostgreSQL backends), by pid. */
async function backendCpu(db: Database): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  if (db.kind !== 'postgres') return out;
  const pids = await db.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE datname = current_database()');
  const tick = 100; // USER_HZ on Linux
  for (const { pid } of pids.rows) {
    try {
      const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = f.slice(f.lastIndexOf(')') + 2).split(' ');
      out.set(pid, (Number(fields[11]) + Number(fields[12])) / tick);
    } catch {
      /* another host, or gone */
    }
  }
  return out;
}

async function prepareCorpus(): Promise<CatalogDocumentRequest[]> {
  const corpus = generateCorpus({ messages: total, seed: Number(values.seed), domain: `catalog${values.seed}.example` });
  const redaction = effectiveRedaction(undefined, undefined);
  const out: CatalogDocumentRequest[] = [];
  for (const m of corpus.messages) {
    const msg = await parseCollectedMessage(m.raw);
    const built = buildEmailDocument(msg, { sourceType: 'email_local', prefix: 'email', redaction });
    // The route validates and cleans strings first; the built document already passes (the importer's own check).
    out.push(prepareIngest(built.document as unknown as IngestRequestT));
  }
  return out;
}

async function run(backend: 'pglite' | 'postgres', docs: CatalogDocumentRequest[]) {
  let db: Database;
  let cleanup: () => Promise<void>;
  if (backend === 'postgres') {
    const s = await openScratchPostgres('memex_bench_catalog');
    db = s.db;
    cleanup = s.drop;
  } else {
    const dir = values.memory ? undefined : fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-catalog-'));
    db = await openDatabase({ dataDir: dir });
    cleanup = async () => {
      await db.close();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    };
  }
  const stats = new Map<string, StatementStats>();
  if (values.explain && backend === 'postgres') {
    const name = (await db.query<{ n: string }>('SELECT current_database() AS n')).rows[0].n;
    await db.exec(`ALTER DATABASE ${name} SET session_preload_libraries = 'auto_explain';
      ALTER DATABASE ${name} SET auto_explain.log_min_duration = 0; ALTER DATABASE ${name} SET auto_explain.log_analyze = on;
      ALTER DATABASE ${name} SET auto_explain.log_triggers = on; ALTER DATABASE ${name} SET auto_explain.log_nested_statements = on;`);
    // Connections opened before the settings keep running without them.
    await db.close();
    db = await openDatabase({ databaseUrl: `${(process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres').replace(/\/[^/]*$/, '')}/${name}` });
    cleanup = async () => {
      await db.close();
      const admin = await openDatabase({ databaseUrl: process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres', migrate: false });
      await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await admin.close();
    };
    console.log(`auto_explain on for database ${name}: plans in the server's log`);
  }
  const catalog = new Catalog(values.statements ? instrument(db, stats) : db);
  const batches: CatalogDocumentRequest[][] = [];
  for (let i = 0; i < docs.length; i += batchSize) batches.push(docs.slice(i, i + batchSize));
  let next = 0;
  let stored = 0;
  let failed = 0;
  const session = values.profile ? new Session() : null;
  if (session) {
    session.connect();
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  const server0 = await backendCpu(db);
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) {
        const b = batches[next++];
        const r = await catalog.ingestBatch(b.map((request, index) => ({ index, request })), batchKeyOf(b));
        stored += r.success_count;
        failed += r.failure_count;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  const server1 = await backendCpu(db);
  if (session) {
    const { profile } = await session.post('Profiler.stop');
    fs.writeFileSync(`${values.profile}-${backend}.cpuprofile`, JSON.stringify(profile));
    session.disconnect();
  }
  const serverCpu = [...server1].reduce((n, [pid, s]) => n + s - (server0.get(pid) ?? 0), 0);
  const threads = await db.query<{ n: number }>(`SELECT count(DISTINCT thread_id)::int AS n FROM documents`);
  console.log(
    `${backend.padEnd(8)} ${docs.length} documents in ${seconds.toFixed(2)} s = ${(docs.length / seconds).toFixed(0)} documents/s ` +
      `(batches of ${batchSize}, ${concurrency} in flight; ${stored} stored, ${failed} failed; ${threads.rows[0].n} threads; ` +
      `CPU per document: this process ${((cpu.user + cpu.system) / 1e3 / docs.length).toFixed(3)} ms` +
      (backend === 'postgres' ? `, PostgreSQL ${((serverCpu * 1000) / docs.length).toFixed(3)} ms)` : ')'),
  );
  if (values.statements) {
    const rows = [...stats.entries()].sort((a, b) => b[1].cpuMs - a[1].cpuMs);
    const all = rows.reduce((n, [, s]) => n + s.count, 0);
    const allMs = rows.reduce((n, [, s]) => n + s.ms, 0);
    console.log(`  statement, calls, wall ms per call (CPU of this process per call; on PGlite the statement's own cost)`);
    console.log(`  ${all} statements, ${(all / batches.length).toFixed(1)} per batch, ${(all / docs.length).toFixed(2)} per document; ${(allMs / 1000).toFixed(2)} s in the database driver`);
    for (const [k, s] of rows.slice(0, 25)) {
      console.log(
        `  ${(s.ms / 1000).toFixed(2).padStart(6)} s ${String(s.count).padStart(6)}×  ${(s.ms / s.count).toFixed(2).padStart(7)} ms ` +
          `(CPU here ${(s.cpuMs / s.count).toFixed(2).padStart(6)} ms)  ${k}`,
      );
    }
  }
  await cleanup();
}

const docs = await prepareCorpus();
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${docs.length} prepared email documents`);
for (const backend of backends) await run(backend, docs);
console.log(`load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
