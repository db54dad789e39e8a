/**
 * Embeds the SciFact chunks (exactly as the catalog chunks them) and the test queries with USE-lite,
 * into a cache file keyed by chunk text hash, so benchmark runs do not re-embed (~10+ minutes).
 * Usage: node --import tsx bench/scifact/embed-corpus.ts
 */
import fs from 'node:fs';
import path from 'node:path';
import { chunkText } from '../../src/catalog/chunking.ts';
import { normaliseText, sha256Hex } from '../../src/util/hash.ts';
import { chunkKey, chunkTexts, loadUseLite, meanPool } from './use-lite.ts';
import { cachePath, loadScifact } from './data.ts';

const data = loadScifact();
if (!data) {
  console.log('SciFact data not found; nothing to embed');
  process.exit(0);
}
const file = cachePath();
fs.mkdirSync(path.dirname(file), { recursive: true });
const done = new Set<string>();
if (fs.existsSync(file)) {
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) if (line) done.add(JSON.parse(line).key);
}
const model = await loadUseLite();
const jobs: { key: string; texts: string[] }[] = [];
for (const q of data.testQueries) jobs.push({ key: `q:${sha256Hex(q.text)}`, texts: [q.text] });
for (const d of data.corpus) {
  for (const c of chunkText(normaliseText(d.text))) {
    jobs.push({ key: chunkKey(d.title, c.text), texts: chunkTexts(d.title, c.text) });
  }
}
const todo = jobs.filter((j) => !done.has(j.key));
console.log(`${jobs.length} items, ${todo.length} to embed`);
const t0 = Date.now();
let n = 0;
for (let i = 0; i < todo.length; i += 8) {
  const group = todo.slice(i, i + 8);
  const flat = group.flatMap((g) => g.texts);
  const vecs = await model.embed(flat);
  let o = 0;
  for (const g of group) {
    const v = meanPool(vecs.slice(o, o + g.texts.length));
    o += g.texts.length;
    // Synchronous append: the TF.js WASM backend resolves embed() on microtasks only, so an fs stream
    // would never get the event loop to flush (a killed run lost everything that way).
    fs.appendFileSync(file, JSON.stringify({ key: g.key, v: v.map((x) => Math.round(x * 1e6) / 1e6) }) + '\n');
  }
  n += group.length;
  if (n % 400 < 8) console.log(`${n}/${todo.length} in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
}
console.log(`done in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
