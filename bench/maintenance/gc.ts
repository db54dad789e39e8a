/**
 * Cost of garbage collection (src/maintenance/gc.ts) on a store of N documents (default 100,000),
 * each with one linked chunk, plus N/10 unlinked chunks (superseded versions) and N vectors of a
 * retired model: the first run collects them, the second finds nothing (the steady-state cost of
 * the periodic run). Rows are written with SQL, not through ingestion, so setting up is quick.
 *
 *   node --import tsx bench/maintenance/gc.ts [--docs N] [--backend postgres|pglite|both]
 */
import { parseArgs } from 'node:util';
import os from 'node:os';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { collectGarbage } from '../../src/maintenance/gc.ts';
import { openScratchPostgres } from '../lib/database.ts';

const { values } = parseArgs({ options: { docs: { type: 'string', default: '100000' }, backend: { type: 'string', default: 'both' } } });
const n = Number(values.docs);

async function fill(db: Database): Promise<number> {
  const t = Date.now();
  await db.query(
    `INSERT INTO documents (doc_id, external_id, source_type, text, text_sha256, content_timestamp, content_timestamp_type)
     SELECT md5('d' || g)::uuid, 'bench-' || g, 'note', 'document number ' || g, md5('t' || g), now(), 'created'
       FROM generate_series(1, $1) g`,
    [n],
  );
  await db.query(
    `INSERT INTO chunks (chunk_id, text, text_sha256, embedding_status, created_at)
     SELECT md5('c' || g)::uuid, 'chunk number ' || g, md5('c' || g), 'embedded', now() - interval '2 hours'
       FROM generate_series(1, $1 + $1 / 10) g`,
    [n],
  );
  await db.query(
    `INSERT INTO chunk_documents (doc_id, ordinal, chunk_id, start_char, end_char)
     SELECT md5('d' || g)::uuid, 0, md5('c' || g)::uuid, 0, 10 FROM generate_series(1, $1) g`,
    [n],
  );
  await db.query(`INSERT INTO embedding_models (model, dimensions, state) VALUES ('bench-old', 3, 'retired')`);
  await db.query(
    `INSERT INTO chunk_embeddings (model, chunk_id, embedding)
     SELECT 'bench-old', md5('c' || g)::uuid, '[1,0,0]' FROM generate_series(1, $1) g`,
    [n],
  );
  return Date.now() - t;
}

async function measure(name: string, db: Database, drop: () => Promise<void>): Promise<void> {
  try {
    const setup = await fill(db);
    const first = await collectGarbage(db, undefined, {});
    const second = await collectGarbage(db, undefined, {});
    console.log(
      `${name.padEnd(9)} ${n} docs (setup ${(setup / 1000).toFixed(1)} s): first run ${first.duration_ms} ms ` +
        `(${first.chunks} chunks, ${first.retired_vectors} retired vectors), nothing to collect ${second.duration_ms} ms`,
    );
  } finally {
    await drop();
  }
}

console.log(`machine: ${os.cpus().length} cores, load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
if (values.backend !== 'pglite') {
  const pg = await openScratchPostgres('memex_gc_bench');
  await measure('postgres', pg.db, pg.drop);
}
if (values.backend !== 'postgres') {
  const db = await openDatabase({});
  await measure('pglite', db, () => db.close());
}
