/**
 * Any ONNX sentence-embedding model through @huggingface/transformers (feature-extraction).
 * Local folder (EMBEDDING_MODEL_DIR, remote loading off) or a Hub id (EMBEDDING_MODEL) downloaded
 * once into EMBEDDING_CACHE_DIR. Pooling, normalisation and query/passage prefixes come from config
 * because they differ per model (bge: cls + "Represent this sentence…: " for queries; e5: mean +
 * "query: "/"passage: "; MiniLM: mean, no prefix).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ConfigError } from '../../config/server.ts';
import type { EmbeddingConfig } from '../config.ts';
import type { Embedder } from '../types.ts';

const ENV_HINT =
  'set EMBEDDING_MODEL_DIR to a folder holding config.json, tokenizer.json and onnx/model*.onnx, ' +
  'or set EMBEDDING_MODEL=<hub id> with EMBEDDING_ALLOW_REMOTE=true to download it into EMBEDDING_CACHE_DIR';

export async function createTransformersEmbedder(cfg: EmbeddingConfig): Promise<Embedder> {
  const tf = await import('@huggingface/transformers');
  const env = tf.env;
  let modelId: string;
  if (cfg.modelDir) {
    const dir = cfg.modelDir;
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
      throw new ConfigError(`transformers model folder ${dir} does not exist; ${ENV_HINT}`);
    }
    if (!fs.existsSync(path.join(dir, 'config.json'))) {
      throw new ConfigError(`transformers model folder ${dir} has no config.json; ${ENV_HINT}`);
    }
    env.allowLocalModels = true;
    env.allowRemoteModels = cfg.allowRemote;
    env.localModelPath = path.dirname(dir) + path.sep;
    modelId = path.basename(dir);
  } else {
    if (!cfg.allowRemote) {
      throw new ConfigError(`EMBEDDING_MODEL=${cfg.model} with EMBEDDING_ALLOW_REMOTE=false and no EMBEDDING_MODEL_DIR; ${ENV_HINT}`);
    }
    env.allowRemoteModels = true;
    env.cacheDir = cfg.cacheDir;
    fs.mkdirSync(cfg.cacheDir, { recursive: true });
    modelId = cfg.model!;
  }
  let extractor: any;
  try {
    extractor = await (tf.pipeline as any)('feature-extraction', modelId, {
      ...(cfg.dtype ? { dtype: cfg.dtype } : {}),
      local_files_only: !cfg.allowRemote,
    });
  } catch (err) {
    const where = cfg.modelDir ? `folder ${cfg.modelDir}` : `model ${modelId} (cache ${cfg.cacheDir})`;
    throw new ConfigError(`could not load transformers ${where}: ${(err as Error).message.split('\n')[0]}; ${ENV_HINT}`);
  }
  async function run(texts: string[]): Promise<number[][]> {
    const out = await extractor(texts, { pooling: cfg.pooling, normalize: cfg.normalize });
    return out.tolist() as number[][];
  }
  const probe = await run(['dimension probe']);
  const embedder: Embedder = {
    name: `transformers:${cfg.model ?? modelId}`,
    dimensions: probe[0].length,
    async embed(texts, kind = 'passage') {
      if (texts.length === 0) return [];
      const prefix = kind === 'query' ? cfg.queryPrefix : cfg.passagePrefix;
      return run(prefix ? texts.map((t) => prefix + t) : texts);
    },
    async close() {
      await extractor.dispose?.();
    },
  };
  return embedder;
}
