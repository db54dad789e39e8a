/**
 * Relationship scorer figures on a synthetic message history written straight into the tables.
 *   node --import tsx bench/relationships/run.ts [--messages 100000] [--persons 500] [--threads 700] [--backend pglite|postgres|both]
 * Mix: 80% direct threads, 20% groups of 3-6 others; 40% of messages sent by the self person; 4%
 * with an attachment; timestamps spread over two years. Prints the full recompute time (with self
 * detection), an incremental refresh of one person (self known, as the refresh service runs it),
 * self detection alone and the top-route query (p50/p95 of 20 runs).
 */
import { parseArgs } from 'node:util';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { recomputeRelationships } from '../../src/relationships/recompute.ts';
import { resolveSelf } from '../../src/relationships/self.ts';
import { topRelationships } from '../../src/relationships/top.ts';
import { createServerDatabase } from '../../test/helpers/db.ts';
import { machineLine, percentile } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '100000' },
    persons: { type: 'string', default: '500' },
    threads: { type: 'string', default: '700' },
    backend: { type: 'string', default: 'both' },
  },
});
const D = Number(values.messages);
const P = Number(values.persons);
const T = Number(values.threads);

async function generate(db: Database): Promise<string> {
  await db.exec(`SELECT setseed(0.42)`);
  await db.exec(`
    CREATE TEMP TABLE bp AS SELECT n, gen_random_uuid() AS id FROM generate_series(0, ${P}) n;
    INSERT INTO people (person_id, display_name, source) SELECT id, 'Person ' || n, 'bench' FROM bp;
    INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical)
      SELECT id, 'phone', '+1508' || lpad(n::text, 7, '0'), '+1508' || lpad(n::text, 7, '0') FROM bp;
    CREATE TEMP TABLE bt AS SELECT n, gen_random_uuid() AS id,
      CASE WHEN random() < 0.8 THEN 1 ELSE 3 + floor(random() * 4)::int END AS size FROM generate_series(1, ${T}) n;
    INSERT INTO threads (thread_id, external_id, source_type) SELECT id, 'bench-' || n, 'chatapp' FROM bt;
    CREATE TEMP TABLE btm AS
      SELECT t, p, (row_number() OVER (PARTITION BY t ORDER BY p) - 1)::int AS k, (count(*) OVER (PARTITION BY t))::int AS c
        FROM (SELECT DISTINCT bt.n AS t, 1 + floor(random() * ${P})::int AS p FROM bt, generate_series(1, bt.size)) x;
    CREATE TEMP TABLE bm AS SELECT i, gen_random_uuid() AS id, 1 + floor(random() * ${T})::int AS t, random() < 0.4 AS out,
      now() - make_interval(secs => random() * 730 * 86400) AS ts, random() < 0.04 AS att FROM generate_series(1, ${D}) i;
    INSERT INTO documents (doc_id, external_id, source_type, text, text_sha256, content_timestamp, content_timestamp_type,
                           thread_id, has_attachments, attachment_count, status, metadata)
      SELECT bm.id, 'bench:' || i, 'chatapp', 'm', 'x', ts, CASE WHEN out THEN 'sent' ELSE 'received' END, bt.id, att,
             CASE WHEN att THEN 1 ELSE 0 END, 'indexed',
             jsonb_build_object('message', jsonb_build_object('is_from_me', out))
        FROM bm JOIN bt ON bt.n = bm.t;
    INSERT INTO document_people (doc_id, person_id, role)
      SELECT bm.id, (SELECT id FROM bp WHERE n = 0), CASE WHEN out THEN 'sender' ELSE 'recipient' END FROM bm;
    INSERT INTO document_people (doc_id, person_id, role)
      SELECT bm.id, bp.id, CASE WHEN NOT bm.out AND btm.k = bm.i % btm.c THEN 'sender' ELSE 'recipient' END
        FROM bm JOIN btm ON btm.t = bm.t JOIN bp ON bp.n = btm.p;
    ANALYZE;
  `);
  const r = await db.query<{ id: string }>('SELECT id FROM bp WHERE n = 0');
  return r.rows[0].id;
}

async function run(kind: 'pglite' | 'postgres'): Promise<void> {
  let db: Database;
  let drop = async () => {};
  if (kind === 'postgres') {
    const s = await createServerDatabase();
    db = await openDatabase({ databaseUrl: s.url });
    drop = s.drop;
  } else {
    db = await openDatabase({});
  }
  try {
    let t = Date.now();
    const self = await generate(db);
    const genMs = Date.now() - t;
    t = Date.now();
    const full = await recomputeRelationships(db);
    const fullMs = Date.now() - t;
    if (full.self_person_id !== self) throw new Error('self person not detected');
    const some = await db.query<{ person_id: string }>(
      'SELECT person_id FROM relationship_edges ORDER BY score DESC LIMIT 1',
    );
    const incr: number[] = [];
    for (let i = 0; i < 10; i++) {
      t = Date.now();
      // As the refresh service does it: the self person is known (cached), one person touched.
      await recomputeRelationships(db, { selfPersonId: self, persons: [some.rows[0].person_id] });
      incr.push(Date.now() - t);
    }
    const detect: number[] = [];
    for (let i = 0; i < 5; i++) {
      t = Date.now();
      await resolveSelf(db, { selfIdentifiers: [], phoneRegion: 'US' });
      detect.push(Date.now() - t);
    }
    detect.sort((a, b) => a - b);
    const top: number[] = [];
    for (let i = 0; i < 20; i++) {
      t = Date.now();
      await topRelationships(db, self, { days: 90, limit: 50, offset: 0 });
      top.push(Date.now() - t);
    }
    incr.sort((a, b) => a - b);
    top.sort((a, b) => a - b);
    console.log(
      `${kind}: ${D} messages, ${P} persons, ${T} threads (generated in ${genMs} ms) | full recompute ${fullMs} ms ` +
        `(${full.edges_upserted} edges) | incremental 1 person p50 ${percentile(incr, 50)} ms p95 ${percentile(incr, 95)} ms | ` +
        `self detection p50 ${percentile(detect, 50)} ms | top 90d limit 50 p50 ${percentile(top, 50)} ms p95 ${percentile(top, 95)} ms`,
    );
  } finally {
    await db.close();
    await drop();
  }
}

console.log(machineLine());
for (const kind of values.backend === 'both' ? (['pglite', 'postgres'] as const) : [values.backend as 'pglite' | 'postgres']) {
  await run(kind);
}
