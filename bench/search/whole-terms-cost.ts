/**
 * What the whole terms of identifiers (src/search/whole-terms.ts, issue 48) cost the lexical index on code-heavy
 * mail, its worst case: the list Maildir's messages (bench/email/list-mail.ts: `git format-patch` of this
 * repository with replies), chunked as the catalog chunks them, analysed by PostgreSQL (embedded PGlite,
 * `to_tsvector('english', …)` as chunks.tsv), then indexed twice in this process, alternating: without whole
 * terms (the index before) and with them. Prints build time (the index's own work, and reading the whole terms
 * out of the texts), terms, postings and memory of each.
 *
 *   node --expose-gc --import tsx bench/search/whole-terms-cost.ts [--patches 400] [--rounds 3]
 */
import { parseArgs } from 'node:util';
import { chunkText } from '../../src/catalog/chunking.ts';
import { openDatabase } from '../../src/db/index.ts';
import { LexicalIndex, type IndexedDocument } from '../../src/search/index/lexical-index.ts';
import { parseTsvector } from '../../src/search/tsvector.ts';
import { wholeTerms } from '../../src/search/whole-terms.ts';
import { generateListMail } from '../email/list-mail.ts';

const { values } = parseArgs({ options: { patches: { type: 'string', default: '400' }, rounds: { type: 'string', default: '3' } } });
const mail = generateListMail({ patches: Number(values.patches) });
const docs = mail.map((m, i) => ({
  id: `00000000-0000-4000-8000-${i.toString(16).padStart(12, '0')}`,
  title: m.subject,
  chunks: chunkText(m.body).map((c) => c.text),
}));

// PostgreSQL's lexemes, as the stored tsvectors hold them (in a function: the database is gone before memory is measured).
const analysed = await (async () => {
  const db = await openDatabase({});
  const texts = docs.flatMap((d) => [d.title, ...d.chunks]);
  const out: string[] = [];
  for (let i = 0; i < texts.length; i += 500) {
    const r = await db.query<{ v: string }>(`SELECT to_tsvector('english', t)::text AS v FROM unnest($1::text[]) WITH ORDINALITY AS x(t, n) ORDER BY n`, [
      texts.slice(i, i + 500),
    ]);
    out.push(...r.rows.map((x) => x.v));
  }
  await db.close();
  return out;
})();

const gc = (globalThis as { gc?: () => void }).gc;
const heap = async () => {
  for (let i = 0; i < 4; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 50));
  }
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};

function build(withWholes: boolean): { index: LexicalIndex; ms: number; wholesMs: number } {
  let wholesMs = 0;
  let k = 0;
  const t0 = performance.now();
  const index = new LexicalIndex({ k1: 1.2, b: 0.4, titleWeight: 2 });
  for (const d of docs) {
    const titlePositions = new Map<string, number[]>();
    const title = parseTsvector(analysed[k++], titlePositions);
    const passages: IndexedDocument['passages'] = d.chunks.map((text, j) => {
      const positions = new Map<string, number[]>();
      const terms = parseTsvector(analysed[k++], positions);
      if (!withWholes) return { chunkId: `${d.id.slice(0, -4)}${j.toString(16).padStart(4, '0')}`, terms, positions };
      const s = performance.now();
      // As index-sync.ts: the text is read only when it holds an underscore.
      const wholes = text.includes('_') ? wholeTerms(text) : new Map<string, number>();
      wholesMs += performance.now() - s;
      return { chunkId: `${d.id.slice(0, -4)}${j.toString(16).padStart(4, '0')}`, terms, positions, ...(wholes.size ? { wholes } : {}) };
    });
    const titleWholes = withWholes && d.title.includes('_') ? wholeTerms(d.title) : undefined;
    index.upsert({
      docId: d.id,
      sourceType: 'email',
      hasAttachments: false,
      tsMicros: 0,
      threadId: null,
      personIds: [],
      identifiers: [],
      title,
      titlePositions,
      passages,
      ...(titleWholes?.size ? { titleWholes } : {}),
    });
  }
  return { index, ms: performance.now() - t0, wholesMs };
}

const passages = docs.reduce((n, d) => n + d.chunks.length, 0);
const withUnderscore = docs.reduce((n, d) => n + d.chunks.filter((c) => c.includes('_')).length, 0);
console.log(`${docs.length} messages (${values.patches} patches), ${passages} passages, ${withUnderscore} with an underscore`);
const postings = (ix: LexicalIndex) => {
  const s = ix.serialise();
  return { terms: s.strings.terms.length, postings: s.arrays.postPids.length, bytes: Object.values(s.arrays).reduce((n, a) => n + a.byteLength, 0) };
};
const figures = { before: { ms: [] as number[], mem: [] as number[] }, after: { ms: [] as number[], mem: [] as number[], wholesMs: [] as number[] } };
for (let round = 1; round <= Number(values.rounds); round++) {
  for (const withWholes of round % 2 === 1 ? [false, true] : [true, false]) {
    const base = await heap();
    let b: ReturnType<typeof build> | null = build(withWholes);
    const mem = (await heap()) - base;
    const f = withWholes ? figures.after : figures.before;
    f.ms.push(b.ms);
    f.mem.push(mem);
    if (withWholes) figures.after.wholesMs.push(b.wholesMs);
    if (round === 1) console.log(`${withWholes ? 'with whole terms   ' : 'without (before)   '} ${JSON.stringify(postings(b.index))}`);
    b = null;
  }
}
const median = (a: number[]) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
const min = (a: number[]) => Math.min(...a);
const mib = (n: number) => (n / 2 ** 20).toFixed(2);
const pct = (a: number, b: number) => `${((a / b - 1) * 100).toFixed(1)} %`;
const { before: B, after: A } = figures;
console.log(
  `build, min / median of ${values.rounds}: before ${min(B.ms).toFixed(0)} / ${median(B.ms).toFixed(0)} ms, with whole terms ` +
    `${min(A.ms).toFixed(0)} / ${median(A.ms).toFixed(0)} ms (${pct(min(A.ms), min(B.ms))} / ${pct(median(A.ms), median(B.ms))}); ` +
    `reading them out of the texts ${min(A.wholesMs).toFixed(0)} / ${median(A.wholesMs).toFixed(0)} ms`,
);
console.log(`index memory: before ${mib(median(B.mem))} MiB, with whole terms ${mib(median(A.mem))} MiB (${pct(median(A.mem), median(B.mem))})${gc ? '' : ' (run with --expose-gc)'}`);
