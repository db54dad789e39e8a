/**
 * Store-rate probe behind the storage choice in docs/embeddings.md: inserts N unit vectors (512 real
 * dimensions, like USE-lite) in batches of 32 with an HNSW index present, as (a) vector(1024)
 * zero-padded and (b) native 512 dimensions, on PGlite or (DATABASE_URL set) PostgreSQL.
 *   node --import tsx bench/embed/hnsw-store.ts [N]
 */
import { openPglite } from '../../src/db/pglite.ts';
import { openPostgres } from '../../src/db/postgres.ts';

const N = Number(process.argv[2] ?? 2000);
const url = process.env.DATABASE_URL;
const db = url ? await openPostgres(url) : await openPglite();
await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
function rnd(n: number, pad: number): string {
  const v = Array.from({ length: n }, () => Math.random() - 0.5);
  const norm = Math.hypot(...v);
  const out = v.map((x) => (x / norm).toFixed(6));
  for (let i = n; i < pad; i++) out.push('0');
  return `[${out.join(',')}]`;
}
for (const [label, dims, typ] of [['padded vector(1024)', 1024, 'vector(1024)'], ['native vector(512)', 512, 'vector(512)'], ['native halfvec(512)', 512, 'halfvec(512)']] as const) {
  const ops = typ.startsWith('half') ? 'halfvec_cosine_ops' : 'vector_cosine_ops';
  await db.exec(`DROP TABLE IF EXISTS probe; CREATE TABLE probe (id int PRIMARY KEY, e ${typ});
    CREATE INDEX ON probe USING hnsw (e ${ops});`);
  const t0 = performance.now();
  for (let i = 0; i < N; i += 32) {
    const ids: number[] = [], vs: string[] = [];
    for (let j = i; j < Math.min(N, i + 32); j++) { ids.push(j); vs.push(rnd(512, dims)); }
    await db.query(`INSERT INTO probe (id, e) SELECT i, v::${typ} FROM unnest($1::int[], $2::text[]) AS u(i, v)`, [ids, vs]);
  }
  const s = (performance.now() - t0) / 1000;
  console.log(`${db.kind} ${label}: ${N} rows in ${s.toFixed(1)} s = ${(N / s).toFixed(0)} rows/s`);
}
await db.exec('DROP TABLE IF EXISTS probe');
await db.close();
