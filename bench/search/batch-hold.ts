/**
 * How long one import batch holds the database (issue 20: on PGlite, with its one connection, a search waits
 * for the transaction that is running). The documents `memex import mail` sends for a generated mbox (the
 * importer with a gateway that answers at once), prepared as POST /v1/ingest:batch prepares them, are stored
 * with Catalog.ingestBatch in batches of 100, one after another, on a fresh database per group size (items per
 * transaction), the sizes in alternate rounds. Prints documents/s and the time of each transaction (nothing
 * else uses the database, so that is how long it holds it): p50 / p95 / max.
 *
 *   node --import tsx bench/search/batch-hold.ts [--messages 5000] [--rounds 2] [--groups 100,50,25,10] [--pg]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { discoverSources, importMail } from '../../src/agent/collectors/email/mail-import.ts';
import type { GatewayClient } from '../../src/agent/gateway-client.ts';
import { batchKeyOf, Catalog } from '../../src/catalog/catalog.ts';
import type { IngestItem } from '../../src/catalog/ingest.ts';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { prepareIngest } from '../../src/catalog/prepare.ts';
import { cleanStrings } from '../../src/util/json-input.ts';
import { generateCorpus, writeMbox } from '../email/corpus.ts';
import { openScratchPostgres } from '../lib/database.ts';
import { machineLine, percentile } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '2' },
    groups: { type: 'string', default: '100,50,25,10' },
    pg: { type: 'boolean', default: false },
  },
});
const total = Number(values.messages);
const groups = values.groups!.split(',').map(Number);
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-batch-hold-'));
const mbox = writeMbox(path.join(work, 'mail.mbox'), generateCorpus({ messages: total, seed: 20 }).messages);
console.log(`${machineLine()}; load ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}; ${total} emails, batches of 100, ${values.pg ? 'postgres' : 'pglite'}`);

// What the importer sends, batch by batch.
const bodies: object[][] = [];
const instant: GatewayClient = {
  async submitDocument() {
    return { status: 202, body: {} as any };
  },
  async submitBatch(docs) {
    bodies.push(docs);
    const results = docs.map((_, index) => ({ index, status_code: 202, submission: { submission_id: 'x', doc_id: 'x', duplicate: false }, error: null }));
    return { status: 202, body: { results } as any };
  },
  async uploadFile() {
    return { status: 202, body: {} as any };
  },
  async uploadFiles(files) {
    return { status: 202, body: { results: files.map((_, index) => ({ index, status_code: 202, error: null })) } as any };
  },
};
const config = validateAgentConfig({ auth: { secret: 'batch-hold-secret-0123456789' }, gateway: { base_url: 'http://127.0.0.1:1' } }, 'bench', {});
await importMail(await discoverSources(mbox), { gateway: instant, config, attachments: false });
const batches: IngestItem[][] = bodies.map((docs) => docs.map((doc, index) => ({ index, request: prepareIngest(cleanStrings(doc) as any) })));

async function run(groupSize: number): Promise<{ docsPerSecond: number; holds: number[] }> {
  const { db, drop } = values.pg
    ? await openScratchPostgres('memex_batch_hold')
    : await (async () => {
        const pglite = await openDatabase({ dataDir: fs.mkdtempSync(path.join(work, 'pglite-')) });
        return { db: pglite, drop: () => pglite.close() };
      })();
  const holds: number[] = [];
  const timed: Database = {
    ...db,
    kind: db.kind,
    query: (sql, params, opts) => db.query(sql, params, opts),
    exec: (sql) => db.exec(sql),
    async transaction(fn) {
      const t = performance.now();
      try {
        return await db.transaction(fn);
      } finally {
        holds.push(performance.now() - t);
      }
    },
  };
  const catalog = new Catalog(timed, { batchGroupSize: groupSize });
  const t0 = performance.now();
  for (const items of batches) await catalog.ingestBatch(items, batchKeyOf(items.map((i) => i.request)));
  const docsPerSecond = total / ((performance.now() - t0) / 1000);
  await drop();
  return { docsPerSecond, holds: holds.sort((a, b) => a - b) };
}

for (let round = 1; round <= Number(values.rounds); round++) {
  for (const g of groups) {
    const { docsPerSecond, holds } = await run(g);
    const p = (q: number) => percentile(holds, q).toFixed(1);
    console.log(`round ${round}, ${g} per transaction: ${docsPerSecond.toFixed(0)} documents/s; ${holds.length} transactions, each ${p(50)} ms p50, ${p(95)} ms p95, ${holds.at(-1)!.toFixed(1)} ms max`);
  }
}
console.log(`load at end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
fs.rmSync(work, { recursive: true, force: true });
