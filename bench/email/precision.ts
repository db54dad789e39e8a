/**
 * Exact queries against notmuch with vectors present (issue 48 items 1 and 2), on the real-shaped list Maildir
 * of bench/email/list-mail.ts (`git format-patch` of this repository's history, posted to a list, with replies).
 * memex imports it with `memex import mail` into `memex serve` (embedding worker on, the hash provider, so every
 * chunk has a vector before the queries run); notmuch indexes the same folder. Queries are taken from the mail:
 * code identifiers (snake_case, `func()`), file paths, abbreviated hashes of the diffs, senders' addresses,
 * subject phrases, and operator queries (`from:ADDR WORD`).
 *
 *   node --import tsx bench/email/precision.ts [--patches 150] [--backend pglite|postgres] [--root OTHER_CHECKOUT]
 *
 * Prints per class: queries, memex top-10 hits that notmuch also finds (precision against notmuch), notmuch's
 * top results memex has in its top 10 (agreement), hits from the vector leg alone, and answers that differed
 * when asked twice.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { startBenchServer } from '../lib/server.ts';
import { generateListMail } from './list-mail.ts';
import { notmuchConfig } from './notmuch.ts';

const { values } = parseArgs({
  options: {
    patches: { type: 'string', default: '150' },
    backend: { type: 'string', default: 'pglite' },
    root: { type: 'string' },
    /** Queries per class at most. */
    per: { type: 'string', default: '12' },
  },
});
const per = Number(values.per);

const mail = generateListMail({ patches: Number(values.patches) });
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-precision-'));
const maildir = path.join(work, 'Maildir');
for (const sub of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(maildir, sub), { recursive: true });
mail.forEach((m, i) => fs.writeFileSync(path.join(maildir, 'cur', `${i}.bench:2,S`), m.raw));

// Queries from the mail itself, each class in a seeded, frequency-spread choice.
const texts = mail.map((m) => m.raw.toString('utf8'));
function pick(re: RegExp, filter: (s: string) => boolean = () => true): string[] {
  const df = new Map<string, number>();
  for (const t of texts) for (const s of new Set([...t.matchAll(re)].map((x) => x[1] ?? x[0]))) if (filter(s)) df.set(s, (df.get(s) ?? 0) + 1);
  // Spread over rare and common: sorted by document frequency, every n-th.
  const all = [...df].sort((a, b) => a[1] - b[1] || (a[0] < b[0] ? -1 : 1)).map(([s]) => s);
  const step = Math.max(1, Math.floor(all.length / per));
  return all.filter((_, i) => i % step === 0).slice(0, per);
}
const classes: Record<string, string[]> = {
  identifier: pick(/\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b/g, (s) => s.length >= 8),
  'func()': pick(/\b([a-z][A-Za-z0-9]*(?:_[a-z0-9]+)*\(\))/g, (s) => s.length >= 8).map((s) => s),
  path: pick(/^diff --git a\/(\S+\/\S+\.\w+) /gm),
  hash: pick(/^index ([0-9a-f]{7,12})\.\./gm, (s) => /[a-f]/.test(s) && /\d/.test(s)),
  address: pick(/^From: .*<([^>]+@[^>]+)>/gm),
  phrase: pick(/^Subject: (?:\[PATCH[^\]]*\] )?(?:Re: )?([A-Za-z]+ [a-z]+ [a-z]+)/gm).map((s) => `"${s}"`),
};
const senders = classes.address.slice(0, per);
classes.operator = senders.map((a, i) => `from:${a} ${['search', 'index', 'test', 'docs', 'import', 'mail'][i % 6]}`);

const env = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(maildir, path.join(work, 'notmuch')) };
execFileSync('notmuch', ['new', '--quiet'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
/** notmuch's answer (Message-IDs, newest first) to the query as a notmuch user types it. */
const notmuchIds = (q: string): string[] =>
  execFileSync('notmuch', ['search', '--output=messages', q.replace(/\(\)$/, '')], { env, maxBuffer: 1 << 26 })
    .toString()
    .split('\n')
    .filter(Boolean)
    .map((l) => l.replace(/^id:/, ''));

const server = await startBenchServer(
  values.backend as 'pglite' | 'postgres',
  { EMBEDDING_PROVIDER: 'hash', EMBEDDING_WORKER: 'true' },
  ...(values.root ? [values.root] : []),
);
const auth = { authorization: `Bearer ${server.token}` };
try {
  for (let t = Date.now(); Date.now() - t < 15 * 60_000; ) {
    const r = await fetch(`${server.url}/v1/readyz`).catch(() => null);
    if (r?.status === 200) break;
    await new Promise((res) => setTimeout(res, 1000));
  }
  let said = '';
  const started = Date.now();
  const code = await runMailImport([maildir], {
    out: { write: () => true, isTTY: false },
    err: { write: (s: string) => ((said += s), true), isTTY: false },
    env: { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') },
  });
  if (code !== 0) throw new Error(`memex import mail exited ${code}: ${said.slice(-2000)}`);
  const imported = (Date.now() - started) / 1000;
  // Every chunk embedded: the vector leg has all it could add.
  let waiting = -1;
  for (let t = Date.now(); Date.now() - t < 20 * 60_000; ) {
    const s = (await (await fetch(`${server.url}/v1/status`, { headers: auth })).json()) as { queue?: { waiting?: number }; models?: { vectors?: number }[] };
    waiting = s.queue?.waiting ?? -1;
    if (waiting === 0 && (s.models?.[0]?.vectors ?? 0) > 0) break;
    await new Promise((res) => setTimeout(res, 2000));
  }
  console.log(`${mail.length} messages (${values.patches} patches), ${server.backend}, imported in ${imported.toFixed(0)} s, embedding queue ${waiting}`);

  const ask = async (q: string) => {
    const res = await fetch(`${server.url}/v1/search?${new URLSearchParams({ q, k: '10' })}`, { headers: auth });
    const body = (await res.json()) as { total: number; hits: { metadata?: { message_id?: string }; sources: string[]; attached_to?: unknown }[] };
    return { total: body.total, hits: body.hits.map((h) => ({ id: String(h.metadata?.message_id ?? '').replace(/^<|>$/g, ''), vectorOnly: !h.sources.includes('lexical') })) };
  };
  console.log('| class | queries | memex top-10 hits notmuch finds too | notmuch top results in memex top 10 | vector-only hits | differed asked twice | notmuch total / memex total |');
  console.log('|---|---|---|---|---|---|---|');
  for (const [cls, queries] of Object.entries(classes)) {
    let hits = 0;
    let agreed = 0;
    let wanted = 0;
    let shared = 0;
    let vectorOnly = 0;
    let differed = 0;
    let nmTotal = 0;
    let mxTotal = 0;
    for (const q of queries) {
      const nm = notmuchIds(q);
      const set = new Set(nm);
      const a = await ask(q);
      const b = await ask(q);
      if (JSON.stringify(a) !== JSON.stringify(b)) differed++;
      hits += a.hits.length;
      agreed += a.hits.filter((h) => set.has(h.id)).length;
      vectorOnly += a.hits.filter((h) => h.vectorOnly).length;
      const top = new Set(a.hits.map((h) => h.id));
      wanted += Math.min(10, nm.length);
      // notmuch lists newest first, unranked: any 10 of its answer are "its top" when it has more.
      shared += Math.min(10, nm.length, nm.filter((id) => top.has(id)).length);
      nmTotal += nm.length;
      mxTotal += a.total;
    }
    const pct = (x: number, n: number) => (n === 0 ? 'n/a' : `${x}/${n} (${Math.round((100 * x) / n)} %)`);
    console.log(`| ${cls} | ${queries.length} | ${pct(agreed, hits)} | ${pct(shared, wanted)} | ${vectorOnly} | ${differed} | ${nmTotal} / ${mxTotal} |`);
  }
  console.log(`examples: ${Object.entries(classes).map(([c, q]) => `${c}: ${q.slice(0, 2).join(', ')}`).join('; ')}`);
} finally {
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
