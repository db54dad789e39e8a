/** Configuration parsing and the transformers loading path (remote off, missing folder). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/server.ts';
import { embeddingStartupWarnings, loadEmbeddingConfig, logEmbeddingWarnings } from '../../src/embedding/config.ts';
import { createTransformersEmbedder } from '../../src/embedding/providers/transformers.ts';
import { createEmbedder } from '../../src/embedding/providers/index.ts';

describe('loadEmbeddingConfig', () => {
  it('defaults to use-lite with one thread per core and the worker in-process', () => {
    const c = loadEmbeddingConfig({});
    expect(c.provider).toBe('use-lite');
    expect(c.threads).toBe(os.availableParallelism());
    expect(c.concurrency).toBe(c.threads);
    expect(c.inProcessWorker).toBe(true);
    expect(c).toMatchObject({ batchSize: 32, leaseSeconds: 300, pooling: 'mean', normalize: true });
  });

  it('one-line errors naming the variable', () => {
    const bad: [Record<string, string>, RegExp][] = [
      [{ EMBEDDING_PROVIDER: 'word2vec' }, /^EMBEDDING_PROVIDER must be one of use-lite, transformers, ollama, openai, hash/],
      [{ EMBEDDING_PROVIDER: 'ollama' }, /EMBEDDING_MODEL/],
      [{ EMBEDDING_PROVIDER: 'transformers' }, /EMBEDDING_MODEL_DIR .*EMBEDDING_MODEL/],
      [{ EMBEDDING_THREADS: 'two' }, /^EMBEDDING_THREADS must be an integer/],
      [{ EMBEDDING_BATCH_SIZE: '0' }, /^EMBEDDING_BATCH_SIZE must be between 1 and/],
      [{ EMBEDDING_POOLING: 'max' }, /^EMBEDDING_POOLING must be mean or cls/],
      [{ EMBEDDING_NORMALIZE: 'maybe' }, /^EMBEDDING_NORMALIZE must be true or false/],
      [{ EMBEDDING_PROVIDER: 'openai', EMBEDDING_MODEL: 'x', OPENAI_BASE_URL: 'ftp://x' }, /^OPENAI_BASE_URL must be an http\(s\) URL/],
    ];
    for (const [env, re] of bad) {
      let err: unknown;
      try { loadEmbeddingConfig(env); } catch (e) { err = e; }
      expect(err, JSON.stringify(env)).toBeInstanceOf(ConfigError);
      expect((err as Error).message).toMatch(re);
      expect((err as Error).message).not.toContain('\n');
    }
  });

  it('the hash provider produces a loud warning for the server to log', () => {
    const c = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'hash' });
    expect(embeddingStartupWarnings(c)[0]).toMatch(/TESTS ONLY/);
    const logged: string[] = [];
    logEmbeddingWarnings({ warn: (m) => logged.push(m) }, c);
    expect(logged).toHaveLength(1);
    expect(embeddingStartupWarnings(loadEmbeddingConfig({}))).toEqual([]);
  });
});

describe('transformers provider loading', () => {
  it('a missing model folder with remote loading off gives a clear error naming the folder and the variables', async () => {
    const dir = path.join(os.tmpdir(), `memex-no-model-${process.pid}`);
    const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'transformers', EMBEDDING_MODEL_DIR: dir });
    expect(cfg.allowRemote).toBe(false);
    const err = await createTransformersEmbedder(cfg).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(dir);
    expect(err.message).toMatch(/does not exist/);
    expect(err.message).toMatch(/EMBEDDING_MODEL_DIR/);
    expect(err.message).toMatch(/EMBEDDING_MODEL=/);
  });

  it('a folder without model files gives a clear error, never a download', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-empty-model-'));
    try {
      let err = await createTransformersEmbedder(loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'transformers', EMBEDDING_MODEL_DIR: dir })).catch((e) => e);
      expect(err.message).toMatch(/has no config\.json/);
      fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ model_type: 'bert' }));
      err = await createTransformersEmbedder(loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'transformers', EMBEDDING_MODEL_DIR: dir })).catch((e) => e);
      expect(err).toBeInstanceOf(ConfigError);
      expect(err.message).toContain(dir);
      expect(err.message).toMatch(/could not load transformers folder/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a Hub id with remote loading switched off is refused up front', async () => {
    const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'transformers', EMBEDDING_MODEL: 'Xenova/bge-small-en-v1.5', EMBEDDING_ALLOW_REMOTE: 'false' });
    await expect(createTransformersEmbedder(cfg)).rejects.toThrow(/EMBEDDING_ALLOW_REMOTE=false and no EMBEDDING_MODEL_DIR/);
  });

  it('the same error surfaces through the worker-thread pool', async () => {
    const dir = path.join(os.tmpdir(), `memex-no-model-pool-${process.pid}`);
    const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'transformers', EMBEDDING_MODEL_DIR: dir, EMBEDDING_THREADS: '1' });
    const err = await createEmbedder(cfg).catch((e) => e);
    expect(err).toBeInstanceOf(ConfigError);
    expect(err.message).toContain(dir);
  });
});
