/**
 * The in-memory lexical index alone: the search latency bench's corpus and query plan, with no
 * HTTP and no database in the query loop, so a change to src/search/index/ is measured in
 * microseconds per query without the noise of the whole stack.
 *
 * Lexemes are PostgreSQL's own: every distinct word of the corpus is analysed once by an embedded
 * PGlite (`to_tsvector('english', word)`); documents and queries are then mapped word by word, which
 * is what to_tsvector does for text made only of plain words, as these are.
 *
 *   node --import tsx bench/search/index-cost.ts [--docs 100000] [--queries 20000] [--rounds 3]
 */
import { openDatabase } from '../../src/db/index.ts';
import { parseFilters } from '../../src/catalog/filters.ts';
import { LexicalIndex, type QueryLexeme } from '../../src/search/index/lexical-index.ts';
import { indexFilter } from '../../src/search/lexical.ts';
import { generateCorpus } from './corpus.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const N = opt('--docs', 100_000);
const QUERIES = opt('--queries', 20_000);
const ROUNDS = opt('--rounds', 3);

const corpus = generateCorpus(N);
const docs = [...corpus.batches(5000)].flat();
const words = new Set<string>();
for (const d of docs) for (const w of `${d.title ?? ''} ${d.text}`.split(' ')) if (w) words.add(w);
const planned = corpus.plan(QUERIES);
for (const q of planned) for (const w of q.q.split(' ')) words.add(w);

// In a function so the embedded database can be collected before the index memory is measured.
const r = await (async () => {
  const db = await openDatabase({});
  const res = await db.query<{ w: string; l: string | null }>(
    `SELECT w, (SELECT lexeme FROM unnest(to_tsvector('english', w)) LIMIT 1) AS l FROM unnest($1::text[]) AS w`,
    [[...words]],
  );
  await db.close();
  return res;
})();
const lexeme = new Map(r.rows.map((x) => [x.w, x.l]));
const terms = (text: string | null, positions?: Map<string, number[]>): Map<string, number> => {
  const m = new Map<string, number>();
  (text ?? '').split(' ').forEach((w, i) => {
    const l = lexeme.get(w);
    if (!l) return;
    m.set(l, (m.get(l) ?? 0) + 1);
    if (positions) positions.set(l, [...(positions.get(l) ?? []), i + 1]);
  });
  return m;
};
/** Word positions as the stored tsvectors give them (phrases); --no-positions measures without. */
const withPositions = !args.includes('--no-positions');

const gc = (globalThis as { gc?: () => void }).gc;
/** Heap and off-heap bytes once garbage is collected (a few turns: the embedded database's memory goes late). */
const heap = async () => {
  for (let i = 0; i < 4; i++) {
    gc?.();
    await new Promise((r) => setTimeout(r, 100));
  }
  const m = process.memoryUsage();
  return m.heapUsed + m.external;
};
let index: LexicalIndex | null = new LexicalIndex({ k1: 1.2, b: 0.4, titleWeight: 2 });
const t0 = performance.now();
for (const d of docs) {
  index!.upsert({
    docId: d.id,
    sourceType: d.source,
    hasAttachments: d.att,
    tsMicros: d.ts * 1000,
    threadId: d.thread,
    personIds: [d.sender.id, d.to.id],
    identifiers: [d.sender.email, d.to.phone],
    ...(() => {
      if (!withPositions) return { title: terms(d.title), passages: [{ chunkId: d.chunk, terms: terms(d.text) }] };
      const titlePositions = new Map<string, number[]>();
      const positions = new Map<string, number[]>();
      return {
        title: terms(d.title, titlePositions),
        titlePositions,
        passages: [{ chunkId: d.chunk, terms: terms(d.text, positions), positions }],
      };
    })(),
  });
}
const buildS = (performance.now() - t0) / 1000;
console.log(`${N} documents indexed in ${buildS.toFixed(1)} s; ${JSON.stringify(index!.size)}`);

const personOf = new Map(corpus.people.flatMap((p) => [[p.email, p.id], [p.phone, p.id]]));
const prepared = planned.map((q) => {
  const lex: QueryLexeme[] = [...terms(q.q)].map(([term, qtf]) => ({ term, qtf }));
  const f = parseFilters(q);
  const owners = (f.person ?? []).flatMap((v) => (personOf.has(v) ? [personOf.get(v)!] : []));
  return { kind: q.kind, lex, filter: indexFilter(f, owners) };
});

let matched = 0;
for (let round = 1; round <= ROUNDS; round++) {
  const byKind = new Map<string, { n: number; ms: number }>();
  const start = performance.now();
  for (const q of prepared) {
    const s = performance.now();
    const res = index!.search(q.lex, q.filter, 100, [], 50);
    matched += res.total;
    const e = byKind.get(q.kind) ?? { n: 0, ms: 0 };
    e.n++;
    e.ms += performance.now() - s;
    byKind.set(q.kind, e);
  }
  const all = performance.now() - start;
  console.log(
    `round ${round}: ${((1000 * all) / prepared.length).toFixed(0)} µs/query; ` +
      [...byKind].map(([k, e]) => `${k} ${((1000 * e.ms) / e.n).toFixed(0)}`).join(', ') +
      `; mean match set ${(matched / prepared.length / round).toFixed(0)} documents`,
  );
}

// What the index holds: the heap with it, less the heap once it is dropped.
const withIndex = await heap();
index = null;
console.log(`index memory ${((withIndex - (await heap())) / 2 ** 20).toFixed(1)} MiB${gc ? '' : ' (run with --expose-gc for a settled figure)'}`);
