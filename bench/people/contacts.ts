/**
 * People benchmark: contact sync (new cards, then the same cards again), people search latency
 * and the NDJSON export walk. Prints figures; backend from MEMEX_TEST_BACKEND (pglite | postgres).
 *
 *   npx tsx bench/people/contacts.ts [cards=2000]
 */
import { performance } from 'node:perf_hooks';
import { Catalog } from '../../src/catalog/catalog.ts';
import { ingestContacts } from '../../src/people/contacts.ts';
import { planExport } from '../../src/identity/records.ts';
import { searchPeople } from '../../src/people/search.ts';
import { backend, createTestDatabase } from '../../test/helpers/db.ts';

const N = Number(process.argv[2] ?? 2000);
const BATCH = 500;
const FIRST = ['Ann', 'Bob', 'Carla', 'Dev', 'Emil', 'Fatima', 'Goran', 'Hana', 'Ivo', 'Jun'];
const LAST = ['Lee', 'Stone', 'Okafor', 'Patel', 'Novak', 'Garcia', 'Kim', 'Weber', 'Rossi', 'Silva'];

function cards(version: number) {
  return Array.from({ length: N }, (_, i) => {
    const given = FIRST[i % 10];
    const family = `${LAST[Math.floor(i / 10) % 10]}${i}`;
    return {
      external_id: `bench-${i}`,
      display_name: `${given} ${family}`,
      given_name: given,
      family_name: family,
      organization: i % 3 === 0 ? 'Acme Corp' : null,
      emails: [{ value: `${given}.${family}@example.com`.toLowerCase(), label: 'work' }],
      phones: [{ value: `(617) 5${String(i).padStart(2, '0').slice(-2)}-${String(1000 + (i % 9000)).slice(-4)}`, label: 'mobile' }],
      version,
      change_token: `t-${i}`,
    };
  });
}

async function sync(catalog: Catalog, people: ReturnType<typeof cards>) {
  const t0 = performance.now();
  const totals = { upserts: 0, skipped: 0, conflicts: 0 };
  for (let i = 0; i < people.length; i += BATCH) {
    const r = await ingestContacts(catalog, { source: 'bench', device_id: 'd', batch_id: `b${i}`, people: people.slice(i, i + BATCH) } as any);
    totals.upserts += r.upserts;
    totals.skipped += r.skipped;
    totals.conflicts += r.conflicts;
  }
  return { ms: performance.now() - t0, ...totals };
}

const pct = (xs: number[], p: number) => xs.slice().sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];

const t = await createTestDatabase();
const catalog = new Catalog(t.db);
const people = cards(1);
const first = await sync(catalog, people);
const again = await sync(catalog, people);
console.log(`backend=${backend} cards=${N} batch=${BATCH}`);
console.log(`sync new cards:      ${(N / (first.ms / 1000)).toFixed(0)} cards/s (${first.ms.toFixed(0)} ms; upserts ${first.upserts}, conflicts ${first.conflicts})`);
console.log(`re-sync unchanged:   ${(N / (again.ms / 1000)).toFixed(0)} cards/s (${again.ms.toFixed(0)} ms; skipped ${again.skipped})`);

const queries = ['ann', 'stone1', 'acme', 'example.com', '617', '(617) 500-1000', 'okafor2', 'fatima patel', 'zzz', 'jun'];
const lat: number[] = [];
for (let round = 0; round < 10; round++) {
  for (const q of queries) {
    const s = performance.now();
    await searchPeople(t.db, { q, limit: 20, offset: 0, region: 'US' });
    lat.push(performance.now() - s);
  }
}
console.log(`people search:       p50 ${pct(lat, 50).toFixed(1)} ms, p95 ${pct(lat, 95).toFixed(1)} ms over ${lat.length} queries (${N} people)`);

const e0 = performance.now();
const plan = await planExport(t.db, { full: true });
let lines = 0;
for await (const _p of plan.pages) lines += 1;
const ems = performance.now() - e0;
console.log(`export walk:         ${(lines / (ems / 1000)).toFixed(0)} people/s (${lines} people, ${ems.toFixed(0)} ms)`);
const rss = process.memoryUsage().rss / 1024 / 1024;
console.log(`rss at end:          ${rss.toFixed(0)} MiB`);
await t.drop();
