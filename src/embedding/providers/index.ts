/** Builds the configured Embedder. CPU models go to a worker-thread pool unless EMBEDDING_THREADS=0. */
import type { EmbeddingConfig } from '../config.ts';
import type { Embedder } from '../types.ts';
import { createHashEmbedder } from './hash.ts';
import { createOllamaEmbedder, createOpenAIEmbedder } from './http.ts';
import { createTransformersEmbedder } from './transformers.ts';
import { createUseLiteEmbedder } from './use-lite.ts';

/** The provider on the calling thread. */
export async function createDirectEmbedder(cfg: EmbeddingConfig): Promise<Embedder> {
  switch (cfg.provider) {
    case 'use-lite':
      return createUseLiteEmbedder();
    case 'transformers':
      return createTransformersEmbedder(cfg);
    case 'ollama':
      return createOllamaEmbedder(cfg);
    case 'openai':
      return createOpenAIEmbedder(cfg);
    case 'hash':
      return createHashEmbedder(cfg.hashDims);
  }
}

/** What the server and `memex serve --role worker` call. */
export async function createEmbedder(cfg: EmbeddingConfig): Promise<Embedder> {
  const cpuBound = cfg.provider === 'use-lite' || cfg.provider === 'transformers';
  if (cpuBound && cfg.threads > 0) {
    const { createPooledEmbedder } = await import('../pool.ts');
    return createPooledEmbedder(cfg, cfg.threads);
  }
  return createDirectEmbedder(cfg);
}
