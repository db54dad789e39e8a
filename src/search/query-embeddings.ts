/**
 * Query embeddings: an LRU cache keyed by the normalised query text, concurrent identical queries
 * sharing one model call, and a wait bounded by the vector budget.
 */
import { LruCache } from './cache.ts';
import type { QueryEmbedder } from './types.ts';

/** What the query-embedding cache keys on and the model embeds: NFC, trimmed, single spaces. */
export function normaliseQuery(q: string): string {
  return q.normalize('NFC').trim().replace(/\s+/g, ' ');
}

export class QueryEmbeddings {
  private readonly cache: LruCache<string, number[]>;
  /**
   * Embeddings being computed, by cache key: concurrent identical queries share one model call,
   * which is dropped only when every search waiting for it has stopped waiting.
   */
  private readonly inFlight = new Map<string, { vector: Promise<number[]>; waiting: number; ac: AbortController }>();
  /** Number of times the embedder was called for a query (cache misses). */
  calls = 0;

  constructor(cacheSize: number) {
    this.cache = new LruCache<string, number[]>(cacheSize);
  }

  /**
   * The query's embedding: from the LRU cache (keyed by normalised text), or one model call. The
   * call's signal aborts when its search stopped waiting, which drops it if no thread took it yet.
   */
  embed(embedder: QueryEmbedder, q: string): { vector: Promise<number[]>; abandon: () => void } {
    const text = normaliseQuery(q);
    const key = `${embedder.name}\u0000${text}`;
    const hit = this.cache.get(key);
    if (hit) return { vector: Promise.resolve(hit), abandon: () => undefined };
    let entry = this.inFlight.get(key);
    if (!entry) {
      this.calls++;
      const ac = new AbortController();
      const vector = embedder
        .embed([text], 'query', { signal: ac.signal })
        .then(([v]) => {
          if (!Array.isArray(v) || v.length === 0) throw new Error('embedder returned no vector');
          this.cache.set(key, v);
          return v;
        })
        .finally(() => this.inFlight.delete(key));
      entry = { vector, waiting: 0, ac };
      this.inFlight.set(key, entry);
    }
    const e = entry;
    e.waiting++;
    let left = false;
    return {
      vector: e.vector,
      abandon: () => {
        if (left) return;
        left = true;
        if (--e.waiting === 0) e.ac.abort();
      },
    };
  }

  /**
   * The query embedding, or undefined when it is not ready within the vector budget: the search
   * then answers from the lexical leg. An embedding a model thread already started still lands in
   * the cache for the next search; one still queued is dropped.
   */
  async withinBudget(embedder: QueryEmbedder, q: string, budgetMs: number): Promise<number[] | undefined> {
    const { vector, abandon } = this.embed(embedder, q);
    vector.catch(() => undefined); // a failure after the budget is reported by the next search
    if (budgetMs <= 0) return vector;
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), budgetMs);
    });
    try {
      const v = await Promise.race([vector, late]);
      if (v === undefined) abandon();
      return v;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Forgets every remembered query vector (after a forget). */
  clear(): void {
    this.cache.clear();
  }
}
