/**
 * The search service: both legs with the same filters, fusion, boosts, documents (best chunk each)
 * with snippets and facets, and thread context. `createSearch` is what the gateway wires; pass the
 * embedding provider as `embedder` to enable the vector leg.
 */
import type { Database } from '../db/types.ts';
import { answerQuestion, loadAskOptions, type AskOptions, type AskResponse } from './ask.ts';
import { LruCache } from './cache.ts';
import { loadSearchConfig, type SearchConfig } from './config.ts';
import { generalContext, type GeneralContext } from './context.ts';
import { boostFactor, fuse, type FusedCandidate } from './fusion.ts';
import { lexicalSearch, queryTerms, summariseDocs, type MatchSetSummary } from './lexical.ts';
import { StatsKeeper, type LexicalStats } from './stats.ts';
import type { Attachment, QueryEmbedder, SearchHit, SearchLegs, SearchRequest, SearchResponse } from './types.ts';
import { vectorCandidates, type VectorCandidate } from './vector.ts';

export interface SearchDeps {
  db: Database;
  config?: Partial<SearchConfig>;
  /** Query embedder; absent -> lexical only. Must be the provider whose vectors are stored. */
  embedder?: QueryEmbedder | null;
  ask?: AskOptions;
  /** Clock for recency boosts (tests). */
  now?: () => Date;
}

export interface Search {
  readonly config: SearchConfig;
  search(req: SearchRequest): Promise<SearchResponse>;
  ask(query: string, k: number): Promise<AskResponse>;
  generalContext(): Promise<GeneralContext>;
  /** Rebuilds BM25 term statistics now (after a bulk load). */
  refreshStats(): Promise<LexicalStats>;
  /** Number of times the embedder was called for a query (cache misses). */
  readonly queryEmbeddings: number;
}

const SNIPPET_OPTIONS = 'StartSel=«, StopSel=», MaxWords=45, MinWords=20, MaxFragments=2, FragmentDelimiter=" … "';

interface DocRow {
  doc_id: string;
  chunk_id: string | null;
  title: string | null;
  canonical_uri: string | null;
  source_type: string;
  thread_id: string | null;
  content_timestamp: Date;
  people: unknown[];
  has_attachments: boolean;
  attachment_count: number;
  metadata: Record<string, unknown>;
  snippet: string | null;
}

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

function toHit(row: DocRow, extra: Partial<SearchHit>): SearchHit {
  const { attachments: _a, ...metadata } = row.metadata ?? {};
  return {
    document_id: row.doc_id,
    chunk_id: row.chunk_id,
    title: row.title,
    url: row.canonical_uri,
    snippet: (row.snippet ?? '').replace(/\s+/g, ' ').trim(),
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

export function createSearch(deps: SearchDeps): Search {
  const { db } = deps;
  const config: SearchConfig = { ...loadSearchConfig(), ...(deps.config ?? {}) };
  const embedder = deps.embedder ?? null;
  const now = deps.now ?? (() => new Date());
  const stats = new StatsKeeper(db, config.statsCheckIntervalMs);
  const cache = new LruCache<string, number[]>(config.queryCacheSize);
  let queryEmbeddings = 0;

  async function embedQuery(q: string): Promise<number[]> {
    const key = `${embedder!.name}\u0000${q}`;
    const hit = cache.get(key);
    if (hit) return hit;
    queryEmbeddings++;
    const [v] = await embedder!.embed([q], 'query');
    if (!Array.isArray(v) || v.length === 0) throw new Error('embedder returned no vector');
    cache.set(key, v);
    return v;
  }

  /** Document rows (with the chunk snippet, matched terms marked) in the order of `items`. */
  async function loadDocs(
    items: { doc_id: string; chunk_id: string | null }[],
    q: string,
    withSnippets = true,
  ): Promise<Map<string, DocRow>> {
    if (items.length === 0) return new Map();
    // Snippets (ts_headline) cost most here: they are only made for the documents returned.
    const snippet = withSnippets
      ? `CASE WHEN c.chunk_id IS NULL THEN left(d.text, 400)
              ELSE ts_headline('english', left(c.text, 4000), plainto_tsquery('english', $3), $4) END`
      : `NULL::text`;
    const r = await db.query<DocRow>(
      `SELECT d.doc_id, i.chunk_id, d.title, d.canonical_uri, d.source_type, d.thread_id, d.content_timestamp,
              d.people, d.has_attachments, d.attachment_count, d.metadata, ${snippet} AS snippet
         FROM unnest($1::uuid[], $2::uuid[]) AS i(doc_id, chunk_id)
         JOIN documents d ON d.doc_id = i.doc_id
         LEFT JOIN chunks c ON c.chunk_id = i.chunk_id AND ${withSnippets ? 'true' : 'false'}`,
      withSnippets
        ? [items.map((i) => i.doc_id), items.map((i) => i.chunk_id), q, SNIPPET_OPTIONS]
        : [items.map((i) => i.doc_id), items.map((i) => i.chunk_id)],
    );
    return new Map(r.rows.map((row) => [row.doc_id, row]));
  }

  /** Neighbours of the hits in their thread: ±window positions in time order, once each. */
  async function threadContext(req: SearchRequest, hits: SearchHit[]): Promise<SearchHit[]> {
    const threadId = req.filters.thread_id;
    if (!threadId || req.context_window <= 0 || hits.length === 0) return [];
    const thread = await db.query<{ doc_id: string }>(
      `SELECT doc_id FROM documents WHERE thread_id = $1 AND is_active_version ORDER BY content_timestamp, doc_id`,
      [threadId],
    );
    const order = thread.rows.map((r) => r.doc_id);
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
    const rows = await loadDocs(ids.map((id) => ({ doc_id: id, chunk_id: null })), req.q);
    const t = now();
    return ids.flatMap((id) => {
      const row = rows.get(id);
      if (!row) return [];
      const score = round(0.1 * (config.boosts ? boostFactor(row, t) : 1));
      return [
        toHit(row, {
          chunk_id: null,
          score,
          scores: { lexical: null, vector: null, fused: 0.1 },
          sources: ['context'],
          context: true,
          context_for: [...ctx.get(id)!],
        }),
      ];
    });
  }

  async function chunkTexts(ids: string[]): Promise<Map<string, string>> {
    const r = await db.query<{ chunk_id: string; text: string }>(
      'SELECT chunk_id, text FROM chunks WHERE chunk_id = ANY($1::uuid[])',
      [ids],
    );
    return new Map(r.rows.map((x) => [x.chunk_id, x.text]));
  }

  async function search(req: SearchRequest): Promise<SearchResponse> {
    const legs: SearchLegs = { lexical: true, vector: false };
    const pool = Math.max(config.legCandidates, req.k);

    let vector: VectorCandidate[] = [];
    if (embedder) {
      legs.vector_model = embedder.name;
      try {
        const qv = await embedQuery(req.q);
        vector = await vectorCandidates(db, { model: embedder.name, queryVector: qv, k: pool, filters: req.filters });
        legs.vector = vector.length > 0;
        if (vector.length === 0) legs.vector_error = `no vectors stored for model ${embedder.name} match`;
      } catch (err) {
        legs.vector_error = err instanceof Error ? err.message.slice(0, 200) : 'embedding failed';
        vector = [];
      }
    } else {
      legs.vector_error = 'no embedder configured';
    }
    const passing = vector.filter((v) => v.similarity >= config.vectorMinSimilarity);

    const st = await stats.current();
    const terms = config.lexicalEnabled ? await queryTerms(db, req.q, st) : [];
    const lexical = await lexicalSearch(db, config, st, terms, req.filters, pool, passing.map((v) => v.doc_id));
    const summary: MatchSetSummary = lexical;
    if (terms.length === 0) legs.lexical = false;

    let fused: FusedCandidate[] = fuse(lexical.candidates, passing, config);
    // Boosts before the final sort; boost candidates beyond k too so a boosted one can enter.
    fused = fused.slice(0, Math.max(req.k * 3, 30));
    const rows = await loadDocs(fused, req.q, false);
    const t = now();
    const ranked = fused
      .flatMap((c) => {
        const row = rows.get(c.doc_id);
        if (!row) return [];
        const boosted = c.fused * (config.boosts ? boostFactor(row, t) : 1);
        return [
          toHit(row, {
            chunk_id: c.chunk_id,
            score: round(boosted),
            scores: {
              lexical: c.lexical === null ? null : round(c.lexical),
              vector: c.vector === null ? null : round(c.vector),
              fused: round(c.fused),
            },
            sources: c.sources,
          }),
        ];
      })
      .sort((a, b) => b.score - a.score || b.scores.fused - a.scores.fused || a.document_id.localeCompare(b.document_id))
      .slice(0, req.k);
    const snippets = await loadDocs(ranked.map((h) => ({ doc_id: h.document_id, chunk_id: h.chunk_id })), req.q, true);
    const hits = ranked.map((h) => ({
      ...h,
      snippet: (snippets.get(h.document_id)?.snippet ?? '').replace(/\s+/g, ' ').trim(),
    }));

    const context = await threadContext(req, hits);
    return {
      query: req.q,
      k: req.k,
      hits: [...hits, ...context],
      total: summary.total,
      facets: summary.facets,
      legs,
    };
  }

  return {
    config,
    search,
    ask: (query, k) => answerQuestion(search, query, k, { ...(deps.ask ?? loadAskOptions()), chunkTexts }),
    generalContext: () => generalContext(db),
    refreshStats: () => stats.refresh(),
    get queryEmbeddings() {
      return queryEmbeddings;
    },
  };
}

export { summariseDocs };
