/**
 * Embedding configuration from the environment (read through src/config/env.ts: one-line ConfigErrors
 * naming the variable).
 */
import os from 'node:os';
import path from 'node:path';
import { ConfigError, bool, defineSettings, filePath, int, oneOf, read, string, url } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';

export const PROVIDERS = ['use-lite', 'transformers', 'ollama', 'openai', 'hash'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

export interface EmbeddingConfig {
  provider: ProviderName;
  /** transformers: hub id (downloaded to cacheDir); ollama/openai: model name. */
  model: string | undefined;
  /** transformers: local model folder (config.json, tokenizer.json, onnx/). */
  modelDir: string | undefined;
  /** transformers: allow downloads from the Hub (default: only when `model` is set and no modelDir). */
  allowRemote: boolean;
  cacheDir: string;
  pooling: 'mean' | 'cls';
  normalize: boolean;
  queryPrefix: string;
  passagePrefix: string;
  /** transformers dtype, e.g. fp32, q8; undefined lets the library choose. */
  dtype: string | undefined;
  ollamaBaseUrl: string;
  openaiBaseUrl: string;
  openaiApiKey: string | undefined;
  /** openai: requested dimensions (also the expected length); undefined = learned from the first answer. */
  dimensions: number | undefined;
  timeoutMs: number;
  maxRetries: number;
  /** Texts per HTTP request (ollama/openai). */
  httpBatch: number;
  /** Worker threads for CPU models (use-lite, transformers); 0 runs the model on the calling thread. */
  threads: number;
  /**
   * Nice value of the embedding threads (Linux: per thread), so the HTTP thread wins the CPU when
   * the model threads keep every core busy.
   */
  threadNice: number;
  /**
   * One more model thread that serves only query embeddings (search, ask), at normal priority, so
   * a search never waits behind the backlog (EMBEDDING_QUERY_THREAD, default true; costs one more
   * model copy in memory).
   */
  queryThread: boolean;
  /** In-process worker loops claiming batches at once. */
  concurrency: number;
  batchSize: number;
  leaseSeconds: number;
  pollMs: number;
  hashDims: number;
  /** Run the worker inside `memex serve` (role all). */
  inProcessWorker: boolean;
}

export const EMBEDDING_SETTINGS = defineSettings('embedding', 'Embeddings and the worker', {
  EMBEDDING_PROVIDER: oneOf(PROVIDERS, {
    default: 'use-lite',
    description: '`use-lite` (offline, 512 dims), `transformers`, `ollama`, `openai`, or `hash` (tests only; the server logs a loud warning)',
  }),
  EMBEDDING_MODEL: string({ description: 'transformers Hub id / ollama model / openai model (required for those)' }),
  EMBEDDING_MODEL_DIR: filePath({ description: 'transformers local folder (config.json, tokenizer.json, onnx/)' }),
  EMBEDDING_ALLOW_REMOTE: bool({ defaultText: 'true only with `EMBEDDING_MODEL` and no dir', description: 'transformers may download from the Hub' }),
  EMBEDDING_CACHE_DIR: filePath({ defaultText: '`DATA_DIR/models`', description: 'transformers download cache' }),
  EMBEDDING_POOLING: oneOf(['mean', 'cls'] as const, { default: 'mean', description: 'pooling of token vectors (transformers)' }),
  EMBEDDING_NORMALIZE: bool({ default: true, description: 'L2-normalise (transformers)' }),
  EMBEDDING_QUERY_PREFIX: string({ default: '', keepRaw: true, description: 'prepended to queries, spaces kept, e.g. `query: ` for e5' }),
  EMBEDDING_PASSAGE_PREFIX: string({ default: '', keepRaw: true, description: 'prepended to passages, spaces kept, e.g. `passage: ` for e5' }),
  EMBEDDING_DTYPE: string({ defaultText: 'library default', description: 'transformers dtype (`fp32`, `q8`, …)' }),
  OLLAMA_BASE_URL: url({ default: 'http://127.0.0.1:11434', description: 'Ollama server, for embeddings and for `LLM_PROVIDER=ollama`' }),
  OPENAI_BASE_URL: url({
    default: 'https://api.openai.com/v1',
    description: 'any OpenAI-compatible server (with or without `/v1` for embeddings), for embeddings and for `LLM_PROVIDER=openai`',
  }),
  OPENAI_API_KEY: string({ secret: true, description: 'sent as `Authorization: Bearer` to `OPENAI_BASE_URL`' }),
  EMBEDDING_DIMENSIONS: int({ min: 1, max: 4096, defaultText: 'learned', description: 'openai `dimensions` request field and expected length' }),
  EMBEDDING_TIMEOUT_MS: int({ default: 30_000, min: 100, max: 600_000, description: 'limit of one HTTP request (ollama, openai)' }),
  EMBEDDING_MAX_RETRIES: int({ default: 4, min: 0, max: 20, description: 'retries on 429, 5xx and network errors' }),
  EMBEDDING_HTTP_BATCH: int({ default: 32, min: 1, max: 2048, description: 'texts per HTTP request' }),
  EMBEDDING_THREADS: int({ min: 0, max: 64, defaultText: 'cores', description: 'worker threads for use-lite/transformers, so embedding never blocks HTTP; 0: the calling thread' }),
  EMBEDDING_THREAD_NICE: int({ default: 10, min: 0, max: 19, description: 'nice value of the model threads (Linux, per thread), so HTTP keeps priority' }),
  EMBEDDING_QUERY_THREAD: bool({ default: true, description: 'one more model thread for query embeddings only, at normal priority, so a search never waits behind the backlog' }),
  EMBEDDING_CONCURRENCY: int({ min: 1, max: 64, defaultText: '= threads', description: 'claim loops per process' }),
  EMBEDDING_BATCH_SIZE: int({ default: 32, min: 1, max: 1024, description: 'chunks per claim' }),
  EMBEDDING_LEASE_SECONDS: int({ default: 300, min: 1, max: 86_400, description: "lease on claimed chunks; a crashed worker's chunks return to `pending` after it" }),
  EMBEDDING_POLL_MS: int({ default: 1000, min: 10, max: 600_000, description: 'idle sleep when the queue is empty' }),
  EMBEDDING_HASH_DIMS: int({ default: 256, min: 8, max: 4096, description: 'dimensions of the hash provider' }),
  EMBEDDING_WORKER: bool({ default: true, description: 'run the embedding worker inside `memex serve` (role `all`)' }),
});

export function loadEmbeddingConfig(env: NodeJS.ProcessEnv = process.env): EmbeddingConfig {
  const S = EMBEDDING_SETTINGS;
  const provider = read(env, S.EMBEDDING_PROVIDER);
  const model = read(env, S.EMBEDDING_MODEL);
  const modelDir = read(env, S.EMBEDDING_MODEL_DIR);
  if (provider === 'transformers' && !model && !modelDir) {
    throw new ConfigError('EMBEDDING_PROVIDER=transformers needs EMBEDDING_MODEL_DIR (a local model folder) or EMBEDDING_MODEL (a Hub id)');
  }
  if ((provider === 'ollama' || provider === 'openai') && !model) {
    throw new ConfigError(`EMBEDDING_PROVIDER=${provider} needs EMBEDDING_MODEL (e.g. ${provider === 'ollama' ? 'bge-m3' : 'text-embedding-3-small'})`);
  }
  const threads = read(env, S.EMBEDDING_THREADS) ?? Math.max(1, os.availableParallelism());
  return {
    provider,
    model,
    modelDir,
    allowRemote: read(env, S.EMBEDDING_ALLOW_REMOTE) ?? (!modelDir && !!model),
    cacheDir: read(env, S.EMBEDDING_CACHE_DIR) ?? path.join(read(env, SERVER_SETTINGS.DATA_DIR), 'models'),
    pooling: read(env, S.EMBEDDING_POOLING),
    normalize: read(env, S.EMBEDDING_NORMALIZE),
    queryPrefix: read(env, S.EMBEDDING_QUERY_PREFIX),
    passagePrefix: read(env, S.EMBEDDING_PASSAGE_PREFIX),
    dtype: read(env, S.EMBEDDING_DTYPE),
    ollamaBaseUrl: read(env, S.OLLAMA_BASE_URL),
    openaiBaseUrl: read(env, S.OPENAI_BASE_URL),
    openaiApiKey: read(env, S.OPENAI_API_KEY),
    dimensions: read(env, S.EMBEDDING_DIMENSIONS),
    timeoutMs: read(env, S.EMBEDDING_TIMEOUT_MS),
    maxRetries: read(env, S.EMBEDDING_MAX_RETRIES),
    httpBatch: read(env, S.EMBEDDING_HTTP_BATCH),
    threads,
    threadNice: read(env, S.EMBEDDING_THREAD_NICE),
    queryThread: read(env, S.EMBEDDING_QUERY_THREAD),
    concurrency: read(env, S.EMBEDDING_CONCURRENCY) ?? Math.max(1, threads),
    batchSize: read(env, S.EMBEDDING_BATCH_SIZE),
    leaseSeconds: read(env, S.EMBEDDING_LEASE_SECONDS),
    pollMs: read(env, S.EMBEDDING_POLL_MS),
    hashDims: read(env, S.EMBEDDING_HASH_DIMS),
    inProcessWorker: read(env, S.EMBEDDING_WORKER),
  };
}

/**
 * Lines the server logs at start (warn level). The hash provider is for tests only: its vectors
 * carry no meaning, so the vector leg of search becomes noise.
 */
export function embeddingStartupWarnings(cfg: EmbeddingConfig): string[] {
  const out: string[] = [];
  if (cfg.provider === 'hash') {
    out.push(
      '!!! EMBEDDING_PROVIDER=hash: feature-hashing vectors for TESTS ONLY. Semantic search will be meaningless. ' +
        'Unset EMBEDDING_PROVIDER to use the default use-lite model. !!!',
    );
  }
  if (cfg.provider === 'openai' && !cfg.openaiApiKey && /api\.openai\.com/.test(cfg.openaiBaseUrl)) {
    out.push('EMBEDDING_PROVIDER=openai without OPENAI_API_KEY: requests to api.openai.com will be refused');
  }
  return out;
}

/** Logs the warnings above through any logger with warn() (pino, console). */
export function logEmbeddingWarnings(logger: { warn: (msg: string) => void }, cfg: EmbeddingConfig): void {
  for (const w of embeddingStartupWarnings(cfg)) logger.warn(w);
}
