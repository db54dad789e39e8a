/**
 * Deterministic feature hashing (words and word bigrams, signed, L2-normalised). FOR TESTS ONLY:
 * fast and stable, with just enough lexical overlap signal for plumbing tests; no semantics.
 */
import crypto from 'node:crypto';
import { l2normalize, type Embedder } from '../types.ts';

function bucket(token: string, dims: number): [number, number] {
  const h = crypto.createHash('md5').update(token).digest();
  return [h.readUInt32LE(0) % dims, h[4] & 1 ? 1 : -1];
}

export function hashVector(text: string, dims: number): number[] {
  const v = new Array<number>(dims).fill(0);
  const words = text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];
  for (let i = 0; i < words.length; i++) {
    const [b, s] = bucket(words[i], dims);
    v[b] += s;
    if (i > 0) {
      const [b2, s2] = bucket(`${words[i - 1]} ${words[i]}`, dims);
      v[b2] += 0.5 * s2;
    }
  }
  return l2normalize(v);
}

export function createHashEmbedder(dims = 256): Embedder {
  return {
    name: `hash-${dims}`,
    dimensions: dims,
    async embed(texts) {
      return texts.map((t) => hashVector(t, dims));
    },
  };
}
