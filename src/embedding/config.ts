/**
 * Embedding configuration from the environment. Every key is listed in docs/embeddings.md.
 * Errors are one line naming the variable, thrown as ConfigError like the server config.
 */
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../config/server.ts';

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

function str(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const v = env[key];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const raw = str(env, key);
  if (raw === undefined) return def;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${key} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: NodeJS.ProcessEnv, key: string, def: boolean): boolean {
  const raw = str(env, key)?.toLowerCase();
  if (raw === undefined) return def;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${key} must be true or false, got "${env[key]}"`);
}

function httpUrl(env: NodeJS.ProcessEnv, key: string, def: string): string {
  const raw = str(env, key) ?? def;
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ConfigError(`${key} must be an http(s) URL, got "${raw}"`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw new ConfigError(`${key} must be an http(s) URL, got "${raw}"`);
  return raw.replace(/\/+$/, '');
}

export function loadEmbeddingConfig(env: NodeJS.ProcessEnv = process.env): EmbeddingConfig {
  const provider = (str(env, 'EMBEDDING_PROVIDER') ?? 'use-lite').toLowerCase() as ProviderName;
  if (!PROVIDERS.includes(provider)) {
    throw new ConfigError(`EMBEDDING_PROVIDER must be one of ${PROVIDERS.join(', ')}, got "${env.EMBEDDING_PROVIDER}"`);
  }
  const model = str(env, 'EMBEDDING_MODEL');
  const modelDir = str(env, 'EMBEDDING_MODEL_DIR');
  if (provider === 'transformers' && !model && !modelDir) {
    throw new ConfigError('EMBEDDING_PROVIDER=transformers needs EMBEDDING_MODEL_DIR (a local model folder) or EMBEDDING_MODEL (a Hub id)');
  }
  if ((provider === 'ollama' || provider === 'openai') && !model) {
    throw new ConfigError(`EMBEDDING_PROVIDER=${provider} needs EMBEDDING_MODEL (e.g. ${provider === 'ollama' ? 'bge-m3' : 'text-embedding-3-small'})`);
  }
  const pooling = (str(env, 'EMBEDDING_POOLING') ?? 'mean').toLowerCase();
  if (pooling !== 'mean' && pooling !== 'cls') throw new ConfigError(`EMBEDDING_POOLING must be mean or cls, got "${pooling}"`);
  const dimsRaw = str(env, 'EMBEDDING_DIMENSIONS');
  const threads = int(env, 'EMBEDDING_THREADS', Math.max(1, os.availableParallelism()), 0, 64);
  const dataDir = path.resolve(str(env, 'DATA_DIR') ?? './data');
  return {
    provider,
    model,
    modelDir: modelDir ? path.resolve(modelDir) : undefined,
    allowRemote: bool(env, 'EMBEDDING_ALLOW_REMOTE', !modelDir && !!model),
    cacheDir: path.resolve(str(env, 'EMBEDDING_CACHE_DIR') ?? path.join(dataDir, 'models')),
    pooling,
    normalize: bool(env, 'EMBEDDING_NORMALIZE', true),
    // Prefixes keep their inner spaces ("query: "), so read them untrimmed.
    queryPrefix: env.EMBEDDING_QUERY_PREFIX ?? '',
    passagePrefix: env.EMBEDDING_PASSAGE_PREFIX ?? '',
    dtype: str(env, 'EMBEDDING_DTYPE'),
    ollamaBaseUrl: httpUrl(env, 'OLLAMA_BASE_URL', 'http://127.0.0.1:11434'),
    openaiBaseUrl: httpUrl(env, 'OPENAI_BASE_URL', 'https://api.openai.com/v1'),
    openaiApiKey: str(env, 'OPENAI_API_KEY'),
    dimensions: dimsRaw === undefined ? undefined : int(env, 'EMBEDDING_DIMENSIONS', 0, 1, 4096),
    timeoutMs: int(env, 'EMBEDDING_TIMEOUT_MS', 30_000, 100, 600_000),
    maxRetries: int(env, 'EMBEDDING_MAX_RETRIES', 4, 0, 20),
    httpBatch: int(env, 'EMBEDDING_HTTP_BATCH', 32, 1, 2048),
    threads,
    threadNice: int(env, 'EMBEDDING_THREAD_NICE', 10, 0, 19),
    queryThread: bool(env, 'EMBEDDING_QUERY_THREAD', true),
    concurrency: int(env, 'EMBEDDING_CONCURRENCY', Math.max(1, threads), 1, 64),
    batchSize: int(env, 'EMBEDDING_BATCH_SIZE', 32, 1, 1024),
    leaseSeconds: int(env, 'EMBEDDING_LEASE_SECONDS', 300, 1, 86_400),
    pollMs: int(env, 'EMBEDDING_POLL_MS', 1000, 10, 600_000),
    hashDims: int(env, 'EMBEDDING_HASH_DIMS', 256, 8, 4096),
    inProcessWorker: bool(env, 'EMBEDDING_WORKER', true),
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
