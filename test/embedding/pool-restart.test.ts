/**
 * A pool thread whose model fails to start is replaced by a fresh thread, up to three tries; a third
 * failure, or a configuration error at once, fails the pool's start (src/embedding/pool.ts). The thread is
 * test/embedding/failing-thread.ts, which fails its first starts on purpose and then runs the real thread
 * code with the hashing embedder.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/server.ts';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createPooledEmbedder } from '../../src/embedding/pool.ts';

const ENTRY = new URL('./failing-thread.ts', import.meta.url).href;
const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'hash', EMBEDDING_THREADS: '1' });
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-pool-'));
afterAll(() => {
  for (const k of ['POOL_TEST_STARTS_FILE', 'POOL_TEST_FAILING_STARTS', 'POOL_TEST_ERROR_NAME']) delete process.env[k];
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Starts a one-thread pool whose thread fails its first `failing` starts; `starts()` counts the tries. */
function startFailing(name: string, failing: number, errorName = 'Error') {
  const file = path.join(dir, name);
  fs.writeFileSync(file, '');
  // Worker threads get a copy of the environment as it is when they start.
  Object.assign(process.env, { POOL_TEST_STARTS_FILE: file, POOL_TEST_FAILING_STARTS: String(failing), POOL_TEST_ERROR_NAME: errorName });
  const pool = createPooledEmbedder(cfg, 1, { queryThread: false, entry: ENTRY });
  return { pool, starts: () => fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length };
}

describe('embedding pool thread starts', () => {
  it('replaces a thread whose model failed to start, and the third try serves', async () => {
    const { pool, starts } = startFailing('twice', 2);
    const p = await pool;
    try {
      expect(starts()).toBe(3);
      expect(p.stats().threads).toEqual({ query: 0, bulk: 1 });
      const [v] = await p.embed(['the ferry leaves at nine'], 'passage');
      expect(v).toHaveLength(cfg.hashDims);
    } finally {
      await p.close?.();
    }
  });

  it('gives up after the third failed start, with the model\'s error', async () => {
    const { pool, starts } = startFailing('thrice', 3);
    await expect(pool).rejects.toThrow("Backend 'wasm' has not yet been initialized (start 3)");
    expect(starts()).toBe(3);
  });

  it('does not retry a configuration error', async () => {
    const { pool, starts } = startFailing('config', 1, 'ConfigError');
    await expect(pool).rejects.toBeInstanceOf(ConfigError);
    expect(starts()).toBe(1);
  });
});
