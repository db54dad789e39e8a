/**
 * Ingest throughput: POST /v1/ingest:batch over HTTP against `memex serve` in a child process.
 *   node --import tsx bench/ingest/run.ts [--docs 20000] [--batch 100] [--concurrency 4] [--backend pglite|postgres|both]
 * Prints documents/s and p50/p95 batch latency. Embeddings are not part of this figure: the
 * server runs with the embedding worker off (EMBEDDING_WORKER=off) when that switch exists.
 */
import { parseArgs } from 'node:util';
import { machineLine, percentile, startBenchServer } from '../lib/server.ts';
import { message, rng } from '../lib/generate.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '20000' },
    batch: { type: 'string', default: '100' },
    concurrency: { type: 'string', default: '4' },
    backend: { type: 'string', default: 'both' },
  },
});
const total = Number(values.docs);
const batchSize = Number(values.batch);
const concurrency = Number(values.concurrency);
const backends = values.backend === 'both' ? (['pglite', 'postgres'] as const) : [values.backend as 'pglite' | 'postgres'];

async function run(backend: 'pglite' | 'postgres') {
  const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
  const r = rng(42);
  const batches: Record<string, unknown>[][] = [];
  for (let i = 0; i < total; i += batchSize) {
    batches.push(Array.from({ length: Math.min(batchSize, total - i) }, (_, k) => message(r, i + k)));
  }
  const latencies: number[] = [];
  let next = 0;
  let failed = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < batches.length) {
        const b = batches[next++];
        const s = performance.now();
        const res = await fetch(`${server.url}/v1/ingest:batch`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${server.token}` },
          body: JSON.stringify({ documents: b }),
        });
        const body = (await res.json()) as { failure_count?: number };
        latencies.push(performance.now() - s);
        if (res.status !== 202) failed += body.failure_count ?? b.length;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  latencies.sort((a, b) => a - b);
  console.log(
    `${backend.padEnd(8)} ${total} docs in ${seconds.toFixed(1)} s = ${(total / seconds).toFixed(0)} docs/s; ` +
      `batch of ${batchSize} p50 ${percentile(latencies, 50).toFixed(0)} ms, p95 ${percentile(latencies, 95).toFixed(0)} ms; ` +
      `concurrency ${concurrency}; failed items ${failed}; server peak RSS ${server.peakRssMb()} MB`,
  );
  await server.stop();
}

console.log(`memex ingest benchmark — ${machineLine()}`);
for (const b of backends) await run(b);
