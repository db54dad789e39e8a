/**
 * Cost of the hostile-input walks on a 1000-document v1 batch body (~2 MB): JSON.parse for scale, the nesting
 * check and the string cleaning every JSON request goes through (src/util/json-input.ts), and the iterative
 * canonical JSON of idempotency keys against the recursive key sort it replaced.
 * Run: node --import tsx bench/gateway/input-guard.ts
 */
import { cleanStrings, tooDeepAt } from '../../src/util/json-input.ts';
import { canonicalJson } from '../../src/util/hash.ts';
const doc = (i: number) => ({ source_type: 'note', source_id: `n${i}`, title: 'Trip planning', content: { data: 'Book the train to Lisbon for the conference. '.repeat(40) }, metadata: { folder: 'travel', tags: ['a', 'b'], nested: { x: 1, y: [1, 2, 3] } }, people: [{ identifier: 'ann@example.com', role: 'sender' }] });
const text = JSON.stringify({ documents: Array.from({ length: 1000 }, (_, i) => doc(i)) });
const time = (f: () => void, n = 20) => { f(); const t = performance.now(); for (let i = 0; i < n; i++) f(); return (performance.now() - t) / n; };
const parse = time(() => JSON.parse(text));
const parsed = JSON.parse(text);
const deep = time(() => tooDeepAt(parsed), 50);
const clean = time(() => cleanStrings(parsed), 50);
const meta = { folder: 'travel', tags: ['a', 'b'], nested: { x: 1, y: [1, 2, 3] } };
const canon = time(() => { for (let i = 0; i < 1000; i++) canonicalJson(meta); });
const old = (v: any): any => Array.isArray(v) ? v.map(old) : v && typeof v === 'object' ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, old(v[k])])) : v;
const canonOld = time(() => { for (let i = 0; i < 1000; i++) JSON.stringify(old(meta)); });
console.log(`body ${(text.length / 1e6).toFixed(2)} MB: JSON.parse ${parse.toFixed(1)} ms, depth check ${deep.toFixed(1)} ms, string cleaning ${clean.toFixed(1)} ms; canonicalJson x1000 ${canon.toFixed(2)} ms (recursive before: ${canonOld.toFixed(2)} ms)`);
