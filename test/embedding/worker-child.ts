/**
 * A worker PROCESS for the multi-process tests: connects to DATABASE_URL, embeds with the hash
 * embedder and appends every text it sends to the model to CALL_LOG (one per line), so the parent
 * can count model calls per chunk. MODE=hang logs its first batch and then never returns from the
 * model (to be killed with SIGKILL mid-batch). Waits for a 'go' message before claiming anything.
 */
import fs from 'node:fs';
import { openPostgres } from '../../src/db/postgres.ts';
import { createHashEmbedder } from '../../src/embedding/providers/hash.ts';
import type { Embedder } from '../../src/embedding/types.ts';
import { startEmbeddingWorker } from '../../src/embedding/worker.ts';

const db = await openPostgres(process.env.DATABASE_URL!, 4);
const inner = createHashEmbedder(64);
const log = process.env.CALL_LOG!;
const hang = process.env.MODE === 'hang';
const embedder: Embedder = {
  name: inner.name,
  dimensions: inner.dimensions,
  async embed(texts) {
    fs.appendFileSync(log, texts.map((t) => `${t}\n`).join(''));
    if (hang) await new Promise(() => undefined);
    return inner.embed(texts);
  },
};
const ac = new AbortController();
process.on('message', (m) => {
  if (m !== 'go') return;
  const w = startEmbeddingWorker({
    db,
    embedder,
    batchSize: Number(process.env.BATCH ?? 25),
    leaseSeconds: Number(process.env.LEASE_SECONDS ?? 300),
    concurrency: Number(process.env.CONCURRENCY ?? 2),
    pollMs: 50,
    signal: ac.signal,
  });
  process.on('SIGTERM', async () => {
    ac.abort();
    await w.done;
    await db.close();
    process.exit(0);
  });
});
process.send!('ready');
