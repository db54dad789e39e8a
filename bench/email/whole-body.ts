/**
 * The whole message, marked not cut (issue 40 item 2), on real-shaped list mail (bench/email/list-mail.ts:
 * `git format-patch` of this repository's history posted to a list with Mailman's footer, and replies that
 * interleave, top-post, reply from Outlook, forward, are HTML-only or quoted-printable).
 *
 *   node --import tsx bench/email/whole-body.ts [--patches 300] [--backend pglite|postgres] [--seed 40]
 *
 * Prints:
 * - body characters kept: of each message's decoded body (text/plain part, or the HTML part's text), the
 *   characters in the stored text (must be 100 %), and what the cleaner before issue 40 kept of the same
 *   messages (bench/email/old-clean-body.ts), with the patch mails that lost their diff;
 * - a patch's diff lines searchable: for each patch mail, a phrase of an added diff line searched
 *   (GET /v1/search), found in the top 10 or not;
 * - query counts against `notmuch search` on the same Maildir, for queries whose words are in quoted,
 *   patch, signature or footer parts (the issue's target: within 5 %).
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { emailBodyText } from '../../src/mail/body-text.ts';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { NO_REDACTIONS } from '../../src/privacy/policy.ts';
import type { BodyPart } from '../../src/mail/body-parts.ts';
import { machineLine, startBenchServer } from '../lib/server.ts';
import { writeMaildir } from './corpus.ts';
import { generateListMail } from './list-mail.ts';
import { hasNotmuch, notmuchConfig } from './notmuch.ts';
import { cleanEmailBody } from './old-clean-body.ts';

const { values } = parseArgs({
  options: {
    patches: { type: 'string', default: '300' },
    backend: { type: 'string', default: 'pglite' },
    seed: { type: 'string', default: '40' },
  },
});
const backend = values.backend as 'pglite' | 'postgres';
if (!hasNotmuch()) {
  console.error('notmuch is not installed (scripts/install-tools.sh)');
  process.exit(2);
}

const t0 = performance.now();
const corpus = generateListMail({ patches: Number(values.patches), seed: Number(values.seed), domain: `whole${values.seed}.example` });
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
const shapes = new Map<string, number>();
for (const m of corpus) shapes.set(m.shape, (shapes.get(m.shape) ?? 0) + 1);
console.log(`corpus: ${corpus.length} messages (${[...shapes].map(([s, n]) => `${n} ${s}`).join(', ')}), generated in ${((performance.now() - t0) / 1000).toFixed(1)} s; memex on ${backend}`);

// 1. Characters kept, new and old, and the parts found.
let decoded = 0;
let keptNow = 0;
let keptOld = 0;
let patchMails = 0;
let patchLostOld = 0;
let patchKeptNow = 0;
const partChars = new Map<string, number>();
for (const m of corpus) {
  const msg = await parseCollectedMessage(m.raw);
  const body = emailBodyText(msg.text, msg.html).text;
  const doc = buildEmailDocument(msg, { sourceType: 'email_local', prefix: 'email', redaction: NO_REDACTIONS }).document;
  decoded += body.length;
  // Kept: the stored text is the body (every character, in order); a shorter text counts what it holds.
  keptNow += doc.content.data === body ? body.length : 0;
  const old = cleanEmailBody(msg.text, msg.html).text;
  keptOld += Math.min(old.length, body.length);
  for (const p of doc.metadata.body_parts as BodyPart[]) partChars.set(p.kind, (partChars.get(p.kind) ?? 0) + p.end - p.start);
  if (m.shape === 'patch') {
    patchMails++;
    if (!old.includes('diff --git')) patchLostOld++;
    if (doc.content.data.includes('diff --git')) patchKeptNow++;
  }
}
const pct = (a: number, b: number) => `${((100 * a) / b).toFixed(1)} %`;
console.log(`\nbody characters kept: now ${keptNow.toLocaleString('en')} of ${decoded.toLocaleString('en')} (${pct(keptNow, decoded)}); the cleaner before issue 40 kept ${keptOld.toLocaleString('en')} (${pct(keptOld, decoded)})`);
console.log(`patch mails with their diff: now ${patchKeptNow} of ${patchMails}; before, ${patchMails - patchLostOld} of ${patchMails} (${patchLostOld} lost it)`);
console.log(`parts (characters): ${[...partChars].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} ${pct(n, decoded)}`).join(', ')}`);

// 2 and 3 need the store and notmuch.
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-whole-body-'));
const maildir = writeMaildir(path.join(work, 'Maildir'), corpus.map((m) => ({ ...m, thread: 0 })));
const env = { ...process.env, NOTMUCH_CONFIG: notmuchConfig(maildir, path.join(work, 'notmuch')) };
execFileSync('notmuch', ['new', '--quiet'], { env, stdio: ['ignore', 'ignore', 'pipe'] });
const notmuchCount = (q: string) => Number(execFileSync('notmuch', ['count', '--', q], { env }).toString().trim());

/**
 * For each patch mail, a word of its added diff lines that no other message of the corpus holds (letters
 * only, 6 or more, as its own word): searched, the patch mail should be in the top 10.
 */
const wordsOf = (s: string) => new Set((s.match(/(?<![\w.\/-])[A-Za-z]{6,}(?![\w.\/-])/g) ?? []).map((w) => w.toLowerCase()));
const df = new Map<string, number>();
for (const m of corpus) for (const w of new Set([...(m.body.toLowerCase().match(/[a-z]+/g) ?? [])])) df.set(w, (df.get(w) ?? 0) + 1);
const patchProbes = corpus
  .filter((m) => m.shape === 'patch')
  .map((m) => {
    const added = m.segments[1].text.split('\n').filter((l) => /^\+[^+]/.test(l)).join('\n');
    const unique = [...wordsOf(added)].filter((w) => df.get(w) === 1).sort();
    return unique.length ? { id: m.id, q: unique[0] } : null;
  })
  .filter((p): p is { id: string; q: string } => p !== null);
const patchCount = corpus.filter((m) => m.shape === 'patch').length;

type Kind = 'patch' | 'quote' | 'answer' | 'footer' | 'signature';
const QUERIES: { kind: Kind; q: string }[] = [
  { kind: 'patch', q: 'AUTH_TOKEN' },
  { kind: 'patch', q: 'EMBEDDING_WORKER' },
  { kind: 'patch', q: 'startTestGateway' },
  { kind: 'patch', q: '"diff --git a/src/search/search.ts"' },
  { kind: 'patch', q: 'toMatchObject' },
  { kind: 'quote', q: '"Applied and queued"' },
  // Phrases of quoted lines of the first interleaved replies (their words are the parent's, quoted).
  ...[
    ...new Set(
      corpus
        .filter((m) => m.shape === 'interleaved')
        .map((m) => {
          // Three adjacent words of the first quoted line, each all letters (no stop word, no punctuation between).
          const words = m.segments.find((x) => x.kind === 'quote')!.text.split('\n')[0].replace(/^> /, '').split(/ +/);
          const at = words.findIndex((_, i) => words.slice(i, i + 3).length === 3 && words.slice(i, i + 3).every((w) => /^[A-Za-z]{5,}$/.test(w)));
          return at < 0 ? '' : `"${words.slice(at, at + 3).join(' ')}"`;
        })
        .filter((q) => q !== ''),
    ),
  ]
    .slice(0, 4)
    .map((q) => ({ kind: 'quote' as const, q })),
  { kind: 'answer', q: '"Applied, thanks"' },
  { kind: 'footer', q: '"Memex-devel mailing list"' },
  { kind: 'signature', q: '"Sent from my iPhone"' },
];

const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
const rows: { kind: Kind; q: string; notmuch: number; memex: number }[] = [];
let found = 0;
let notmuchFound = 0;
const missed: string[] = [];
try {
  const ready = async () => (await fetch(`${server.url}/v1/readyz`).catch(() => null))?.status === 200;
  for (let i = 0; i < 1200 && !(await ready()); i++) await new Promise((r) => setTimeout(r, 500));
  const sink = { write: () => true, isTTY: false };
  let err = '';
  const started = performance.now();
  const code = await runMailImport([maildir, '--no-attachments'], {
    out: sink,
    err: { write: (s: string) => ((err += s), true), isTTY: false },
    env: { ...process.env, MEMEX_URL: server.url, AUTH_TOKEN: server.token, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') },
  });
  if (code !== 0) throw new Error(`memex import mail exited ${code}: ${err.slice(-500)}`);
  console.log(`imported in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const search = async (q: string, k = 10) => {
    const res = await fetch(`${server.url}/v1/search?${new URLSearchParams({ q, k: String(k) })}`, { headers: { authorization: `Bearer ${server.token}` } });
    if (!res.ok) throw new Error(`GET /v1/search ${q} answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    return (await res.json()) as { total: number; hits: { metadata?: { message_id?: string } }[] };
  };
  for (const p of patchProbes) {
    const r = await search(p.q);
    if (r.hits.some((h) => h.metadata?.message_id === p.id)) found++;
    else if (missed.length < 5) missed.push(p.q);
    if (notmuchCount(p.q) >= 1) notmuchFound++;
  }
  for (const q of QUERIES) rows.push({ ...q, notmuch: notmuchCount(q.q), memex: (await search(q.q)).total });
} finally {
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}

console.log(
  `\na patch's diff lines searchable: ${found} of ${patchProbes.length} patch mails in memex's top 10 for a word only their added diff lines hold (${pct(found, patchProbes.length)}; notmuch finds ${notmuchFound}; ${patchCount - patchProbes.length} patches have no such word)${missed.length ? `; missed: ${missed.join(', ')}` : ''}`,
);
const diff = (r: { notmuch: number; memex: number }) => (r.notmuch === 0 ? (r.memex === 0 ? 0 : Infinity) : (100 * (r.memex - r.notmuch)) / r.notmuch);
const fmt = (x: number) => (Number.isFinite(x) ? `${x >= 0 ? '+' : ''}${x.toFixed(1)} %` : '∞');
console.log('\n| part | query | notmuch | memex | difference |\n|---|---|---:|---:|---:|');
for (const r of rows) console.log(`| ${r.kind} | \`${r.q}\` | ${r.notmuch} | ${r.memex} | ${fmt(diff(r))} |`);
console.log(`${rows.filter((r) => Math.abs(diff(r)) <= 5).length}/${rows.length} counts within 5 % of notmuch`);
console.log(`load after: ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
