/**
 * Stopping the server must not wait for the model to finish its batch (issue 46: Ctrl-C on `memex serve` took a
 * minute while 2,000 documents were being embedded). Closing the pool ends the texts its threads are working on
 * as "unavailable", which the queue worker answers by returning their chunks to the queue.
 */
import { describe, expect, it } from 'vitest';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createPooledEmbedder } from '../../src/embedding/pool.ts';
import { ProviderUnavailableError } from '../../src/embedding/types.ts';

const ENTRY = new URL('./stuck-thread.ts', import.meta.url).href;
const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'hash', EMBEDDING_THREADS: '1' });

describe('closing the embedding pool', () => {
  it('ends a batch the model is still working on, as unavailable, instead of waiting for it', async () => {
    const pool = await createPooledEmbedder(cfg, 1, { queryThread: false, entry: ENTRY });
    const running = pool.embed(['a text the model never finishes'], 'passage');
    const outcome = running.then(() => 'answered', (err: unknown) => err);
    // The job is in the thread (not waiting in the queue) once the pool counts it busy.
    await expect.poll(() => pool.stats().busy.bulk, { timeout: 30_000 }).toBe(1);
    await pool.close?.();
    expect(await outcome).toBeInstanceOf(ProviderUnavailableError);
  });
});
