/**
 * The search service: both legs with the same filters, fusion, boosts, documents (best chunk each)
 * with snippets and facets, and thread context. `createSearch` is what the gateway wires; pass the
 * embedding provider as `embedder` to enable the vector leg. It makes the parts once (the index and
 * its sync, the query embeddings, the rows in memory, the vector leg); pipeline.ts runs a search on them.
 */
import fs from 'node:fs';
import type { SearchFilters } from '../catalog/filters.ts';
import type { Database } from '../db/types.ts';
import { QueryAnalyzer } from './analyzer.ts';
import { answerQuestion, loadAskOptions, type AskOptions, type AskResponse } from './ask.ts';
import { loadSearchConfig, type SearchConfig } from './config.ts';
import { generalContext, type ContextFilter, type GeneralContext } from './context.ts';
import { IndexSync, type SnapshotEvent } from './index-sync.ts';
import { ListDirectory } from './lists.ts';
import { indexStateOf, matchDocIds, runSearch, type IndexState, type SearchParts } from './pipeline.ts';
import { QueryEmbeddings } from './query-embeddings.ts';
import { SearchRows } from './rows.ts';
import type { QueryEmbedder, SearchOptions, SearchRequest, SearchResponse, VectorSkip } from './types.ts';
import { VectorLeg } from './vector-leg.ts';
import type { VectorSnapshotEvent } from './vector-memory.ts';

export { IndexNotReadyError, type IndexState } from './pipeline.ts';
export { normaliseQuery } from './query-embeddings.ts';
export { THIN_VECTOR_WAIT_MS } from './vector-leg.ts';

export interface SearchDeps {
  db: Database;
  config?: Partial<SearchConfig>;
  /**
   * Query embedder; absent -> lexical only. Must be the provider whose vectors are stored. A
   * function gives the embedder once it is ready and undefined while its model threads start
   * (`memex serve` starts them in the background): searches meanwhile answer from the lexical leg.
   */
  embedder?: QueryEmbedder | null | (() => QueryEmbedder | undefined);
  /**
   * A search before the first index build is complete waits for it ('wait', default), or is
   * refused with IndexNotReadyError ('refuse', `memex serve`: a 503 while GET /v1/readyz says why).
   */
  beforeIndexReady?: 'wait' | 'refuse';
  ask?: AskOptions;
  /** Clock for recency boosts (tests). */
  now?: () => Date;
  /** Errors of the index's background poll (the next query retries and reports its own). */
  onIndexError?: (err: unknown) => void;
  /**
   * Called once per leg per search with its wall time (metrics). The lexical figure covers its
   * inputs (index catch-up, query lexemes); the vector figure covers the query embedding and the
   * k-NN, and names why the leg was skipped when it was.
   */
  onLegTiming?: (leg: 'lexical' | 'vector', ms: number, skipped?: VectorSkip) => void;
  /**
   * Where the lexical index is kept between starts (index-snapshot.ts; `memex serve`:
   * DATA_DIR/search-index.snapshot unless SEARCH_INDEX_SNAPSHOT=false); none: built at every start.
   */
  indexSnapshotFile?: string;
  /** What happened to the snapshot (loaded, rejected and why, written). */
  onSnapshot?: (event: SnapshotEvent) => void;
  /**
   * Nobody is waiting for an answer (`memex serve`: the reader signal, src/db/readers.ts): background
   * snapshot writes wait for it (index-sync.ts, SNAPSHOT_MAX_DEFER_MS). Absent: always quiet.
   */
  quiet?: () => boolean;
  /** How long a due snapshot write may wait for quiet (tests); default SNAPSHOT_MAX_DEFER_MS. */
  snapshotMaxDeferMs?: number;
  /**
   * Where the 8-bit vector copies are kept between starts (vector-memory.ts; `memex serve`:
   * DATA_DIR/search-vectors.snapshot, with the index's snapshot and under the same switch).
   */
  vectorSnapshotFile?: string;
  onVectorSnapshot?: (event: VectorSnapshotEvent) => void;
  /** Region for phone numbers an operator names (`from:+1 555…`), as the person filter's. */
  phoneRegion?: string;
}

interface HitsMisses {
  hits: number;
  misses: number;
}

export interface Search {
  readonly config: SearchConfig;
  search(req: SearchRequest, opts?: SearchOptions): Promise<SearchResponse>;
  ask(query: string, k: number): Promise<AskResponse>;
  generalContext(filter?: ContextFilter): Promise<GeneralContext>;
  /** Whether searches are answered from a complete index yet, and how far its build is. */
  indexState(): IndexState;
  /**
   * Every document the query matches in the lexical index (the request's filters and the query's operators
   * applied), for tagging by query and saved searches' counts. `every: true` requires every word (as a
   * tagging rule reads a query: notmuch's and Gmail's filters do); otherwise the match set a search counts
   * (any word). `within`: only among these documents (a rule looking at new ones).
   */
  matchDocIds(q: string, opts?: { filters?: SearchFilters; every?: boolean; within?: string[] }): Promise<string[]>;
  /** Brings the lexical index up to date with the catalog now (it also does so before every query). */
  refreshIndex(opts?: { rebuild?: boolean }): Promise<{ documents: number; passages: number; terms: number }>;
  /** Stops the index's background poll; writes its snapshot if it changed since the last one. */
  close(): Promise<void>;
  /** Drops every row, text and query vector kept in memory (after a forget: nothing erased may linger). */
  dropCaches(): void;
  /** Number of times the embedder was called for a query (cache misses). */
  readonly queryEmbeddings: number;
  /** How often answers came from memory rather than the catalog (benchmarks). */
  memoryStats(): {
    documents: HitsMisses;
    chunks: HitsMisses;
    names: HitsMisses;
    /** Queries whose lexemes were all remembered / queries that asked PostgreSQL. */
    lexemes: HitsMisses;
    /** Change-log polls made (concurrent searches share them). */
    polls: number;
    /** Vectors held in memory for filtered k-NN (vector-memory.ts). */
    vectors: number;
  };
}

export function createSearch(deps: SearchDeps): Search {
  const { db } = deps;
  const config: SearchConfig = { ...loadSearchConfig(), ...(deps.config ?? {}) };
  const given = deps.embedder;
  /** The query embedder now: null without one, undefined while its model threads start. */
  const embedderNow: () => QueryEmbedder | null | undefined = typeof given === 'function' ? given : () => given ?? null;
  const embeddings = new QueryEmbeddings(config.queryCacheSize);
  const vectors = new VectorLeg({
    db,
    config,
    embeddings,
    embedderNow,
    onLegTiming: deps.onLegTiming,
    onError: deps.onIndexError,
    snapshot: deps.vectorSnapshotFile && config.indexSnapshot ? { file: deps.vectorSnapshotFile, onEvent: deps.onVectorSnapshot } : undefined,
  });
  // Rows answers are made of, in memory, dropped as the change log names them (row-cache.ts).
  const rows = new SearchRows(db, config.rowCacheSize);
  const sync = new IndexSync(
    db,
    { k1: config.k1, b: config.b, titleWeight: config.titleWeight },
    {
      pollIntervalMs: config.indexPollMs,
      onError: deps.onIndexError,
      snapshot:
        deps.indexSnapshotFile && config.indexSnapshot
          ? {
              file: deps.indexSnapshotFile,
              everyChanges: config.indexSnapshotChanges,
              everyMs: config.indexSnapshotMinutes * 60_000,
              quiet: deps.quiet,
              maxDeferMs: deps.snapshotMaxDeferMs,
              onEvent: (e) => {
                deps.onSnapshot?.(e);
                // The vector copies are written with the index (only when they changed).
                if (e.kind === 'written') void vectors.memory?.saveSnapshot();
              },
            }
          : undefined,
      onChange: (change) => rows.changed(change),
    },
  );
  const analyzer = new QueryAnalyzer(db);
  const parts: SearchParts = {
    db,
    config,
    sync,
    analyzer,
    rows,
    vectors,
    // Lists are no people (issue 40): the person facet leaves them out, the list facet counts them.
    lists: new ListDirectory(db),
    now: deps.now ?? (() => new Date()),
    beforeIndexReady: deps.beforeIndexReady,
    phoneRegion: deps.phoneRegion,
    onIndexError: deps.onIndexError,
    onLegTiming: deps.onLegTiming,
  };
  const search = (req: SearchRequest, opts?: SearchOptions) => runSearch(parts, req, opts);

  return {
    config,
    search,
    matchDocIds: (q, opts) => matchDocIds(parts, q, opts),
    ask: (query, k) => answerQuestion(search, query, k, { ...(deps.ask ?? loadAskOptions()), passages: (hits) => rows.passageTexts(hits) }),
    generalContext: (filter) => generalContext(db, filter),
    refreshIndex: async (opts) => {
      const index = opts?.rebuild ? await sync.rebuild() : await sync.current();
      const { documents, passages, terms } = index.size;
      return { documents, passages, terms };
    },
    indexState: () => indexStateOf(sync),
    close: async () => {
      await sync.close();
      await vectors.memory?.saveSnapshot();
    },
    dropCaches: () => {
      // The snapshot on disk may hold what was erased: deleted now, written again soon without it.
      sync.discardSnapshot();
      rows.clear();
      embeddings.clear();
      // Reloaded in the background from what is left (the copies on disk go too).
      vectors.memory?.clear();
      if (!vectors.memory && deps.vectorSnapshotFile) fs.rmSync(deps.vectorSnapshotFile, { force: true });
      vectors.warm();
    },
    memoryStats: () => ({
      documents: { ...rows.docRows.counters },
      chunks: { ...rows.chunkTexts.counters },
      names: { ...rows.personNames.counters },
      lexemes: { hits: analyzer.counters.remembered, misses: analyzer.counters.asked },
      polls: sync.counters.polls,
      vectors: vectors.memory?.size.vectors ?? 0,
    }),
    get queryEmbeddings() {
      return embeddings.calls;
    },
  };
}
