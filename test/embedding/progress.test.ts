/** Progress output when stdout is not a terminal: plain timestamped lines with rate and ETA. */
import { PassThrough } from 'node:stream';
import { expect, it } from 'vitest';
import { createProgress, formatDuration, watchQueue } from '../../src/embedding/progress.ts';
import { embeddingStatus } from '../../src/embedding/ops.ts';
import type { EmbeddingWorker } from '../../src/embedding/worker.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { insertDocument } from './fixtures.ts';
import { startEmbeddingWorker } from '../../src/embedding/worker.ts';
import { createHashEmbedder } from '../../src/embedding/providers/hash.ts';

function capture() {
  const s = new PassThrough();
  let out = '';
  s.on('data', (d) => (out += d));
  return { stream: s, text: () => out };
}

it('plain mode prints lines with done/total, percent, rate and ETA', () => {
  const c = capture();
  const p = createProgress({ label: 'embedding', total: 200, stream: c.stream, lineEveryMs: 0 });
  p.update(50);
  p.update(200);
  p.stop();
  const lines = c.text().trim().split('\n');
  expect(lines).toHaveLength(3);
  expect(lines[0]).toMatch(/^\d{4}-\d\d-\d\dT\S+ embedding: 50\/200 \(25\.0%\) [\d.]+\/s ETA \S+$/);
  expect(lines[2]).toMatch(/embedding: 200\/200 \(100\.0%\)/);
  expect(formatDuration(3725)).toBe('1h02m');
  expect(formatDuration(65)).toBe('1m05s');
  expect(formatDuration(undefined)).toBe('?');
});

it('watchEmbeddingQueue follows the real queue until it is empty', async () => {
  const t = await createTestDatabase();
  try {
    await insertDocument(t.db, ['one', 'two', 'three', 'four']);
    const c = capture();
    // watchEmbeddingQueue is watchQueue over embeddingStatus; the worker starts only after the watcher's first
    // read, so that read sees all four chunks pending (started before it, a fast worker could finish some first).
    let w: EmbeddingWorker | undefined;
    await watchQueue(async () => {
      const counts = (await embeddingStatus(t.db)).chunks;
      w ??= startEmbeddingWorker({ db: t.db, embedder: createHashEmbedder(16), pollMs: 20, batchSize: 1 });
      return counts;
    }, { intervalMs: 20, stream: c.stream, plain: true });
    await w!.stop();
    expect(c.text().trim().split('\n').at(-1)).toMatch(/embedding: 4\/4 \(100\.0%\)/);
  } finally {
    await t.drop();
  }
});
