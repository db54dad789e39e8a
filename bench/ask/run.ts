/**
 * Ask quality through the public API: the generated personal documents of corpus.ts among real
 * mail (distractors.ts), ingested with POST /v1/ingest:batch and POST /v1/ingest/file into a real
 * server (PGlite, or PostgreSQL with --pg; the default USE-lite embedder, every chunk embedded
 * before asking), then every question asked with POST /v1/ask (k = 5).
 *
 * Printed per slice (dev: tuning; test: held-out phrasings and documents):
 *   contains gold    share of answerable questions whose answer holds a gold string
 *   cites gold       share whose first citation is a document that states the answer
 *   length           answer characters (median, p95) and the share of answers ≤ 400 characters
 *   nothing found    share of unanswerable questions answered "nothing found" (answer_mode none)
 * against the baseline "the first sentence of the top hit" (GET /v1/search k=1, the hit's chunk
 * read with GET /v1/doc/{id}/view).
 *
 *   node --import tsx bench/ask/run.ts [--pg] [--distractors N] [--per-kind N] [--reuse] [--sweep] [--lexical] [--show N]
 *
 * --reuse keeps the PGlite data directory (data/bench-cache/ask-pglite) between runs of the same
 * corpus, so tuning does not re-ingest and re-embed. --sweep runs the dev questions against ask
 * instances in this process with other weights and floors (extractive.ts) and prints each.
 * --lexical asks (and searches, for the baseline) in this process with the words-only leg, without
 * waiting for the embedding model: quick tuning runs, not the recorded figures.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer } from '../../src/server.ts';
import { createSearch } from '../../src/search/search.ts';
import { DEFAULT_EXTRACTIVE, type ExtractiveParams } from '../../src/search/extractive.ts';
import type { AskResponse } from '../../src/search/ask.ts';
import { machineLine, percentile, ROOT } from '../lib/server.ts';
import { generateAskCorpus, type BenchQuestion, type Split } from './corpus.ts';
import { loadDistractors } from './distractors.ts';

const args = process.argv.slice(2);
const opt = (name: string, dflt: number) => (args.includes(name) ? Number(args[args.indexOf(name) + 1]) : dflt);
const usePg = args.includes('--pg');
const nDistractors = opt('--distractors', 1000);
const perKind = opt('--per-kind', 12);
const show = opt('--show', 0);
const TOKEN = 'bench-token-0123456789';
const K = 5;

const { docs, questions } = generateAskCorpus(32, perKind);
const distractors = loadDistractors(nDistractors);
console.log(`machine: ${machineLine()}; load average at start ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(
  `corpus: ${docs.length} generated documents (${docs.filter((d) => d.via === 'file').length} as files) + ${distractors.length} real emails; ` +
    `${questions.length} questions (${questions.filter((q) => q.gold.length === 0).length} unanswerable)`,
);

// The server: a fresh data directory, or the kept one of the same corpus (--reuse, PGlite only).
const corpusId = `seed32-k${perKind}-d${distractors.length}-${docs.length}`;
const reuseDir = path.join(ROOT, 'data', 'bench-cache', 'ask-pglite');
const reusing = !usePg && args.includes('--reuse') && fs.existsSync(path.join(reuseDir, 'corpus.json'))
  && JSON.parse(fs.readFileSync(path.join(reuseDir, 'corpus.json'), 'utf8')).id === corpusId;
const dataDir = !usePg && args.includes('--reuse') ? reuseDir : fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-ask-'));
if (!usePg && args.includes('--reuse') && !reusing) fs.rmSync(reuseDir, { recursive: true, force: true });
let databaseUrl: string | undefined;
let dropDb: (() => Promise<void>) | undefined;
if (usePg) {
  const admin = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `memex_bench_ask_${Date.now()}`;
  const c = new pg.Client({ connectionString: admin });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(admin);
  u.pathname = `/${name}`;
  databaseUrl = u.toString();
  dropDb = async () => {
    const d = new pg.Client({ connectionString: admin });
    await d.connect();
    await d.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await d.end();
  };
}
const env = { ...process.env, DATA_DIR: dataDir, PORT: '0', AUTH_TOKEN: TOKEN, LOG_LEVEL: 'warn', ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}) };
const server = await startServer(loadServerConfig(env), 'all', { env });
const base = server.url!;
const auth = { authorization: `Bearer ${TOKEN}` };
const api = async (method: string, url: string, body?: unknown): Promise<any> => {
  const res = await fetch(`${base}${url}`, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.json();
};

// Ingest (or read back the keys of a kept corpus).
const docId = new Map<string, string>();
const keysFile = path.join(dataDir, 'corpus.json');
const t0 = performance.now();
if (reusing) {
  for (const [k, v] of Object.entries(JSON.parse(fs.readFileSync(keysFile, 'utf8')).docIds as Record<string, string>)) docId.set(k, v);
  console.log(`reusing the ingested corpus in ${dataDir}`);
} else {
  const json = docs.flatMap((d) => (d.via === 'json' ? [d] : []));
  const bodies = [...json.map((d) => d.body), ...distractors];
  for (let i = 0; i < bodies.length; i += 100) {
    const res = await api('POST', '/v1/ingest:batch', { documents: bodies.slice(i, i + 100) });
    res.results.forEach((r: any, j: number) => {
      if (r.error) throw new Error(`ingest failed: ${JSON.stringify(r.error)}`);
      if (i + j < json.length) docId.set(json[i + j].key, r.submission.doc_id);
    });
  }
  for (const d of docs) {
    if (d.via !== 'file') continue;
    const form = new FormData();
    form.append('meta', JSON.stringify({ source: 'localfs', path: d.path, filename: d.filename, mtime: 1767225600 }));
    form.append('upload', new Blob([d.text], { type: 'text/plain' }), d.filename);
    const res = await fetch(`${base}/v1/ingest/file`, { method: 'POST', headers: auth, body: form });
    if (res.status >= 300) throw new Error(`file ingest ${d.filename}: ${res.status} ${await res.text()}`);
    docId.set(d.key, ((await res.json()) as { doc_id: string }).doc_id);
  }
  fs.writeFileSync(keysFile, JSON.stringify({ id: corpusId, docIds: Object.fromEntries(docId) }));
  console.log(`ingested in ${((performance.now() - t0) / 1000).toFixed(0)} s`);
}
// Every chunk embedded: the vector leg sees the whole corpus, as after an import has settled.
// (--lexical: the words-only leg in this process instead, for tuning while the model catches up.)
const lexicalOnly = args.includes('--lexical');
if (!lexicalOnly) {
  const t1 = performance.now();
  for (;;) {
    const s = await api('GET', '/v1/status');
    if (s.chunks.pending + s.chunks.processing === 0) break;
    await new Promise((ok) => setTimeout(ok, 5000));
  }
  console.log(`every chunk embedded (waited ${((performance.now() - t1) / 1000).toFixed(0)} s)`);
}
const lexicalSearch = lexicalOnly ? createSearch({ db: server.db, embedder: null, ask: { provider: null } }) : null;
const goldIds = (q: BenchQuestion) => new Set(q.goldDocs.map((k) => docId.get(k)!));

const norm = (s: string) => s.toLowerCase().replace(/\s+/g, ' ').trim();
const holdsGold = (answer: string, q: BenchQuestion) => q.gold.some((g) => norm(answer).includes(norm(g)));

/** The old splitter: sentences of whitespace-squashed text. */
const firstSentence = (text: string) =>
  text.replace(/\s+/g, ' ').split(/(?<=[.!?])\s+(?=[\p{Lu}\p{N}"'(\[])/u).map((s) => s.trim()).find((s) => s.length > 0) ?? '';

interface Outcome {
  q: BenchQuestion;
  answer: string;
  none: boolean;
  firstCitedDoc: string | null;
}

async function baseline(q: BenchQuestion): Promise<Outcome> {
  const res = lexicalSearch
    ? await lexicalSearch.search({ q: q.question, k: 1, filters: {}, context_window: 0 })
    : await api('GET', `/v1/search?k=1&q=${encodeURIComponent(q.question)}`);
  const hit = res.hits.find((h: any) => !h.context);
  if (!hit) return { q, answer: '', none: true, firstCitedDoc: null };
  const view = await api('GET', `/v1/doc/${hit.document_id}/view?chunk_id=${hit.chunk_id}`);
  const text: string = view.document.text;
  const chunk = view.cited ? text.slice(view.cited.start_char, view.cited.end_char) : text;
  return { q, answer: firstSentence(chunk), none: false, firstCitedDoc: hit.document_id };
}

const fromAsk = (q: BenchQuestion, a: AskResponse): Outcome => ({
  q,
  answer: a.answer,
  none: a.answer_mode === 'none',
  firstCitedDoc: a.citations[0]?.document_id ?? null,
});

interface Figures {
  answerable: number;
  containsGold: number;
  citesGold: number;
  answered: number;
  medianChars: number;
  p95Chars: number;
  within400: number;
  unanswerable: number;
  nothingFound: number;
}

function figures(out: Outcome[]): Figures {
  const ans = out.filter((o) => o.q.gold.length > 0);
  const un = out.filter((o) => o.q.gold.length === 0);
  const lengths = ans.filter((o) => !o.none).map((o) => o.answer.length).sort((a, b) => a - b);
  const share = (n: number, d: number) => (d === 0 ? 0 : n / d);
  return {
    answerable: ans.length,
    containsGold: share(ans.filter((o) => holdsGold(o.answer, o.q)).length, ans.length),
    citesGold: share(ans.filter((o) => o.firstCitedDoc !== null && goldIds(o.q).has(o.firstCitedDoc)).length, ans.length),
    answered: share(ans.filter((o) => !o.none).length, ans.length),
    medianChars: lengths.length ? percentile(lengths, 50) : 0,
    p95Chars: lengths.length ? percentile(lengths, 95) : 0,
    within400: share(out.filter((o) => o.answer.length <= 400).length, out.length),
    unanswerable: un.length,
    nothingFound: share(un.filter((o) => o.none).length, un.length),
  };
}

const pct = (x: number) => `${(100 * x).toFixed(1)}%`;
function line(label: string, f: Figures): string {
  return `${label.padEnd(26)} contains gold ${pct(f.containsGold).padStart(6)}  cites gold ${pct(f.citesGold).padStart(6)}  answered ${pct(f.answered).padStart(6)}  chars median ${String(Math.round(f.medianChars)).padStart(3)} p95 ${String(Math.round(f.p95Chars)).padStart(3)}  <=400 ${pct(f.within400).padStart(6)}  nothing found (unanswerable) ${pct(f.nothingFound).padStart(6)}`;
}

function perKindTable(out: Outcome[], base: Outcome[]): void {
  const kinds = [...new Set(out.map((o) => o.q.kind))];
  for (const k of kinds) {
    const a = out.filter((o) => o.q.kind === k);
    const b = base.filter((o) => o.q.kind === k);
    const f = figures(a);
    const g = figures(b);
    console.log(`  ${k.padEnd(20)} n ${String(a.length).padStart(3)}  ask ${k === 'unanswerable' ? `nothing found ${pct(f.nothingFound)}` : `${pct(f.containsGold)} / cites ${pct(f.citesGold)}`}   baseline ${k === 'unanswerable' ? '-' : pct(g.containsGold)}`);
  }
}

async function runSplit(split: Split, askFn: (q: string) => Promise<AskResponse>): Promise<Outcome[]> {
  const out: Outcome[] = [];
  for (const q of questions.filter((x) => x.split === split)) out.push(fromAsk(q, await askFn(q.question)));
  return out;
}

const httpAsk = (q: string) =>
  lexicalSearch ? lexicalSearch.ask(q, K) : (api('POST', '/v1/ask', { query: q, k: K }) as Promise<AskResponse>);

if (args.includes('--sweep')) {
  const embedder = lexicalOnly ? null : (await server.embedding.ready).embedder;
  const grid: Partial<ExtractiveParams>[] = [];
  for (const floor of [0.4, 0.5, 0.6, 0.7, 0.8]) for (const secondRatio of [0.7, 0.85, 1.01]) grid.push({ floor, secondRatio });
  for (const [supportWeight, coverageWeight] of [[0.3, 0.7], [0.7, 0.3], [0.5, 0.3], [0.5, 0.8]]) grid.push({ supportWeight, coverageWeight });
  for (const focusBonus of [0, 0.15, 0.4]) grid.push({ focusBonus });
  for (const typeBonus of [0.15, 0.45]) grid.push({ typeBonus });
  for (const typeMissPenalty of [0, 0.35]) grid.push({ typeMissPenalty });
  for (const proximityWeight of [0, 0.3]) grid.push({ proximityWeight });
  for (const rankPenalty of [0, 0.05]) grid.push({ rankPenalty });
  grid.push({ requireType: false });
  console.log(`sweep over the dev slice (defaults: ${JSON.stringify(DEFAULT_EXTRACTIVE)})`);
  for (const params of grid) {
    const s = createSearch({ db: server.db, embedder, ask: { provider: null, extractive: params } });
    const out = await runSplit('dev', (q) => s.ask(q, K));
    console.log(line(JSON.stringify(params), figures(out)));
    s.close();
  }
}

for (const split of ['dev', 'test'] as Split[]) {
  const asked = await runSplit(split, httpAsk);
  const base: Outcome[] = [];
  for (const q of questions.filter((x) => x.split === split)) base.push(await baseline(q));
  const f = figures(asked);
  const b = figures(base);
  console.log(`\n${split === 'dev' ? 'dev slice (tuned on)' : 'held-out slice'}: ${f.answerable} answerable, ${f.unanswerable} unanswerable questions`);
  console.log(line('ask (POST /v1/ask)', f));
  console.log(line('baseline: top hit, 1st sent.', b));
  console.log(`contains gold: ask / baseline = ${(f.containsGold / Math.max(b.containsGold, 1e-9)).toFixed(2)}x`);
  perKindTable(asked, base);
  if (show > 0) {
    const wrong = asked.filter((o) => (o.q.gold.length > 0 ? !holdsGold(o.answer, o.q) : !o.none)).slice(0, show);
    for (const o of wrong) console.log(`  ✗ [${o.q.kind}] ${o.q.question}\n      gold: ${o.q.gold.join(' | ') || '(nothing)'}\n      answer: ${o.answer}`);
  }
}

lexicalSearch?.close();
await server.close();
await dropDb?.();
if (!args.includes('--reuse') && !usePg) fs.rmSync(dataDir, { recursive: true, force: true });
