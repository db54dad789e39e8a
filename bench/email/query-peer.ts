/**
 * memex's query language against `notmuch search` (issue 31): the generated mail corpus of the mail
 * benches (bench/email/corpus.ts, seeded) in a Maildir, indexed by `notmuch new` and imported by
 * `memex import mail` into `memex serve`; then 20 phrase, operator and address queries, each asked of
 * both, written in each tool's syntax where they differ (`before:` is notmuch's `date:..`, `has:attachment`
 * its `tag:attachment`, `-word` its `AND NOT word`).
 *
 *   node --import tsx bench/email/query-peer.ts [--messages 3000] [--backend pglite|postgres] [--seed 17]
 *
 * Prints per query: notmuch's message count, memex's (GET /v1/search `total`: documents of the whole
 * match set; attachments are not uploaded, `--no-attachments`, so documents are messages), their
 * difference, and how many of memex's top 10 notmuch also finds (notmuch has no relevance order, so its
 * own top 10 is only its newest; the share of memex's top 10 inside notmuch's match set is what compares).
 * The target: phrase and operator counts within 5 % of notmuch's.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { machineLine, startBenchServer } from '../lib/server.ts';
import { generateCorpus, writeMaildir } from './corpus.ts';
import { hasNotmuch, notmuchConfig } from './notmuch.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '3000' },
    backend: { type: 'string', default: 'pglite' },
    seed: { type: 'string', default: '17' },
  },
});
const total = Number(values.messages);
const backend = values.backend as 'pglite' | 'postgres';
if (!hasNotmuch()) {
  console.error('notmuch is not installed (scripts/install-tools.sh)');
  process.exit(2);
}

type Kind = 'phrase' | 'operator' | 'address';
interface Query {
  kind: Kind;
  memex: string;
  /** notmuch's spelling, when it differs. */
  notmuch?: string;
}

const P = (n: number) => `p${n}@people.example`;
const QUERIES: Query[] = [
  { kind: 'phrase', memex: '"project budget"' },
  { kind: 'phrase', memex: '"flight hotel"' },
  { kind: 'phrase', memex: '"train ticket"' },
  { kind: 'phrase', memex: '"status update"' },
  { kind: 'phrase', memex: '"garden repair insurance"' },
  { kind: 'phrase', memex: '"meeting lunch"' },
  { kind: 'phrase', memex: 'invoice "client contract"', notmuch: 'invoice AND "client contract"' },
  { kind: 'operator', memex: 'subject:budget' },
  { kind: 'operator', memex: 'has:attachment', notmuch: 'tag:attachment' },
  { kind: 'operator', memex: 'budget -invoice', notmuch: 'budget AND NOT invoice' },
  { kind: 'operator', memex: 'dinner OR birthday', notmuch: 'dinner OR birthday' },
  { kind: 'operator', memex: 'before:2024-03-01', notmuch: 'date:..2024-02-29' },
  { kind: 'operator', memex: 'after:2025-06-01 launch', notmuch: 'date:2025-06-01.. AND launch' },
  { kind: 'operator', memex: 'subject:review -draft', notmuch: 'subject:review AND NOT draft' },
  { kind: 'operator', memex: 'has:attachment slides', notmuch: 'tag:attachment AND slides' },
  { kind: 'address', memex: `from:${P(3)}` },
  { kind: 'address', memex: `to:${P(7)}` },
  { kind: 'address', memex: `from:${P(12)} subject:dinner`, notmuch: `from:${P(12)} AND subject:dinner` },
  { kind: 'address', memex: P(21), notmuch: `from:${P(21)} OR to:${P(21)}` },
  { kind: 'address', memex: `from:"Person 5"`, notmuch: `from:"Person 5"` },
];

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-query-peer-'));
const corpus = generateCorpus({ messages: total, seed: Number(values.seed), domain: `qpeer${values.seed}.example` });
const maildir = writeMaildir(path.join(work, 'Maildir'), corpus.messages);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
console.log(`corpus: ${total} messages in ${corpus.threads.length} conversations (seed ${values.seed}); memex on ${backend}`);

const env = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(maildir, path.join(work, 'notmuch')) };
execFileSync('notmuch', ['new', '--quiet'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
const notmuchIds = (q: string): Set<string> =>
  new Set(
    execFileSync('notmuch', ['search', '--output=messages', '--', q], { env, maxBuffer: 1 << 28 })
      .toString('utf8')
      .split('\n')
      .filter((l) => l.startsWith('id:'))
      .map((l) => l.slice(3)),
  );

const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
interface Row {
  q: Query;
  notmuch: number;
  memex: number;
  top: number;
  inNotmuch: number;
  ms: number;
}
const rows: Row[] = [];
try {
  // The import and the searches once the server is ready (its database and index read).
  const ready = async () => (await fetch(`${server.url}/v1/readyz`).catch(() => null))?.status === 200;
  for (let i = 0; i < 1200 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 500));
  const sink = { write: () => true, isTTY: false };
  let err = '';
  const code = await runMailImport([maildir, '--no-attachments'], {
    out: sink,
    err: { write: (s: string) => ((err += s), true), isTTY: false },
    env: { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') },
  });
  if (code !== 0) throw new Error(`memex import mail exited ${code}: ${err.slice(-500)}`);
  for (const q of QUERIES) {
    const ids = notmuchIds(q.notmuch ?? q.memex);
    const t = performance.now();
    const res = await fetch(`${server.url}/v1/search?${new URLSearchParams({ q: q.memex, k: '10' })}`, { headers: { authorization: `Bearer ${server.token}` } });
    const ms = performance.now() - t;
    if (!res.ok) throw new Error(`GET /v1/search ${q.memex} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    const body = (await res.json()) as { total: number; hits: { metadata?: { message_id?: string } }[] };
    const top = body.hits.map((h) => (h.metadata?.message_id ?? '').replace(/^<|>$/g, ''));
    rows.push({ q, notmuch: ids.size, memex: body.total, top: top.length, inNotmuch: top.filter((id) => ids.has(id)).length, ms });
  }
} finally {
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}

const diff = (r: Row) => (r.notmuch === 0 ? (r.memex === 0 ? 0 : Infinity) : (100 * (r.memex - r.notmuch)) / r.notmuch);
const fmt = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(1)} %` : '∞');
console.log('\n| kind | memex query | notmuch query | notmuch | memex | difference | memex top 10 in notmuch\'s set | ms |\n|---|---|---|---:|---:|---:|---:|---:|');
for (const r of rows) {
  console.log(
    `| ${r.q.kind} | \`${r.q.memex}\` | \`${r.q.notmuch ?? r.q.memex}\` | ${r.notmuch} | ${r.memex} | ${fmt(diff(r))} | ${r.inNotmuch}/${r.top} | ${r.ms.toFixed(0)} |`,
  );
}
for (const kind of ['phrase', 'operator', 'address'] as const) {
  const of = rows.filter((r) => r.q.kind === kind);
  const within = of.filter((r) => Math.abs(diff(r)) <= 5).length;
  const top = of.reduce((s, r) => s + r.inNotmuch, 0);
  const shown = of.reduce((s, r) => s + r.top, 0);
  console.log(`${kind}: ${within}/${of.length} counts within 5 % of notmuch; memex top 10 inside notmuch's set ${top}/${shown}`);
}
console.log(`load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
