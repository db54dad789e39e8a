/**
 * How high must a vector-only hit's cosine similarity be? Measures, with the default embedder
 * (USE-lite, as the server uses it), on SciFact: for each test query, the best similarity of a chunk
 * of a document the qrels call relevant; and for nonsense queries (random letter strings, and random
 * strings of real but unrelated words are not nonsense), the best similarity over the same chunks plus
 * a sample of other documents. Prints percentiles and, per candidate floor, the share of relevant
 * pairs kept and of nonsense queries that would still find something.
 * Usage: node --import tsx bench/search/vector-floor.ts [--docs 300] [--nonsense 60]
 */
import { chunkText } from '../../src/catalog/chunking.ts';
import { createUseLiteEmbedder } from '../../src/embedding/providers/use-lite.ts';
import { normaliseText } from '../../src/util/hash.ts';
import { loadScifact } from '../scifact/data.ts';

const arg = (name: string, def: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : def;
};
const data = loadScifact();
if (!data) {
  console.log('SciFact data not found');
  process.exit(0);
}
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const letters = 'bcdfghjklmnpqrstvwxzaeiouy';
const word = () => Array.from({ length: 4 + Math.floor(rand() * 4) }, () => letters[Math.floor(rand() * letters.length)]).join('');
const nonsense = Array.from({ length: arg('nonsense', 60) }, () => Array.from({ length: 2 + Math.floor(rand() * 3) }, word).join(' '));
nonsense.unshift('qwxzv blorft zzyzx');

const relevantIds = new Set<string>();
const queries = data.testQueries.filter((q) => data.qrels.get(q.id)?.size);
for (const q of queries) for (const d of data.qrels.get(q.id)!.keys()) relevantIds.add(d);
const others = data.corpus.filter((d) => !relevantIds.has(d.id));
const sample = new Set<string>(relevantIds);
while (sample.size < relevantIds.size + arg('docs', 300)) sample.add(others[Math.floor(rand() * others.length)].id);
const docs = data.corpus.filter((d) => sample.has(d.id));

const model = await createUseLiteEmbedder();
const chunks: { doc: string; vec: number[] }[] = [];
const t0 = Date.now();
for (let i = 0; i < docs.length; i += 16) {
  const group = docs.slice(i, i + 16).flatMap((d) => chunkText(normaliseText(`${d.title}\n\n${d.text}`)).map((c) => ({ doc: d.id, text: c.text })));
  const vecs = await model.embed(group.map((g) => g.text), 'passage');
  group.forEach((g, k) => chunks.push({ doc: g.doc, vec: vecs[k] }));
}
console.log(`${docs.length} documents, ${chunks.length} chunks embedded in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
const cos = (a: number[], b: number[]) => {
  let s = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) { s += a[i] * b[i]; na += a[i] * a[i]; nb += b[i] * b[i]; }
  return s / Math.sqrt(na * nb);
};
const qv = await model.embed(queries.map((q) => q.text), 'query');
const relevant = queries.map((q, i) => Math.max(...chunks.filter((c) => data.qrels.get(q.id)!.has(c.doc)).map((c) => cos(qv[i], c.vec))));
const nv = await model.embed(nonsense, 'query');
const junk = nonsense.map((_, i) => Math.max(...chunks.map((c) => cos(nv[i], c.vec))));
const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const fmt = (x: number) => x.toFixed(3);
console.log(`relevant pairs (${relevant.length}): p5 ${fmt(pct(relevant, 5))} p10 ${fmt(pct(relevant, 10))} p25 ${fmt(pct(relevant, 25))} median ${fmt(pct(relevant, 50))}`);
console.log(`nonsense best (${junk.length}): median ${fmt(pct(junk, 50))} p90 ${fmt(pct(junk, 90))} max ${fmt(Math.max(...junk))}; "${nonsense[0]}" ${fmt(junk[0])}`);
for (const f of [0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6]) {
  const kept = relevant.filter((r) => r >= f).length / relevant.length;
  const found = junk.filter((j) => j >= f).length / junk.length;
  console.log(`floor ${f.toFixed(2)}: relevant kept ${(kept * 100).toFixed(1)}%, nonsense queries finding something ${(found * 100).toFixed(1)}%`);
}
