/**
 * What migration 030 (title tsvector + GIN index) costs the catalog's insert
 * path: the same SciFact documents ingested into a database with and without those columns,
 * alternating rounds so machine load hits both alike.
 *   node --import tsx bench/search/insert-cost.ts [--pg] [--docs N] [--rounds R]
 */
import crypto from 'node:crypto';
import pg from 'pg';
import { Catalog } from '../../src/catalog/catalog.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { prepareIngest } from '../../src/gateway/prepare.ts';
import { loadScifact } from '../scifact/data.ts';

const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const usePg = args.includes('--pg');
const N = opt('--docs', 500);
const ROUNDS = opt('--rounds', 2);
const data = loadScifact();
if (!data) {
  console.log('SciFact data not found: skipped');
  process.exit(0);
}
const base = process.env.BENCH_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
async function admin(sql: string) {
  const c = new pg.Client({ connectionString: base });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

async function fresh(without030: boolean): Promise<{ db: Database; drop: () => Promise<void> }> {
  let db: Database;
  let drop: () => Promise<void>;
  if (usePg) {
    const name = `memex_bench_ins_${crypto.randomBytes(4).toString('hex')}`;
    await admin(`CREATE DATABASE ${name}`);
    const u = new URL(base);
    u.pathname = `/${name}`;
    db = await openDatabase({ databaseUrl: u.toString() });
    drop = async () => {
      await db.close();
      await admin(`DROP DATABASE ${name} WITH (FORCE)`);
    };
  } else {
    db = await openDatabase({});
    drop = () => db.close();
  }
  if (without030) {
    await db.exec(`DROP INDEX documents_title_tsv; ALTER TABLE documents DROP COLUMN title_tsv;
`);
  }
  return { db, drop };
}

const docs = data.corpus.slice(0, N);
const totals = { with: 0, without: 0 };
for (let r = 0; r < ROUNDS; r++) {
  for (const variant of r % 2 === 0 ? (['with', 'without'] as const) : (['without', 'with'] as const)) {
    const { db, drop } = await fresh(variant === 'without');
    const catalog = new Catalog(db);
    const t0 = performance.now();
    for (let i = 0; i < docs.length; i += 100) {
      const items = docs.slice(i, i + 100).map((d, j) => ({
        index: j,
        request: prepareIngest({
          source_type: 'note',
          source_id: `sf-${d.id}`,
          title: d.title,
          content: { mime_type: 'text/plain', data: d.text },
        } as any),
      }));
      const res = await catalog.ingestBatch(items, `k-${r}-${i}`);
      if (res.failure_count > 0) throw new Error(`ingest failures: ${JSON.stringify(res.items.find((x) => !x.ok))}`);
    }
    const ms = performance.now() - t0;
    totals[variant] += ms;
    console.log(`round ${r + 1} ${variant.padEnd(7)} migration 030: ${N} docs in ${(ms / 1000).toFixed(2)} s (${((N * 1000) / ms).toFixed(0)} docs/s)`);
    await drop();
  }
}
const w = totals.with / ROUNDS, wo = totals.without / ROUNDS;
console.log(`${usePg ? 'PostgreSQL' : 'PGlite'}: with 030 ${(w / 1000).toFixed(2)} s, without ${(wo / 1000).toFixed(2)} s per ${N} docs -> insert cost ${(((w - wo) / wo) * 100).toFixed(1)}%`);
