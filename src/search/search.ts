/**
 * The search service: both legs with the same filters, fusion, boosts, documents (best chunk each)
 * with snippets and facets, and thread context. `createSearch` is what the gateway wires; pass the
 * embedding provider as `embedder` to enable the vector leg.
 */
import fs from 'node:fs';
import type { Database } from '../db/types.ts';
import { answerQuestion, loadAskOptions, type AskOptions, type AskResponse, type PassageText } from './ask.ts';
import { LruCache } from './cache.ts';
import { loadSearchConfig, type SearchConfig } from './config.ts';
import { generalContext, type ContextFilter, type GeneralContext } from './context.ts';
import {
  ATTACHMENT_RANK_FACTOR,
  boostFactor,
  fuse,
  lexicalDecidesPage,
  PREFERRED_PHRASE_FACTOR,
  vectorOnlySlots,
  type FusedCandidate,
} from './fusion.ts';
import { attachedTo, isEmailAttachment, threadPeople } from './grouping.ts';
import { QueryAnalyzer } from './analyzer.ts';
import { IndexSync, type SnapshotEvent } from './index-sync.ts';
import type { DocCondition, IndexFilter, IndexMatches, LexicalIndex, QueryConstraints } from './index/lexical-index.ts';
import { messagesOfAttachments } from '../catalog/attachments.ts';
import { ListDirectory, listNameOf } from './lists.ts';
import { indexFilter, occurringDocs, personFacet, personsOwning, PERSON_FACET_LIMIT } from './lexical.ts';
import { RowCache } from './row-cache.ts';
import { DEFAULT_SNIPPET, makeSnippet, snippetPhrases } from './snippet.ts';
import type { Attachment, Conversation, QueryEmbedder, SearchHit, SearchLegs, SearchRequest, SearchResponse, VectorSkip } from './types.ts';
import { vectorCandidates, vectorsExist, VectorTimeoutError, type VectorCandidate } from './vector.ts';
import { MEMORY_MAX_PASSAGES, VectorMemory, type VectorSnapshotEvent } from './vector-memory.ts';
import { hasConditions, parseQuery, type ParsedQuery, type QueryTerm } from './query-parse.ts';
import type { SearchFilters } from '../catalog/filters.ts';
import { analyseQuery, planQuery, QUERY_TERM_BUDGET } from './query-plan.ts';
import { MemexError } from '../util/errors.ts';

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

export interface IndexState {
  /** Searches are answered from a complete index. */
  ready: boolean;
  /** Documents read so far by the build in progress, of `total`; between builds both are the index's documents. */
  done: number;
  total: number;
}

/** A search that arrived before the index was complete, with `beforeIndexReady: 'refuse'`. */
export class IndexNotReadyError extends MemexError {
  constructor(readonly state: IndexState) {
    const pct = state.total > 0 ? Math.floor((100 * state.done) / state.total) : 0;
    super(`preparing the search index (${pct} %); try again in a moment`, 'INDEX_NOT_READY', 503);
  }
}

interface HitsMisses {
  hits: number;
  misses: number;
}

export interface Search {
  readonly config: SearchConfig;
  search(req: SearchRequest): Promise<SearchResponse>;
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

/** A document as answers show it; `text_head` is the snippet of a document read without a chunk. */
interface DocRow {
  doc_id: string;
  title: string | null;
  canonical_uri: string | null;
  source_type: string;
  thread_id: string | null;
  content_timestamp: Date | string;
  people: unknown[];
  has_attachments: boolean;
  attachment_count: number;
  metadata: Record<string, unknown>;
  text_head: string;
}

/** group=thread: lexical candidates per hit asked for (k = 50 looks at the best 500 documents). */
const GROUP_POOL_PER_HIT = 10;

/**
 * The vector budget of a search whose vector leg may add documents (the lexical leg is thin): at least this
 * long, so that a model busy with an import does not decide which documents answer (issue 48).
 */
export const THIN_VECTOR_WAIT_MS = 2000;

/** Unthreaded mail documents of a match set looked up as attachments for total_groups at most (attachmentJoins). */
const GROUP_JOIN_MAX = 5000;
const EMAIL_SOURCE_TYPES = new Set(['email', 'email_local']);

/** Leading characters of a document's text shown when no chunk was matched (thread context). */
const TEXT_HEAD = 400;

function attachmentsOf(metadata: Record<string, unknown>): Attachment[] {
  const list = metadata?.attachments;
  if (!Array.isArray(list)) return [];
  return list
    .filter((a) => a && typeof a === 'object')
    .map((a: Record<string, any>) => ({
      index: typeof a.index === 'number' ? a.index : null,
      kind: typeof a.kind === 'string' ? a.kind : null,
      role: typeof a.role === 'string' ? a.role : null,
      mime_type: typeof a.mime_type === 'string' ? a.mime_type : null,
      filename: typeof a.filename === 'string' ? a.filename : null,
      size_bytes: typeof a.size_bytes === 'number' ? a.size_bytes : null,
    }));
}

function toHit(row: DocRow, snippet: string, extra: Partial<SearchHit>): SearchHit {
  const { attachments: _a, ...metadata } = row.metadata ?? {};
  return {
    document_id: row.doc_id,
    chunk_id: null,
    title: row.title,
    url: row.canonical_uri,
    snippet: snippet.replace(/\s+/g, ' ').trim(),
    score: 0,
    scores: { lexical: null, vector: null, fused: 0 },
    sources: [],
    source_type: row.source_type,
    thread_id: row.thread_id,
    content_timestamp: new Date(row.content_timestamp).toISOString(),
    people: Array.isArray(row.people) ? row.people : [],
    has_attachments: row.has_attachments,
    attachment_count: row.attachment_count,
    attachments: attachmentsOf(row.metadata),
    metadata,
    context: false,
    ...extra,
  };
}

const round = (x: number) => Math.round(x * 10000) / 10000;

/** What the query-embedding cache keys on and the model embeds: NFC, trimmed, single spaces. */
export function normaliseQuery(q: string): string {
  return q.normalize('NFC').trim().replace(/\s+/g, ' ');
}

/** The query's constraints with its identifiers required as a whole (each a group of its own). */
function wholeIdentifiers(c: QueryConstraints, identifiers: DocCondition[]): QueryConstraints {
  return identifiers.length === 0 ? c : { all: [...c.all, ...identifiers.map((x) => [x])], none: c.none };
}

export function createSearch(deps: SearchDeps): Search {
  const { db } = deps;
  const config: SearchConfig = { ...loadSearchConfig(), ...(deps.config ?? {}) };
  const given = deps.embedder;
  /** The query embedder now: null without one, undefined while its model threads start. */
  const embedderNow: () => QueryEmbedder | null | undefined = typeof given === 'function' ? given : () => given ?? null;
  const now = deps.now ?? (() => new Date());
  const cache = new LruCache<string, number[]>(config.queryCacheSize);
  let queryEmbeddings = 0;

  /**
   * Embeddings being computed, by cache key: concurrent identical queries share one model call,
   * which is dropped only when every search waiting for it has stopped waiting.
   */
  const inFlight = new Map<string, { vector: Promise<number[]>; waiting: number; ac: AbortController }>();

  /**
   * The query's embedding: from the LRU cache (keyed by normalised text), or one model call. The
   * call's signal aborts when its search stopped waiting, which drops it if no thread took it yet.
   */
  function embedQuery(embedder: QueryEmbedder, q: string): { vector: Promise<number[]>; abandon: () => void } {
    const text = normaliseQuery(q);
    const key = `${embedder.name}\u0000${text}`;
    const hit = cache.get(key);
    if (hit) return { vector: Promise.resolve(hit), abandon: () => undefined };
    let entry = inFlight.get(key);
    if (!entry) {
      queryEmbeddings++;
      const ac = new AbortController();
      const vector = embedder
        .embed([text], 'query', { signal: ac.signal })
        .then(([v]) => {
          if (!Array.isArray(v) || v.length === 0) throw new Error('embedder returned no vector');
          cache.set(key, v);
          return v;
        })
        .finally(() => inFlight.delete(key));
      entry = { vector, waiting: 0, ac };
      inFlight.set(key, entry);
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
  async function embedWithinBudget(embedder: QueryEmbedder, q: string, budgetMs: number): Promise<number[] | undefined> {
    const { vector, abandon } = embedQuery(embedder, q);
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

  /**
   * The embedder's vectors in memory, for filtered k-NN (vector-memory.ts); made with the embedder's
   * first vector leg, loaded once vectors exist.
   */
  let memory: VectorMemory | null = null;
  const memoryOf = (embedder: QueryEmbedder) =>
    config.vectorMemoryMb > 0
      ? (memory ??= new VectorMemory(db, embedder.name, {
          maxBytes: config.vectorMemoryMb * 2 ** 20,
          snapshot:
            deps.vectorSnapshotFile && config.indexSnapshot ? { file: deps.vectorSnapshotFile, onEvent: deps.onVectorSnapshot } : undefined,
        }))
      : null;
  const warmMemory = () => memory?.warm().catch((err) => deps.onIndexError?.(err));

  /** Whether the model has any vector yet; once it has, it is not asked again. */
  let modelHasVectors = false;
  async function hasVectors(model: string): Promise<boolean> {
    if (!modelHasVectors) {
      modelHasVectors = await vectorsExist(db, model);
      if (modelHasVectors) void warmMemory();
    }
    return modelHasVectors;
  }

  // Rows answers are made of, in memory, dropped as the change log names them (row-cache.ts).
  const docRows = new RowCache<DocRow>(config.rowCacheSize);
  const chunkTexts = new RowCache<string>(config.rowCacheSize);
  const personNames = new RowCache<string>(config.rowCacheSize);

  /**
   * Document rows, chunk texts (the first DEFAULT_SNIPPET.maxChars characters) and people's display
   * names, from memory, with one statement for whatever is not there.
   */
  async function readRows(docIds: string[], chunkIds: string[], personIds: string[]) {
    const docs = docRows.lookup(docIds);
    const chunks = chunkTexts.lookup(chunkIds);
    const names = personNames.lookup(personIds);
    const read = { docs: new Map<string, DocRow>(), chunks: new Map<string, string>(), names: new Map<string, string>() };
    try {
      if (docs.missing.length + chunks.missing.length + names.missing.length > 0) {
        const r = await db.query<{ docs: DocRow[]; chunks: [string, string][]; names: [string, string][] }>(
          `SELECT
             (SELECT coalesce(json_agg(x), '[]') FROM (
                SELECT d.doc_id, d.title, d.canonical_uri, d.source_type, d.thread_id, d.content_timestamp, d.people,
                       d.has_attachments, d.attachment_count, d.metadata, left(d.text, ${TEXT_HEAD}) AS text_head
                  FROM documents d WHERE d.doc_id = ANY($1::uuid[])) x) AS docs,
             (SELECT coalesce(json_agg(json_build_array(chunk_id, left(text, $3))), '[]')
                FROM chunks WHERE chunk_id = ANY($2::uuid[])) AS chunks,
             (SELECT coalesce(json_agg(json_build_array(person_id, display_name)), '[]')
                FROM people WHERE person_id = ANY($4::uuid[])) AS names`,
          [docs.missing, chunks.missing, DEFAULT_SNIPPET.maxChars, names.missing],
          { name: 'memex_search_rows' },
        );
        const row = r.rows[0];
        for (const d of row.docs) read.docs.set(d.doc_id, d);
        read.chunks = new Map(row.chunks);
        read.names = new Map(row.names);
      }
    } finally {
      docRows.fill(docs, read.docs);
      chunkTexts.fill(chunks, read.chunks);
      personNames.fill(names, read.names);
    }
    for (const [k, v] of read.docs) docs.found.set(k, v);
    for (const [k, v] of read.chunks) chunks.found.set(k, v);
    for (const [k, v] of read.names) names.found.set(k, v);
    return { docs: docs.found, chunks: chunks.found, names: names.found };
  }

  // Lists are no people (issue 40): the person facet leaves them out, the list facet counts them.
  const lists = new ListDirectory(db);
  async function peopleAndListFacets(counts: { personId: string; count: number }[], names: Map<string, string | null>) {
    const listOf = await lists.get();
    const byList = new Map<string, number>();
    for (const c of counts) {
      const id = listOf.get(c.personId);
      // A list's address and its bounce address are one list; a message linked to both counts once at least.
      if (id !== undefined) byList.set(id, Math.max(byList.get(id) ?? 0, c.count));
    }
    return {
      person: personFacet(counts.filter((c) => !listOf.has(c.personId)), names),
      list: [...byList]
        .map(([value, count]) => ({ value, display_name: listNameOf(value), count }))
        .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1)),
    };
  }

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
                if (e.kind === 'written') void memory?.saveSnapshot();
              },
            }
          : undefined,
      onChange: (change) => {
        if (change.all) {
          docRows.clear();
          personNames.clear();
        } else {
          docRows.invalidate(change.docIds);
          personNames.invalidate(change.personIds);
        }
      },
    },
  );
  const analyzer = new QueryAnalyzer(db);

  /** Neighbours of the hits in their thread: ±window positions in time order, once each. */
  async function threadContext(index: LexicalIndex, req: SearchRequest, hits: SearchHit[]): Promise<SearchHit[]> {
    const threadId = req.filters.thread_id;
    if (!threadId || req.context_window <= 0 || hits.length === 0) return [];
    const order = index.threadOrder(threadId);
    const pos = new Map(order.map((id, i) => [id, i]));
    const hitIds = new Set(hits.map((h) => h.document_id));
    const ctx = new Map<string, Set<string>>();
    for (const h of hits) {
      const i = pos.get(h.document_id);
      if (i === undefined) continue;
      for (let j = Math.max(0, i - req.context_window); j <= Math.min(order.length - 1, i + req.context_window); j++) {
        const id = order[j];
        if (hitIds.has(id)) continue;
        if (!ctx.has(id)) ctx.set(id, new Set());
        ctx.get(id)!.add(h.document_id);
      }
    }
    const ids = [...ctx.keys()].sort((a, b) => pos.get(a)! - pos.get(b)!);
    const rows = (await readRows(ids, [], [])).docs;
    const t = now();
    return ids.flatMap((id) => {
      const row = rows.get(id);
      if (!row) return [];
      const score = round(0.1 * (config.boosts ? boostFactor(row, t) : 1));
      return [
        toHit(row, row.text_head, {
          score,
          scores: { lexical: null, vector: null, fused: 0.1 },
          sources: ['context'],
          context: true,
          context_for: [...ctx.get(id)!],
        }),
      ];
    });
  }

  /**
   * Whole chunk texts (ask quotes sentences from anywhere in a chunk, not only its first characters)
   * and where each starts in its document's text, keyed `${document_id}/${chunk_id}`.
   */
  async function passageTexts(hits: { document_id: string; chunk_id: string }[]): Promise<Map<string, PassageText>> {
    const r = await db.query<{ doc_id: string; chunk_id: string; text: string; start_char: number }>(
      `SELECT DISTINCT ON (cd.doc_id, cd.chunk_id) cd.doc_id::text AS doc_id, cd.chunk_id::text AS chunk_id, c.text, cd.start_char
         FROM chunk_documents cd JOIN chunks c ON c.chunk_id = cd.chunk_id
        WHERE cd.doc_id = ANY($1::uuid[]) AND cd.chunk_id = ANY($2::uuid[])
        ORDER BY cd.doc_id, cd.chunk_id, cd.ordinal`,
      [hits.map((h) => h.document_id), hits.map((h) => h.chunk_id)],
    );
    return new Map(r.rows.map((x) => [`${x.doc_id}/${x.chunk_id}`, { text: x.text, start: x.start_char }]));
  }

  /**
   * The vector leg: the query embedding within the budget, then the k-NN. Returns no candidates,
   * and says why in `legs`, when it cannot or need not run.
   */
  async function vectorLeg(
    req: SearchRequest,
    legs: SearchLegs,
    lexical: { index: LexicalIndex; filter: IndexFilter },
    /** The vector leg may add documents (the lexical leg is thin): its budget is THIN_VECTOR_WAIT_MS at least. */
    mayAdd: boolean,
  ): Promise<VectorCandidate[]> {
    // What the vector leg may add decides which documents answer: a busy model must not make the same query
    // answer 1 document on one call and 51 on the next, so it is waited for longer (issue 48).
    const budgetMs = config.vectorBudgetMs > 0 && mayAdd ? Math.max(config.vectorBudgetMs, THIN_VECTOR_WAIT_MS) : config.vectorBudgetMs;
    if (normaliseQuery(req.q) === '') {
      deps.onLegTiming?.('vector', 0, 'no_text');
      legs.vector_error = 'the query has no words to embed, only operators';
      legs.vector_skipped = 'no_text';
      return [];
    }
    const skip = (why: VectorSkip, message: string): VectorCandidate[] => {
      legs.vector_error = message;
      legs.vector_skipped = why;
      return [];
    };
    const embedder = embedderNow();
    if (embedder === undefined) {
      deps.onLegTiming?.('vector', 0, 'model_starting');
      return skip('model_starting', 'the embedding model is starting; answered from the lexical leg');
    }
    if (!embedder) {
      deps.onLegTiming?.('vector', 0, 'no_embedder');
      return skip('no_embedder', 'no embedder configured');
    }
    legs.vector_model = embedder.name;
    const memory = memoryOf(embedder);
    const started = performance.now();
    try {
      // Nothing embedded yet (the first minutes of an import): no query embedding, no k-NN.
      if (!(await hasVectors(embedder.name))) return skip('no_vectors', `no vectors stored yet for model ${embedder.name}`);
      const qv = await embedWithinBudget(embedder, req.q, budgetMs);
      if (!qv) return skip('budget', `query embedding not ready within ${budgetMs} ms; answered from the lexical leg`);
      // A filter: the lexical index lists the chunks it allows and, unless they are very many,
      // they are ranked exactly against the vectors in memory instead of a graph walk.
      const allowed = memory ? lexical.index.allowedPassages(lexical.filter, MEMORY_MAX_PASSAGES) : null;
      if (allowed) {
        const found = await memory!.nearest(qv, allowed, Math.max(config.vectorCandidates, req.k));
        legs.vector = found.length > 0;
        if (found.length === 0) legs.vector_error = `no vectors stored for model ${embedder.name} match`;
        return found;
      }
      // What is left of the budget bounds the k-NN (PostgreSQL server; PGlite cannot interrupt it).
      const left = budgetMs > 0 ? budgetMs - (performance.now() - started) : undefined;
      if (left !== undefined && left < 1) {
        return skip('budget', `query embedding took the whole ${budgetMs} ms budget; answered from the lexical leg`);
      }
      let found: VectorCandidate[];
      try {
        found = await vectorCandidates(db, {
          model: embedder.name,
          queryVector: qv,
          k: Math.max(config.vectorCandidates, req.k),
          filters: req.filters,
          timeoutMs: left,
          efSearch: config.vectorEfSearch || undefined,
          scan: config.vectorScan,
        });
      } catch (err) {
        if (!(err instanceof VectorTimeoutError)) throw err;
        return skip('budget', `vector search not done within the ${budgetMs} ms budget; answered from the lexical leg`);
      }
      legs.vector = found.length > 0;
      if (found.length === 0) legs.vector_error = `no vectors stored for model ${embedder.name} match`;
      return found;
    } catch (err) {
      legs.vector_error = err instanceof Error ? err.message.slice(0, 200) : 'embedding failed';
      return [];
    } finally {
      deps.onLegTiming?.('vector', performance.now() - started, legs.vector_skipped);
    }
  }

  /**
   * total_groups counts an email attachment with its message's conversation, not as one of its own (issue 48):
   * the unthreaded mail documents of the match set, those that are attachments, and where their messages are.
   * Past GROUP_JOIN_MAX such documents they are counted as before (one statement stays small).
   */
  async function attachmentJoins(index: LexicalIndex, matches: IndexMatches, passing: VectorCandidate[]): Promise<Map<string, string>> {
    const ids = index.unthreadedOf(matches, passing.map((v) => v.doc_id), EMAIL_SOURCE_TYPES, GROUP_JOIN_MAX);
    const joins = new Map<string, string>();
    if (ids === null || ids.length === 0) return joins;
    for (const [id, m] of await messagesOfAttachments(db, ids)) joins.set(id, index.attributes(m.doc_id)?.threadId ?? `doc:${m.doc_id}`);
    return joins;
  }

  function indexState(): IndexState {
    const { ready, building, done, total, documents } = sync.state;
    // Between builds: the index's own size, read in full.
    return building ? { ready, done, total } : { ready, done: documents, total: documents };
  }

  /**
   * The query as written; when its phrases, exclusions or operators leave nothing, the answer stays empty and
   * `relaxed` offers what its words read softly find (query-parse.ts: every token a word, quotations preferred),
   * so a strict query that matches nothing says so and still shows what matches its words.
   */
  async function search(req: SearchRequest): Promise<SearchResponse> {
    const strict = await searchParsed(req, parseQuery(req.q));
    if (strict.total > 0 || !hasConditions(parseQuery(req.q))) return strict;
    const soft = await searchParsed({ ...req, context_window: 0 }, parseQuery(req.q, { soft: true }));
    if (soft.total === 0) return strict;
    return {
      ...strict,
      relaxed: {
        note: 'no document matches the query as written (its phrases, exclusions and operators); these match its words',
        total: soft.total,
        hits: soft.hits,
      },
    };
  }

  async function searchParsed(req: SearchRequest, parsed: ParsedQuery): Promise<SearchResponse> {
    if (deps.beforeIndexReady === 'refuse' && !sync.state.ready) {
      // Refused, but the build is started if nothing did (the one at start failed, say).
      sync.ready().catch((err) => deps.onIndexError?.(err));
      throw new IndexNotReadyError(indexState());
    }
    const legs: SearchLegs = { lexical: true, vector: false };
    const grouped = req.group === 'thread';
    // Conversations: more candidates, so k threads can be found when one thread holds many of the best.
    const pool = Math.max(config.legCandidates, req.k * (grouped ? GROUP_POOL_PER_HIT : 1));

    // The lexical leg first (the index brought up to date, the query parsed and its lexemes, and the
    // people a person filter names, in parallel): its candidates decide whether the vector leg can matter.
    const started = performance.now();
    const [index, analysed, persons] = await Promise.all([
      sync.current(),
      analyseQuery(parsed, req.q, analyzer, db, deps.phoneRegion),
      req.filters.person === undefined ? [] : personsOwning(db, req.filters.person),
    ]);
    // The request's filters and the query's operators, both applied (AND).
    const plan = planQuery(analysed, req.filters, index);
    deps.onLegTiming?.('lexical', performance.now() - started);
    if (plan.dropped > 0) {
      legs.lexical_terms_dropped = plan.dropped;
      legs.lexical_note = `the query has ${QUERY_TERM_BUDGET + plan.dropped} distinct words; the lexical leg ranks the ${QUERY_TERM_BUDGET} most informative and left out the ${plan.dropped} most common`;
    }
    if (plan.never) {
      legs.lexical = false;
      legs.vector_skipped = 'no_text';
      legs.vector_error = 'the query\'s operators contradict each other or the filters: nothing can match';
      return {
        query: req.q,
        k: req.k,
        hits: [],
        total: 0,
        ...(req.group === 'thread' ? { group: 'thread' as const, total_groups: 0 } : {}),
        facets: { source_type: [], has_attachments: [], person: [], list: [], tag: [] },
        legs,
        terms: [],
      };
    }
    const f = plan.filters;
    const lexemes = plan.lexemes;
    const filter = indexFilter(f, persons);
    // Only with date bounds: an index filter with any key set (null included) is a filter, and an unfiltered
    // query would list every passage for the in-memory k-NN instead of walking the graph.
    const occurring = await occurringDocs(db, f);
    if (occurring) filter.occurringDocs = occurring;
    // Vector-only measurements switch the lexical leg off; the lexemes still mark the snippets.
    const queried = config.lexicalEnabled ? lexemes : [];
    if (queried.length === 0 && !plan.browse) legs.lexical = false;
    // Identifiers, paths, hashes and addresses match as a whole first (the phrase of their parts); when no
    // document holds them so, by their parts (issue 48: `irq_domain_set_info` was four words ORed).
    let constraints = plan.constraints;
    let matches = index.match(queried, filter, pool, { constraints: wholeIdentifiers(constraints, plan.identifiers), browse: plan.browse });
    if (plan.identifiers.length > 0 && queried.length > 0) {
      if (matches.docs.length > 0) constraints = wholeIdentifiers(constraints, plan.identifiers);
      else {
        matches = index.match(queried, filter, pool, { constraints, browse: plan.browse });
        legs.lexical_note = 'no document holds the identifiers as written; matched by their parts';
      }
    }
    const constrained = constraints.all.length > 0 || constraints.none.length > 0;
    // The vector leg embeds the words and phrases only, with the same filters.
    const vreq: SearchRequest = { ...req, q: plan.text, filters: f };
    // Documents only the vector leg finds join only where the lexical leg is thin, never an exact query (fusion.ts).
    const slots = config.lexicalEnabled ? vectorOnlySlots(plan, matches.docs.length, req.k) : req.k;

    let vector: VectorCandidate[];
    const embedder = embedderNow();
    if (embedder && plan.text !== '' && config.vectorLeg === 'auto' && config.lexicalEnabled && slots === 0 && (plan.exact || plan.operators)) {
      // The terms decide: the vector leg could only reorder what holds them, and a busy model would make the
      // order depend on the moment.
      legs.vector_model = embedder.name;
      legs.vector_skipped = 'exact_terms';
      legs.vector_error = "the query's terms are exact (an identifier, a hash, an address, a phrase or operators) and match: the lexical leg answers it";
      deps.onLegTiming?.('vector', 0, 'exact_terms');
      vector = [];
    } else if (
      embedder &&
      plan.text !== '' &&
      config.vectorLeg === 'auto' &&
      config.lexicalEnabled &&
      lexicalDecidesPage(matches.candidates, req.k, config, config.boosts)
    ) {
      legs.vector_model = embedder.name;
      legs.vector_skipped = 'lexical_sufficient';
      legs.vector_error = `the lexical leg's best ${req.k} outrank anything the vector leg could add; not run`;
      deps.onLegTiming?.('vector', 0, 'lexical_sufficient');
      vector = [];
    } else {
      vector = await vectorLeg(vreq, legs, { index, filter }, slots > 0);
    }
    let passing = vector.filter((v) => v.similarity >= config.vectorMinSimilarity);
    if (constrained && passing.length > 0) {
      // A phrase, an exclusion or a person operator holds for the vector leg's documents too.
      const admitted = index.admits(constraints, passing.map((v) => v.doc_id));
      passing = passing.filter((v) => admitted.has(v.doc_id));
    }
    {
      // The lexical candidates' own similarities always count; of the others, the `slots` nearest (issue 48).
      const lexicalIds = new Set(matches.candidates.map((c) => c.doc_id));
      let left = slots;
      passing = passing.filter((v) => lexicalIds.has(v.doc_id) || left-- > 0);
    }
    const counted = index.facetsOf(matches, passing.map((v) => v.doc_id), PERSON_FACET_LIMIT);

    // Boosts before the final sort, over candidates beyond k too so a boosted one can enter. The
    // index holds the boost attributes; a vector hit it does not know yet (written since the
    // catch-up) is read from the catalog. An email attachment ranks below its message for the same
    // match (ATTACHMENT_RANK_FACTOR): whether a candidate is one is in its row (metadata).
    const fused: FusedCandidate[] = fuse(matches.candidates, passing, config).slice(0, grouped ? pool : Math.max(req.k * 3, 30));
    const candidateRows = (await readRows(fused.map((c) => c.doc_id), [], [])).docs;
    // Quotations in prose are preferences: a document holding one ranks higher, the others stay.
    const favoured = plan.preferred.length > 0 ? index.admits({ all: [plan.preferred], none: [] }, fused.map((c) => c.doc_id)) : null;
    const t = now();
    const scored = fused
      .flatMap((c) => {
        const a = index.attributes(c.doc_id);
        const row = candidateRows.get(c.doc_id);
        const boostRow = a ? { content_timestamp: a.contentTimestamp, has_attachments: a.hasAttachments, source_type: a.sourceType } : row;
        if (!boostRow || !row) return [];
        const attachment = isEmailAttachment(row);
        const factor =
          (config.boosts ? boostFactor(boostRow, t) : 1) *
          (attachment ? ATTACHMENT_RANK_FACTOR : 1) *
          (favoured?.has(c.doc_id) ? PREFERRED_PHRASE_FACTOR : 1);
        const ts = new Date(boostRow.content_timestamp).getTime();
        return [{ c, score: round(c.fused * factor), attachment, threadId: a ? a.threadId : row.thread_id, ts }];
      })
      // Operators alone (nothing to rank by): the newest first, as a mail client lists them.
      .sort((x, y) =>
        plan.browse && vector.length === 0
          ? y.ts - x.ts || x.c.doc_id.localeCompare(y.c.doc_id)
          : y.score - x.score || y.c.fused - x.c.fused || x.c.doc_id.localeCompare(y.c.doc_id),
      );
    // The messages of the attachments among the candidates (all of them when grouping: an attachment
    // joins its message's conversation).
    const threadOfDoc = (id: string) => index.attributes(id)?.threadId ?? candidateRows.get(id)?.thread_id ?? null;
    const parents = await attachedTo(
      db,
      (grouped ? scored : scored.slice(0, req.k)).filter((x) => x.attachment).map((x) => x.c.doc_id),
      threadOfDoc,
    );
    let ranked = scored;
    if (grouped) {
      const seen = new Set<string>();
      ranked = scored.filter((x) => {
        const thread = x.attachment ? (parents.get(x.c.doc_id)?.thread_id ?? null) : x.threadId;
        const key = thread === null ? `doc:${x.c.doc_id}` : `thread:${thread}`;
        if (seen.has(key)) return false;
        seen.add(key);
        x.threadId = thread;
        return true;
      });
    }
    ranked = ranked.slice(0, req.k);
    const rows = await readRows(
      ranked.map(({ c }) => c.doc_id),
      ranked.flatMap(({ c }) => (c.chunk_id === null ? [] : [c.chunk_id])),
      counted.people.map((p) => p.personId),
    );
    const threadIds = grouped ? [...new Set(ranked.flatMap((x) => (x.threadId === null ? [] : [x.threadId])))] : [];
    const threads = grouped ? index.threadsOf(matches, passing.map((v) => v.doc_id), threadIds, await attachmentJoins(index, matches, passing)) : null;
    const people = await threadPeople(db, threadIds);
    const conversation = (threadId: string): Conversation => {
      const order = index.threadOrder(threadId);
      const first = order.length > 0 ? index.attributes(order[0])!.contentTimestamp.toISOString() : '';
      const last = order.length > 0 ? index.attributes(order[order.length - 1])!.contentTimestamp.toISOString() : '';
      const p = people.get(threadId);
      return {
        thread_id: threadId,
        matching: threads?.counts.get(threadId) ?? 0,
        messages: order.length,
        participants: p?.people ?? [],
        participant_count: p?.count ?? 0,
        ...(p && p.lists.length > 0 ? { lists: p.lists } : {}),
        first,
        last,
      };
    };
    const terms = lexemes.map((l) => l.term);
    const phrases = snippetPhrases(parsed, analysed.positions);
    const hits = ranked.flatMap(({ c, score, attachment, threadId }) => {
      const row = rows.docs.get(c.doc_id);
      if (!row) return [];
      const chunk = c.chunk_id === null ? undefined : rows.chunks.get(c.chunk_id);
      return [
        toHit(row, chunk === undefined ? row.text_head : makeSnippet(chunk, terms, DEFAULT_SNIPPET, phrases), {
          chunk_id: c.chunk_id,
          score,
          scores: {
            lexical: c.lexical === null ? null : round(c.lexical),
            vector: c.vector === null ? null : round(c.vector),
            fused: round(c.fused),
          },
          sources: c.sources,
          ...(attachment ? { attached_to: parents.get(c.doc_id) ?? null } : {}),
          ...(grouped && threadId !== null ? { conversation: conversation(threadId) } : {}),
        }),
      ];
    });

    const context = await threadContext(index, vreq, hits);
    return {
      query: req.q,
      k: req.k,
      hits: [...hits, ...context],
      total: counted.total,
      ...(threads ? { group: 'thread' as const, total_groups: threads.groups } : {}),
      facets: {
        source_type: counted.sourceTypes,
        has_attachments: counted.hasAttachments,
        ...(await peopleAndListFacets(counted.people, rows.names)),
        tag: counted.tags,
      },
      legs,
      // The query's lexemes with their idf (ask weighs the words of its sentences with them); not part of the route's answer.
      terms: matches.terms.map(({ term, idf }) => ({ term, idf })),
    };
  }

  async function matchDocIds(q: string, opts: { filters?: SearchFilters; every?: boolean; within?: string[] } = {}): Promise<string[]> {
    if (opts.within !== undefined && opts.within.length === 0) return [];
    const filters = opts.filters ?? {};
    let parsed = parseQuery(q, { soft: false });
    if (opts.every) {
      // Each word required: as a one-word phrase it is a condition (its lexeme), still ranked; no prefix expansion.
      parsed = {
        ...parsed,
        prefix: null,
        groups: parsed.groups.map((g) => g.map((t): QueryTerm => (t.kind === 'word' ? { kind: 'phrase', text: t.text } : t))),
      };
    }
    const [index, analysed, persons] = await Promise.all([
      sync.current(),
      analyseQuery(parsed, q, analyzer, db, deps.phoneRegion),
      filters.person === undefined ? [] : personsOwning(db, filters.person),
    ]);
    const plan = planQuery(analysed, filters, index);
    if (plan.never) return [];
    if (plan.lexemes.length === 0 && !plan.browse) return [];
    const filter: IndexFilter = { ...indexFilter(plan.filters, persons), ...(opts.within ? { docIds: opts.within } : {}) };
    const m = index.match(plan.lexemes, filter, 1, { constraints: plan.constraints, browse: plan.browse || plan.lexemes.length === 0 });
    return index.docIdsOf(m);
  }

  return {
    config,
    search,
    matchDocIds,
    ask: (query, k) => answerQuestion(search, query, k, { ...(deps.ask ?? loadAskOptions()), passages: passageTexts }),
    generalContext: (filter) => generalContext(db, filter),
    refreshIndex: async (opts) => {
      const index = opts?.rebuild ? await sync.rebuild() : await sync.current();
      const { documents, passages, terms } = index.size;
      return { documents, passages, terms };
    },
    indexState,
    close: async () => {
      await sync.close();
      await memory?.saveSnapshot();
    },
    dropCaches: () => {
      // The snapshot on disk may hold what was erased: deleted now, written again soon without it.
      sync.discardSnapshot();
      docRows.clear();
      chunkTexts.clear();
      personNames.clear();
      cache.clear();
      // Reloaded in the background from what is left (the copies on disk go too).
      memory?.clear();
      if (!memory && deps.vectorSnapshotFile) fs.rmSync(deps.vectorSnapshotFile, { force: true });
      if (modelHasVectors) void warmMemory();
    },
    memoryStats: () => ({
      documents: { ...docRows.counters },
      chunks: { ...chunkTexts.counters },
      names: { ...personNames.counters },
      lexemes: { hits: analyzer.counters.remembered, misses: analyzer.counters.asked },
      polls: sync.counters.polls,
      vectors: memory?.size.vectors ?? 0,
    }),
    get queryEmbeddings() {
      return queryEmbeddings;
    },
  };
}

