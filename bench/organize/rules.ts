/**
 * Organize (issue 44): tagging rules and tag: queries against `memex serve` in a child process.
 *   node --import tsx bench/organize/rules.ts [--docs 5000] [--store 10000] [--backend pglite|postgres|both] [--keep] [--drop]
 * --docs: documents per phase (B and C below); --store: documents in the store when the rule is added (phase A makes
 * store - docs; default 2 × docs). At 1,000,000:
 *   node --import tsx bench/organize/rules.ts --store 1000000 --docs 20000 --backend postgres --keep
 * --keep: phase A's store is built once and kept (PostgreSQL: database memex_bench_rules_<A>, and the data dir
 * $TMPDIR/memex-bench-rules-<backend>-<A>); each run works on a copy of it (dropped at its end), so a second run does
 * not ingest again (the copy's index is read from the database at start: its snapshot names the kept database).
 * --in-place (with --keep): the run works on the kept store itself, not a copy, so the index snapshot the
 * server wrote at its last stop is used (a copy's is refused: it names another database) and a 1M store does not
 * have to be read from the database again; the run adds its documents and rules to the store: for a last run.
 * --root PATH: the server of another checkout runs (its `bin/memex.js`), to compare a change side by side.
 * --drop: the kept store is dropped at the end (alone, without a run: --drop --no-run).
 * --copies K (PostgreSQL, with --keep): phase A is A / K documents through the API, copied K - 1 times in SQL
 * (bench/lib/replicate.ts): on a loaded machine the API's few hundred documents a second would take over an hour
 * at 1M. An interrupted build of the kept store goes on where it stopped.
 * Prints, per backend:
 *   - a rule matching 10 % of the store applied (POST /v1/tags/rules: the tags written), and until search sees them;
 *   - ingest throughput with 20 rules against none, the same number of documents onto a store of the same size
 *     (phase B: no rules; phase C: 20 rules), and how long after the last batch the rules had tagged everything;
 *   - `tag:` queries against the plain query they restrict (median of 40 each).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { machineLine, percentile, startBenchServer, type BenchServer } from '../lib/server.ts';
import { message, rng } from '../lib/generate.ts';
import { replicateDocuments } from '../lib/replicate.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '5000' },
    store: { type: 'string' },
    backend: { type: 'string', default: 'pglite' },
    keep: { type: 'boolean', default: false },
    drop: { type: 'boolean', default: false },
    'no-run': { type: 'boolean', default: false },
    copies: { type: 'string', default: '1' },
    'in-place': { type: 'boolean', default: false },
    /** Another checkout whose `memex serve` runs (to compare a change side by side). */
    root: { type: 'string' },
  },
});
/** --copies K (PostgreSQL, --keep): phase A's store is A / K documents through the API and K - 1 copies in SQL (bench/lib/replicate.ts). */
const COPIES = Number(values.copies);
const N = Number(values.docs);
/** Documents in the store when the rule is added: phase A makes STORE - N, phase B adds N. */
const STORE = Number(values.store ?? 2 * N);
const A = STORE - N;
if (!(A > 0)) throw new Error('--store must be larger than --docs');
if (COPIES > 1 && (!values.keep || A % COPIES !== 0)) throw new Error('--copies needs --keep and a phase A (store - docs) it divides');
const backends = values.backend === 'both' ? (['pglite', 'postgres'] as const) : [values.backend as 'pglite' | 'postgres'];
const BATCH = 100;
const MARK = 'zebracode';
const ADMIN_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
const load = () => fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
const rssMb = (s: BenchServer) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${s.child.pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
};

async function admin(sql: string): Promise<any[]> {
  const c = new pg.Client({ connectionString: ADMIN_URL });
  await c.connect();
  try {
    return (await c.query(sql)).rows;
  } finally {
    await c.end();
  }
}
const urlOf = (db: string) => {
  const u = new URL(ADMIN_URL);
  u.pathname = `/${db}`;
  return u.toString();
};

async function api(s: BenchServer, method: string, path: string, body?: unknown): Promise<any> {
  let res: Response;
  for (let attempt = 0; ; attempt++) {
    try {
      // A kept-alive connection the server closed meanwhile resets; the request is sent again (ingest is idempotent).
      res = await fetch(`${s.url}${path}`, {
        method,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${s.token}`, connection: 'close' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      break;
    } catch (err) {
      if (attempt >= 3) throw err;
    }
  }
  const json = await res.json();
  if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(json).slice(0, 300)}`);
  return json;
}

/**
 * Documents from..to (every tenth carries MARK), ingested 4 batches at a time; documents/s. The batches are made as
 * they are sent (the same documents as made up front: one generator, drawn in order), so 1M fit in memory.
 */
async function ingest(s: BenchServer, from: number, to: number, batch = BATCH, resumeAt = from): Promise<number> {
  const r = rng(from + 7);
  let next = from;
  const take = () => {
    // Resuming an interrupted build: the documents before resumeAt are made (the generator's sequence) and not sent.
    while (next + batch <= resumeAt) for (let i = 0; i < batch; i++, next++) message(r, next);
    const i = next;
    next = Math.min(to, next + batch);
    return Array.from({ length: next - i }, (_, k) => {
      const d = message(r, i + k) as any;
      if ((i + k) % 10 === 0) d.content.data += ` ${MARK}`;
      return d;
    });
  };
  const t0 = performance.now();
  let said = from;
  if (resumeAt > from) console.log(`  resuming at ${resumeAt - (resumeAt % batch)}`);
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < to) {
        await api(s, 'POST', '/v1/ingest:batch', { documents: take() });
        if (next - said >= 50_000) {
          said = next;
          const rate = (next - from) / ((performance.now() - t0) / 1000);
          console.log(`  ingested ${next - from} of ${to - from} (${rate.toFixed(0)} docs/s, RSS ${rssMb(s)} MB, load ${load()})`);
        }
      }
    }),
  );
  return (to - from) / ((performance.now() - t0) / 1000);
}

const total = async (s: BenchServer, q: string) => (await api(s, 'GET', `/v1/search?${new URLSearchParams({ q, k: '1' })}`)).total as number;

async function until(s: BenchServer, q: string, want: number): Promise<number> {
  const t0 = performance.now();
  while ((await total(s, q)) < want) await new Promise((r) => setTimeout(r, 50));
  return performance.now() - t0;
}

async function median(s: BenchServer, q: string): Promise<number> {
  const ms: number[] = [];
  for (let i = 0; i < 40; i++) {
    const t0 = performance.now();
    await total(s, q);
    ms.push(performance.now() - t0);
  }
  return percentile(ms.sort((a, b) => a - b), 50);
}

const ENV = { EMBEDDING_WORKER: 'off', TAG_RULES_POLL_MS: '200', OCR_ENABLED: 'false' };

async function ready(s: BenchServer): Promise<number> {
  const t0 = performance.now();
  while ((await fetch(`${s.url}/v1/readyz`).then((r) => r.status, () => 0)) !== 200) await new Promise((r) => setTimeout(r, 200));
  return performance.now() - t0;
}

/** The kept store of phase A: its data dir, its database (PostgreSQL), and the file saying it is complete. */
function keptStore(backend: 'pglite' | 'postgres') {
  const dataDir = path.join(os.tmpdir(), `memex-bench-rules-${backend}-${A}`);
  const db = `memex_bench_rules_${A}`;
  return { dataDir, db, databaseUrl: backend === 'postgres' ? urlOf(db) : undefined, done: `${dataDir}.complete` };
}

async function dropKept(backend: 'pglite' | 'postgres'): Promise<void> {
  const k = keptStore(backend);
  fs.rmSync(k.dataDir, { recursive: true, force: true });
  fs.rmSync(k.done, { force: true });
  if (backend === 'postgres') await admin(`DROP DATABASE IF EXISTS ${k.db} WITH (FORCE)`);
  console.log(`${backend.padEnd(8)} dropped the kept store of ${A} documents`);
}

/** Phase A's store, built once (and stopped: its index snapshot written) or found from an earlier run; a copy to run on. */
async function copyOfKept(backend: 'pglite' | 'postgres'): Promise<{ dataDir: string; databaseUrl?: string; drop: () => Promise<void> }> {
  const k = keptStore(backend);
  if (!fs.existsSync(k.done)) {
    // An interrupted build goes on where it stopped (ingest is idempotent; the last batches in flight are sent again).
    let have = 0;
    if (backend === 'postgres' && fs.existsSync(k.dataDir) && (await admin(`SELECT 1 FROM pg_database WHERE datname = '${k.db}'`)).length > 0) {
      const c = new pg.Client({ connectionString: k.databaseUrl });
      await c.connect();
      have = Number((await c.query(`SELECT count(*) AS n FROM documents WHERE is_active_version AND strpos(external_id, '#') = 0`)).rows[0].n);
      await c.end();
    } else {
      fs.rmSync(k.dataDir, { recursive: true, force: true });
      fs.mkdirSync(k.dataDir, { recursive: true });
      if (backend === 'postgres') await admin(`CREATE DATABASE ${k.db}`);
    }
    const viaApi = A / COPIES;
    // Built by the checkout that runs (--root): an older one may refuse a database a newer one migrated.
    const s = await startBenchServer(backend, ENV, values.root, { dataDir: k.dataDir, databaseUrl: k.databaseUrl });
    try {
      await ready(s);
      const rate = await ingest(s, 0, viaApi, 500, Math.max(0, have - 4 * 500));
      console.log(`${backend.padEnd(8)} kept store: ${viaApi} documents ingested at ${rate.toFixed(0)} docs/s; RSS ${rssMb(s)} MB; load ${load()}`);
    } finally {
      await s.stop();
    }
    if (COPIES > 1) {
      const t0 = performance.now();
      const n = await replicateDocuments(k.databaseUrl!, COPIES);
      // The index snapshot knows none of the copies: the next start reads the store from the database.
      for (const f of fs.readdirSync(k.dataDir)) if (f.includes('snapshot')) fs.rmSync(path.join(k.dataDir, f), { force: true });
      console.log(`${backend.padEnd(8)} kept store: ${n} copies made in SQL in ${((performance.now() - t0) / 1000).toFixed(0)} s; load ${load()}`);
    }
    fs.writeFileSync(k.done, `${A}\n`);
  } else console.log(`${backend.padEnd(8)} kept store of ${A} documents found (${k.dataDir}${k.databaseUrl ? `, database ${k.db}` : ''})`);
  if (values['in-place']) return { dataDir: k.dataDir, databaseUrl: k.databaseUrl, drop: async () => undefined };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-rules-run-'));
  const t0 = performance.now();
  fs.cpSync(k.dataDir, dataDir, { recursive: true });
  let databaseUrl: string | undefined;
  const copy = `memex_bench_rules_run_${Date.now()}`;
  if (backend === 'postgres') {
    await admin(`CREATE DATABASE ${copy} TEMPLATE ${k.db} STRATEGY FILE_COPY`);
    databaseUrl = urlOf(copy);
  }
  console.log(`${backend.padEnd(8)} copied the kept store in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return {
    dataDir,
    databaseUrl,
    drop: async () => {
      fs.rmSync(dataDir, { recursive: true, force: true });
      if (backend === 'postgres') await admin(`DROP DATABASE IF EXISTS ${copy} WITH (FORCE)`);
    },
  };
}

async function run(backend: 'pglite' | 'postgres') {
  const copy = values.keep ? await copyOfKept(backend) : null;
  const s = await startBenchServer(backend, ENV, values.root, copy ?? undefined);
  try {
    const readyMs = await ready(s);
    if (copy) console.log(`${backend.padEnd(8)} ready on the store in ${(readyMs / 1000).toFixed(1)} s; RSS ${rssMb(s)} MB; load ${load()}`);
    else await ingest(s, 0, A); // phase A: the store
    const plain = await ingest(s, A, STORE); // phase B: N more, no rules
    await total(s, 'warm');
    const rssBefore = rssMb(s);

    let t0 = performance.now();
    const loadAt = load();
    const rule = await api(s, 'POST', '/v1/tags/rules', { tag: 'bench/ten', query: MARK });
    const applied = performance.now() - t0;
    const seen = applied + (await until(s, 'tag:bench/ten', rule.tagged));
    console.log(
      `${backend.padEnd(8)} rule matching ${rule.tagged} of ${STORE} documents (10 %) applied in ${(applied / 1000).toFixed(2)} s, ` +
        `in search (tag:) after ${(seen / 1000).toFixed(2)} s; RSS ${rssBefore} MB before, ${rssMb(s)} MB after; load ${loadAt} → ${load()}`,
    );

    const words = ['invoice', 'plumber', 'bank transfer', 'doctor appointment', 'flight hotel', 'birthday party', 'from:ann@example.com',
      'type:email budget', 'has:attachment', 'rent landlord', 'insurance renewal', 'concert tickets', 'gym training', 'recipe',
      'password security', 'hiring interview', 'garden', 'museum', 'tag:bench/ten invoice'];
    for (const [i, q] of words.entries()) await api(s, 'POST', '/v1/tags/rules', { tag: `bench/r${i}`, query: q });
    const ruled = await ingest(s, STORE, STORE + N); // phase C: N more, 20 rules
    t0 = performance.now();
    const lag = await until(s, 'tag:bench/ten', Math.ceil((STORE + N) / 10));
    console.log(
      `${backend.padEnd(8)} ingest of ${N} onto ${A} (B) and ${STORE} (C): ${plain.toFixed(0)} docs/s without rules, ${ruled.toFixed(0)} docs/s with 20 rules ` +
        `(ratio ${(ruled / plain).toFixed(3)}); rules done ${(lag / 1000).toFixed(2)} s after the last batch; load ${load()}`,
    );

    for (const [q, tq] of [
      ['invoice', 'invoice tag:bench/ten'],
      ['meeting budget', 'meeting budget -tag:bench/ten'],
      ['zebracode', 'tag:bench/ten'],
    ]) {
      const a = await median(s, q);
      const b = await median(s, tq);
      console.log(`${backend.padEnd(8)} median "${q}" ${a.toFixed(1)} ms, "${tq}" ${b.toFixed(1)} ms (ratio ${(b / a).toFixed(2)}); load ${load()}`);
    }
    console.log(`${backend.padEnd(8)} server peak RSS ${s.peakRssMb()} MB`);
  } finally {
    await s.stop();
    await copy?.drop();
  }
}

console.log(`memex organize benchmark — ${machineLine()}; store of ${STORE} when the rule is added (A ${A}), ${N} documents per phase; load ${load()}`);
for (const b of backends) {
  if (!values['no-run']) await run(b);
  if (values.drop) await dropKept(b);
}
