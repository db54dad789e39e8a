/**
 * Catalog rows a search answers with (documents, chunk texts, people's names), kept in memory and
 * dropped when the change log names them (index-sync.ts `onChange`), so a cached row is never older
 * than what the index itself reflects.
 *
 * The one race: a row read by a statement whose snapshot predates a change, stored after that
 * change was applied here. Loads therefore register their keys first; an invalidation of a key
 * being loaded marks it, and the load does not store it.
 */
import { LruCache } from './cache.ts';

export interface Lookup<V> {
  found: Map<string, V>;
  /** Keys to read from the catalog, then hand to `fill` (also when the read failed). */
  missing: string[];
  generation: number;
}

export class RowCache<V> {
  private readonly rows: LruCache<string, V>;
  private generation = 0;
  /** Key -> loads in flight. */
  private readonly loading = new Map<string, number>();
  /** Key being loaded -> generation of its last invalidation. */
  private readonly invalidatedAt = new Map<string, number>();
  /** Keys answered from memory and keys that had to be read, for benchmarks. */
  readonly counters = { hits: 0, misses: 0 };

  constructor(capacity: number) {
    this.rows = new LruCache(capacity);
  }

  lookup(keys: Iterable<string>): Lookup<V> {
    const found = new Map<string, V>();
    const missing = new Set<string>();
    for (const k of keys) {
      if (found.has(k) || missing.has(k)) continue;
      const v = this.rows.get(k);
      if (v !== undefined) found.set(k, v);
      else missing.add(k);
    }
    this.counters.hits += found.size;
    this.counters.misses += missing.size;
    for (const k of missing) this.loading.set(k, (this.loading.get(k) ?? 0) + 1);
    return { found, missing: [...missing], generation: this.generation };
  }

  /** Stores the rows read for `lookup.missing` (absent keys are not stored) unless invalidated meanwhile. */
  fill(lookup: Lookup<V>, read: Map<string, V>): void {
    for (const k of lookup.missing) {
      const v = read.get(k);
      if (v !== undefined && (this.invalidatedAt.get(k) ?? -1) <= lookup.generation) this.rows.set(k, v);
      const n = this.loading.get(k)! - 1;
      if (n > 0) {
        this.loading.set(k, n);
      } else {
        this.loading.delete(k);
        this.invalidatedAt.delete(k);
      }
    }
  }

  invalidate(keys: Iterable<string>): void {
    this.generation++;
    for (const k of keys) {
      this.rows.delete(k);
      if (this.loading.has(k)) this.invalidatedAt.set(k, this.generation);
    }
  }

  clear(): void {
    this.generation++;
    this.rows.clear();
    for (const k of this.loading.keys()) this.invalidatedAt.set(k, this.generation);
  }

  get size(): number {
    return this.rows.size;
  }
}
