/**
 * Search configuration from the environment. Defaults were measured on SciFact (docs/search.md,
 * docs/BENCHMARKS.md); every key is documented in docs/search.md.
 */
import type { VectorScan } from './vector.ts';

export interface SearchConfig {
  /** BM25 term-frequency saturation. */
  k1: number;
  /** BM25 length normalisation. */
  b: number;
  /** Weight of a title occurrence relative to a body occurrence (BM25F-style field weight). */
  titleWeight: number;
  /** Weight of the normalised lexical score in fusion. */
  lexicalWeight: number;
  /** Weight of the normalised vector score in fusion. */
  vectorWeight: number;
  /** A vector-only hit must reach this cosine similarity (the floor that lets a query find nothing). */
  vectorMinSimilarity: number;
  /** Candidates taken from the lexical leg before fusion. */
  legCandidates: number;
  /**
   * Documents taken from the vector leg (its k-NN asks for twice as many chunks). Fewer than the
   * lexical leg's: the vector weight is small, so vector candidates matter near the top only, and
   * the HNSW scan costs about linearly in them (measured on SciFact, docs/search.md).
   */
  vectorCandidates: number;
  /** hnsw.ef_search of the k-NN; 0 = as many as the chunks it asks for (at least 40). */
  vectorEfSearch: number;
  /**
   * Which HNSW index the k-NN walks (src/search/vector.ts). Always `vector` (the index the embedding
   * store builds); `halfvec` and `bit` are for the benchmarks, which build those indexes themselves
   * (bench/search/run.ts --knn-cost, bench/scifact/run.ts --scan). Not read from the environment.
   */
  vectorScan: VectorScan;
  /** Background poll of the catalog's change log by the lexical index (ms; 0 = only before queries). */
  indexPollMs: number;
  /**
   * Keep the lexical index on disk between starts (index-snapshot.ts, DATA_DIR/search-index.snapshot):
   * a start loads it and catches up from the change log instead of reading every document.
   */
  indexSnapshot: boolean;
  /** Documents changed since the last snapshot that make a new one. */
  indexSnapshotChanges: number;
  /** Minutes after the last snapshot after which any change makes a new one. */
  indexSnapshotMinutes: number;
  /**
   * How long the vector leg may take (ms): the wait for the query embedding and, on a PostgreSQL
   * server, the k-NN (statement_timeout) together. Past it the search answers from the lexical leg
   * alone (legs.vector_skipped = 'budget'); 0 waits as long as they take.
   */
  vectorBudgetMs: number;
  /**
   * When the vector leg runs: `auto` only when it could change which documents fill the page
   * (fusion.ts, lexicalDecidesPage: the query is not embedded when the lexical leg's best k already
   * outrank anything the vector leg could add); `always` for every query.
   */
  vectorLeg: 'auto' | 'always';
  /**
   * Memory for the embedder's vectors, 8 bits per dimension (vector-memory.ts): filtered searches
   * rank the allowed chunks against these copies. 0 = none: the database walks its HNSW graph.
   */
  vectorMemoryMb: number;
  /** Query embeddings kept in the LRU cache. */
  queryCacheSize: number;
  /** Document rows, chunk texts and people's names each kept in memory for answers (0 = always read). */
  rowCacheSize: number;
  boosts: boolean;
  /** The lexical leg can be switched off (vector-only measurements). */
  lexicalEnabled: boolean;
}

function num(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw.trim() === '') return def;
  const n = Number(raw.trim());
  if (!Number.isFinite(n) || n < min || n > max) {
    throw new Error(`${key} must be a number between ${min} and ${max}, got "${raw}"`);
  }
  return n;
}

function oneOf<T extends string>(env: NodeJS.ProcessEnv, key: string, values: readonly T[], def: T): T {
  const raw = env[key]?.trim().toLowerCase();
  if (raw === undefined || raw === '') return def;
  if (!(values as readonly string[]).includes(raw)) throw new Error(`${key} must be one of ${values.join(', ')}, got "${env[key]}"`);
  return raw as T;
}

export function loadSearchConfig(env: NodeJS.ProcessEnv = process.env): SearchConfig {
  return {
    k1: num(env, 'SEARCH_BM25_K1', 1.2, 0, 10),
    b: num(env, 'SEARCH_BM25_B', 0.4, 0, 1),
    titleWeight: num(env, 'SEARCH_TITLE_WEIGHT', 2, 0, 10),
    lexicalWeight: num(env, 'SEARCH_LEXICAL_WEIGHT', 1, 0, 10),
    vectorWeight: num(env, 'SEARCH_VECTOR_WEIGHT', 0.02, 0, 10),
    vectorMinSimilarity: num(env, 'SEARCH_VECTOR_MIN_SIMILARITY', 0.5, -1, 1),
    legCandidates: num(env, 'SEARCH_LEG_CANDIDATES', 100, 10, 1000),
    vectorCandidates: num(env, 'SEARCH_VECTOR_CANDIDATES', 50, 10, 1000),
    vectorEfSearch: num(env, 'SEARCH_VECTOR_EF_SEARCH', 0, 0, 1000),
    vectorScan: 'vector',
    indexPollMs: num(env, 'SEARCH_INDEX_POLL_MS', 5000, 0, 3_600_000),
    indexSnapshot: (env.SEARCH_INDEX_SNAPSHOT ?? 'true').trim().toLowerCase() !== 'false',
    indexSnapshotChanges: num(env, 'SEARCH_INDEX_SNAPSHOT_CHANGES', 10_000, 1, 100_000_000),
    indexSnapshotMinutes: num(env, 'SEARCH_INDEX_SNAPSHOT_MINUTES', 10, 0, 10_080),
    vectorBudgetMs: num(env, 'SEARCH_VECTOR_BUDGET_MS', 50, 0, 600_000),
    vectorLeg: oneOf(env, 'SEARCH_VECTOR_LEG', ['auto', 'always'] as const, 'auto'),
    vectorMemoryMb: num(env, 'SEARCH_VECTOR_MEMORY_MB', 256, 0, 1_000_000),
    queryCacheSize: num(env, 'SEARCH_QUERY_CACHE_SIZE', 1000, 0, 1_000_000),
    rowCacheSize: num(env, 'SEARCH_ROW_CACHE_SIZE', 20_000, 0, 10_000_000),
    boosts: (env.SEARCH_BOOSTS ?? 'true').trim().toLowerCase() !== 'false',
    lexicalEnabled: (env.SEARCH_LEXICAL_ENABLED ?? 'true').trim().toLowerCase() !== 'false',
  };
}
