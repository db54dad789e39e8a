/**
 * What keeping every message's original costs `memex import mail` (issue 40 item 1): messages/s of a first
 * import of a generated Maildir, and disk per 1,000 messages (database + object store), for this checkout and
 * another one (`--base DIR`, e.g. an export of main) in alternating runs, so both see the same machine:
 *
 *   node --import tsx bench/email/originals.ts [--messages 5000] [--backend pglite|postgres] [--runs 2] [--base DIR] [--without] [--record]
 *
 * `--without` adds this checkout with its originals not sent (the importer's requests to the originals route are
 * answered 404 in this process, as by a gateway without the route: the client then sends none), so the cost of
 * the originals alone is the ratio of two rows of one invocation. Each run also prints the importer's requests by
 * kind (documents, attachments, originals): how many, and the mean time of one from sending to its answer.
 *
 * `--record` writes the figure to bench/figures.json and the opening table of docs/BENCHMARKS.md (bench/lib/record.ts).
 *
 * The importer is this checkout's `runMailImport` for both servers (the wire format is the same; against an
 * older server the originals route answers 404 and nothing more is sent), unless `--base-importer` is given:
 * then the base checkout's importer runs against the base server, which is the "before" a person upgrading sees.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { ROOT, machineLine, startBenchServer, type BenchServer } from '../lib/server.ts';
import { recordFigure } from '../lib/record.ts';
import { generateCorpus, writeMaildir } from './corpus.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '5000' },
    backend: { type: 'string', default: 'pglite' },
    runs: { type: 'string', default: '2' },
    base: { type: 'string' },
    without: { type: 'boolean', default: false },
    seed: { type: 'string', default: '17' },
    record: { type: 'boolean', default: false },
  },
});
const total = Number(values.messages);
const backend = values.backend as 'pglite' | 'postgres';

function dirBytes(dir: string): number {
  let n = 0;
  if (!fs.existsSync(dir)) return 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile()) n += fs.statSync(path.join(e.parentPath ?? (e as unknown as { path: string }).path, e.name)).size;
  }
  return n;
}

async function databaseBytes(server: BenchServer): Promise<number> {
  if (!server.databaseUrl) return dirBytes(path.join(server.dataDir, 'pglite'));
  const c = new pg.Client({ connectionString: server.databaseUrl });
  await c.connect();
  try {
    await c.query('CHECKPOINT').catch(() => undefined);
    return Number((await c.query<{ n: string }>('SELECT pg_database_size(current_database()) AS n')).rows[0].n);
  } finally {
    await c.end();
  }
}

/** CPU seconds a process has used (all its threads, user + system), from /proc: a load-proof cost beside the rate. */
function cpuSeconds(pid: number | undefined, thread?: number): number {
  try {
    const stat = fs.readFileSync(thread ? `/proc/${pid}/task/${thread}/stat` : `/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / 100; // utime, stime in clock ticks (USER_HZ 100)
  } catch {
    return NaN;
  }
}
const ownCpu = () => { const u = process.cpuUsage(); return (u.user + u.system) / 1e6; };

const loadBefore = os.loadavg()[0];
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-originals-'));
const corpus = generateCorpus({ messages: total, seed: Number(values.seed), domain: `orig${values.seed}.example`, quoting: true });
const maildir = writeMaildir(path.join(work, 'Maildir'), corpus.messages);
const warmup = writeMaildir(path.join(work, 'Warmup'), generateCorpus({ messages: 200, seed: 99, domain: 'warmup.example' }).messages);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`corpus: ${total} messages (${(dirBytes(maildir) / 2 ** 20).toFixed(1)} MiB Maildir), ${backend}`);

const WITHOUT = 'this checkout, originals not sent';
const checkouts: { name: string; root: string; withoutOriginals?: boolean }[] = [
  { name: 'this checkout', root: ROOT },
  ...(values.without ? [{ name: WITHOUT, root: ROOT, withoutOriginals: true }] : []),
  ...(values.base ? [{ name: `base (${values.base})`, root: path.resolve(values.base) }] : []),
];

// The importer runs in this process: its requests are timed here by kind, and refused for the originals-not-sent row.
const realFetch = globalThis.fetch;
let refuseOriginals = false;
let requests = new Map<string, { n: number; ms: number }>();
const kindOf = (url: string) => {
  const p = new URL(url).pathname;
  return p.endsWith('/originals') ? 'originals' : p.endsWith('file:batch') ? 'attachments (file:batch)' : p.endsWith(':batch') ? 'documents (ingest:batch)' : p;
};
globalThis.fetch = async (input: Parameters<typeof fetch>[0], init?: Parameters<typeof fetch>[1]) => {
  const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
  const kind = kindOf(url);
  if (refuseOriginals && kind === 'originals') return new Response('{"detail":"Not Found"}', { status: 404, headers: { 'content-type': 'application/json' } });
  const t = performance.now();
  const res = await realFetch(input, init);
  const body = await res.arrayBuffer(); // the answer read whole: the time is the request's, not the caller's
  const k = requests.get(kind) ?? { n: 0, ms: 0 };
  k.n++;
  k.ms += performance.now() - t;
  requests.set(kind, k);
  return new Response(body, { status: res.status, statusText: res.statusText, headers: res.headers });
};

const rows: { name: string; rate: number; serverCpuPerK: number; importerCpuPerK: number; dbPerK: number; objectsPerK: number; objects: number }[] = [];
for (let run = 0; run < Number(values.runs); run++) {
  for (const c of run % 2 === 0 ? checkouts : [...checkouts].reverse()) {
    const { runMailImport } = (await import(pathToFileURL(path.join(c.root, 'src', 'cli', 'import-mail.ts')).href)) as typeof import('../../src/cli/import-mail.ts');
    const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off', GC_INTERVAL_HOURS: '0' }, c.root);
    try {
      // healthz answers while the server still starts (the early listener): wait until it takes requests.
      for (const deadline = Date.now() + 300_000; (await fetch(`${server.url}/v1/readyz`).then((r) => r.status, () => 0)) !== 200; ) {
        if (Date.now() > deadline) throw new Error('server not ready within 300 s');
        await new Promise((r) => setTimeout(r, 200));
      }
      const env = { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, `state-${run}-${rows.length}.json`) };
      let said = '';
      const sink = { write: (s: string) => ((said += s), true), isTTY: false };
      // A warm-up of a few other messages: the first requests of a fresh server (and its model threads starting)
      // are not what an import costs.
      await runMailImport([warmup], { out: { write: () => true, isTTY: false }, err: { write: () => true, isTTY: false }, env: { ...env, MEMEX_MAIL_IMPORT_STATE: `${env.MEMEX_MAIL_IMPORT_STATE}.warm` } });
      requests = new Map();
      refuseOriginals = c.withoutOriginals === true;
      const pid = server.child.pid;
      const cpu0 = { server: cpuSeconds(pid), main: cpuSeconds(pid, pid), importer: ownCpu() };
      // The import's window on the monotonic clock (µs, as a --cpu-prof profile's timestamps), to cut a profile to it.
      const window0 = process.hrtime.bigint() / 1000n;
      const t = performance.now();
      const code = await runMailImport([maildir], { out: sink, err: sink, env });
      const seconds = (performance.now() - t) / 1000;
      refuseOriginals = false;
      const cpu = { server: cpuSeconds(pid) - cpu0.server, main: cpuSeconds(pid, pid) - cpu0.main, importer: ownCpu() - cpu0.importer };
      if (process.env.BENCH_SERVER_NODE_ARGS) console.log(`server ${pid}: the import ran from ${window0} to ${process.hrtime.bigint() / 1000n} µs (monotonic)`);
      const kinds = [...requests].filter(([k]) => !k.startsWith('/')).map(([k, v]) => `${k} ${v.n} × ${(v.ms / v.n).toFixed(0)} ms`);
      console.log(`${c.name}, run ${run + 1}: ${(total / seconds).toFixed(0)} msg/s; CPU per 1,000 messages: server ${(cpu.server / total * 1000).toFixed(1)} s (main thread ${(cpu.main / total * 1000).toFixed(1)} s), importer ${(cpu.importer / total * 1000).toFixed(1)} s; requests: ${kinds.join(', ')}; load ${os.loadavg()[0].toFixed(1)}`);
      if (code !== 0) console.error(`import exited with ${code}: ${said.split('\n').filter((l) => l.startsWith('mail import done')).join('')}`);
      const objectsDir = path.join(server.dataDir, 'objects');
      const objects = fs.existsSync(path.join(objectsDir, 'sha256')) ? fs.readdirSync(path.join(objectsDir, 'sha256'), { recursive: true }).filter((n) => /[0-9a-f]{64}$/.test(String(n))).length : 0;
      rows.push({ name: c.name, rate: total / seconds, serverCpuPerK: cpu.server / total * 1000, importerCpuPerK: cpu.importer / total * 1000, dbPerK: (await databaseBytes(server)) / total * 1000, objectsPerK: dirBytes(objectsDir) / total * 1000, objects });
    } finally {
      await server.stop();
    }
  }
}
console.log('\n| checkout | messages/s | CPU s per 1,000 messages: server, importer | database per 1,000 messages | objects per 1,000 messages | objects |\n|---|---:|---:|---:|---:|---:|');
const mib = (b: number) => `${(b / 2 ** 20).toFixed(2)} MiB`;
for (const r of rows) console.log(`| ${r.name} | ${r.rate.toFixed(0)} | ${r.serverCpuPerK.toFixed(1)}, ${r.importerCpuPerK.toFixed(1)} | ${mib(r.dbPerK)} | ${mib(r.objectsPerK)} | ${r.objects} |`);
if (values.without) {
  const mean = (name: string) => rows.filter((r) => r.name === name).reduce((n, r, _, a) => n + r.rate / a.length, 0);
  const cpu = (name: string) => rows.filter((r) => r.name === name).reduce((n, r, _, a) => n + r.serverCpuPerK / a.length, 0);
  console.log(`originals cost ${((1 - mean('this checkout') / mean(WITHOUT)) * 100).toFixed(1)} % of the rate (means ${mean('this checkout').toFixed(0)} vs ${mean(WITHOUT).toFixed(0)} msg/s) and ${((cpu('this checkout') / cpu(WITHOUT) - 1) * 100).toFixed(1)} % more server CPU`);
}
console.log(`load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
if (values.record) {
  const rates = (name: string) => rows.filter((r) => r.name === name).map((r) => r.rate.toFixed(0)).join(', ');
  const mean = (name: string) => { const r = rows.filter((x) => x.name === name); return r.reduce((n, x) => n + x.rate, 0) / r.length; };
  const base = checkouts.find((c) => !c.withoutOriginals && c.root !== ROOT)?.name;
  const cost = values.without ? `; **originals cost ${((1 - mean('this checkout') / mean(WITHOUT)) * 100).toFixed(0)} %** (${rates(WITHOUT)} msg/s not sent)` : '';
  recordFigure({
    area: `mail import with originals (${backend})`,
    figure: `messages/s of a first \`memex import mail\` of ${total.toLocaleString('en')} generated messages${values.without ? ', with and without originals' : ''}${base ? ', this checkout vs the base' : ''}`,
    value: `${rates('this checkout')} msg/s${cost}${base ? ` vs ${rates(base)} (${values.base})` : ''}; database ${mib(rows[0].dbPerK)} and objects ${mib(rows[0].objectsPerK)} per 1,000 messages`,
    conditions: `${backend}, embedding worker off, gc off, ${values.runs} alternating runs; load ${loadBefore.toFixed(1)} → ${os.loadavg()[0].toFixed(1)}, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC`,
    command: `\`node --import tsx bench/email/originals.ts ${process.argv.slice(2).join(' ')}\``,
    section: "Keeping every message's original",
  });
}
fs.rmSync(work, { recursive: true, force: true });
