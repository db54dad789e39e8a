/**
 * Search configuration from the environment (read through src/config/env.ts).
 */
import { bool, defineSettings, number, oneOf, read } from '../config/env.ts';
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

/** Defaults measured on SciFact (docs/search.md, docs/BENCHMARKS.md); the ranking method behind each is in docs/search.md. */
export const SEARCH_SETTINGS = defineSettings('search', 'Search', {
  SEARCH_BM25_K1: number({ default: 1.2, min: 0, max: 10, description: 'BM25 term-frequency saturation' }),
  SEARCH_BM25_B: number({ default: 0.4, min: 0, max: 1, description: 'BM25 length normalisation' }),
  SEARCH_TITLE_WEIGHT: number({ default: 2, min: 0, max: 10, description: 'weight of a title occurrence relative to a body occurrence' }),
  SEARCH_LEXICAL_WEIGHT: number({ default: 1, min: 0, max: 10, description: 'weight of the normalised lexical score in fusion' }),
  SEARCH_VECTOR_WEIGHT: number({ default: 0.02, min: 0, max: 10, description: 'weight of the normalised vector score in fusion' }),
  SEARCH_VECTOR_MIN_SIMILARITY: number({ default: 0.5, min: -1, max: 1, description: 'cosine similarity a vector-only hit must reach' }),
  SEARCH_LEG_CANDIDATES: number({ default: 100, min: 10, max: 1000, description: 'candidates taken from the lexical leg before fusion' }),
  SEARCH_VECTOR_CANDIDATES: number({ default: 50, min: 10, max: 1000, description: 'documents taken from the vector leg before fusion' }),
  SEARCH_VECTOR_EF_SEARCH: number({ default: 0, min: 0, max: 1000, description: '`hnsw.ef_search` of the k-NN; 0: as many as the chunks it asks for (at least 40)' }),
  SEARCH_INDEX_POLL_MS: number({ default: 5000, min: 0, max: 3_600_000, description: "how often the lexical index polls the catalog's change log (ms); 0: only before queries" }),
  SEARCH_INDEX_SNAPSHOT: bool({
    default: true,
    description:
      'keep the lexical index in `DATA_DIR/search-index.snapshot` and the 8-bit vector copies in `DATA_DIR/search-vectors.snapshot`: a start reads them and catches up from the change log; `false`: build from the database at every start',
  }),
  SEARCH_INDEX_SNAPSHOT_CHANGES: number({ default: 10_000, min: 1, max: 100_000_000, description: 'documents changed since the last snapshot that make a new one' }),
  SEARCH_INDEX_SNAPSHOT_MINUTES: number({ default: 10, min: 0, max: 10_080, description: 'minutes after the last snapshot after which any change makes a new one; one is also written at a clean stop' }),
  SEARCH_VECTOR_BUDGET_MS: number({
    default: 50,
    min: 0,
    max: 600_000,
    description: 'how long the vector leg (query embedding and k-NN) may take before the search answers from the lexical leg alone; 0: no limit',
  }),
  SEARCH_VECTOR_LEG: oneOf(['auto', 'always'] as const, {
    default: 'auto',
    description: '`auto`: the query is embedded only when the vector leg could change which documents fill the page; `always`: for every query',
  }),
  SEARCH_VECTOR_MEMORY_MB: number({
    default: 256,
    min: 0,
    max: 1_000_000,
    description: "memory for the embedder's vectors (8 bits per dimension) that filtered searches rank against; 0: none",
  }),
  SEARCH_QUERY_CACHE_SIZE: number({ default: 1000, min: 0, max: 1_000_000, description: 'query embeddings kept in the LRU cache' }),
  SEARCH_ROW_CACHE_SIZE: number({ default: 20_000, min: 0, max: 10_000_000, description: "document rows, chunk texts and people's names each kept in memory (0: always read)" }),
  SEARCH_BOOSTS: bool({ default: true, description: 'apply the recency and source boosts after fusion' }),
  SEARCH_LEXICAL_ENABLED: bool({ default: true, description: 'run the lexical leg (off only for vector-only measurements)' }),
});

export function loadSearchConfig(env: NodeJS.ProcessEnv = process.env): SearchConfig {
  const S = SEARCH_SETTINGS;
  return {
    k1: read(env, S.SEARCH_BM25_K1),
    b: read(env, S.SEARCH_BM25_B),
    titleWeight: read(env, S.SEARCH_TITLE_WEIGHT),
    lexicalWeight: read(env, S.SEARCH_LEXICAL_WEIGHT),
    vectorWeight: read(env, S.SEARCH_VECTOR_WEIGHT),
    vectorMinSimilarity: read(env, S.SEARCH_VECTOR_MIN_SIMILARITY),
    legCandidates: read(env, S.SEARCH_LEG_CANDIDATES),
    vectorCandidates: read(env, S.SEARCH_VECTOR_CANDIDATES),
    vectorEfSearch: read(env, S.SEARCH_VECTOR_EF_SEARCH),
    vectorScan: 'vector',
    indexPollMs: read(env, S.SEARCH_INDEX_POLL_MS),
    indexSnapshot: read(env, S.SEARCH_INDEX_SNAPSHOT),
    indexSnapshotChanges: read(env, S.SEARCH_INDEX_SNAPSHOT_CHANGES),
    indexSnapshotMinutes: read(env, S.SEARCH_INDEX_SNAPSHOT_MINUTES),
    vectorBudgetMs: read(env, S.SEARCH_VECTOR_BUDGET_MS),
    vectorLeg: read(env, S.SEARCH_VECTOR_LEG),
    vectorMemoryMb: read(env, S.SEARCH_VECTOR_MEMORY_MB),
    queryCacheSize: read(env, S.SEARCH_QUERY_CACHE_SIZE),
    rowCacheSize: read(env, S.SEARCH_ROW_CACHE_SIZE),
    boosts: read(env, S.SEARCH_BOOSTS),
    lexicalEnabled: read(env, S.SEARCH_LEXICAL_ENABLED),
  };
}
