/**
 * A search, step by step: the lexical leg (the index brought up to date, the query parsed and
 * planned, the match set), the vector leg where it can matter, fusion and boosts, one hit per
 * conversation when grouping, the rows and snippets of the page, its thread context and facets.
 * The parts it runs on are made once by createSearch (search.ts).
 */
import type { SearchFilters } from '../catalog/filters.ts';
import type { Database } from '../db/types.ts';
import { MemexError } from '../util/errors.ts';
import type { QueryAnalyzer } from './analyzer.ts';
import type { SearchConfig } from './config.ts';
import {
  attachedTo,
  attachmentJoins,
  conversationOf,
  GROUP_POOL_PER_HIT,
  isEmailAttachment,
  onePerConversation,
  threadContext,
  threadPeople,
  type RankedCandidate,
} from './conversations.ts';
import { ATTACHMENT_RANK_FACTOR, boostFactor, fuse, PREFERRED_PHRASE_FACTOR, vectorOnlySlots } from './fusion.ts';
import type { IndexSync } from './index-sync.ts';
import type { DocCondition, IndexFacets, IndexFilter, IndexMatches, LexicalIndex, QueryConstraints } from './index/lexical-index.ts';
import { indexFilter, occurringDocs, personFacet, personsOwning, PERSON_FACET_LIMIT } from './lexical.ts';
import { listNameOf, type ListDirectory } from './lists.ts';
import { hasConditions, parseQuery, type ParsedQuery, type QueryTerm } from './query-parse.ts';
import { analyseQuery, planQuery, QUERY_TERM_BUDGET, type AnalysedQuery, type QueryPlan } from './query-plan.ts';
import { roundScore, toHit, type SearchRows } from './rows.ts';
import { DEFAULT_SNIPPET, makeSnippet, snippetPhrases } from './snippet.ts';
import type { SearchLegs, SearchOptions, SearchRequest, SearchResponse, VectorSkip } from './types.ts';
import type { VectorCandidate } from './vector.ts';
import type { VectorLeg } from './vector-leg.ts';
import { isWholeTerm } from './whole-terms.ts';
import { literalHolders, literalPhrases } from './literal.ts';

/** What a search runs on, made once by createSearch. */
export interface SearchParts {
  db: Database;
  config: SearchConfig;
  sync: IndexSync;
  analyzer: QueryAnalyzer;
  rows: SearchRows;
  vectors: VectorLeg;
  lists: ListDirectory;
  now: () => Date;
  beforeIndexReady?: 'wait' | 'refuse';
  phoneRegion?: string;
  onIndexError?: (err: unknown) => void;
  onLegTiming?: (leg: 'lexical' | 'vector', ms: number, skipped?: VectorSkip) => void;
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

export function indexStateOf(sync: IndexSync): IndexState {
  const { ready, building, done, total, documents } = sync.state;
  // Between builds: the index's own size, read in full.
  return building ? { ready, done, total } : { ready, done: documents, total: documents };
}

/**
 * The query as written; when its phrases, exclusions or operators leave nothing, the answer stays empty and
 * `relaxed` offers what its words read softly find (query-parse.ts: every token a word, quotations preferred),
 * so a strict query that matches nothing says so and still shows what matches its words.
 */
export async function runSearch(p: SearchParts, req: SearchRequest, opts: SearchOptions = {}): Promise<SearchResponse> {
  const result = await strictOrRelaxed(p, req);
  // The owner is in nearly every message and no contact (issue 35): never in the person facet.
  const owner = opts.ownerIds ? new Set(await opts.ownerIds()) : new Set<string>();
  if (owner.size > 0) result.facets.person = result.facets.person.filter((f) => !owner.has(String(f.value)));
  return result;
}

async function strictOrRelaxed(p: SearchParts, req: SearchRequest): Promise<SearchResponse> {
  const strict = await searchParsed(p, req, parseQuery(req.q));
  if (strict.total > 0 || !hasConditions(parseQuery(req.q))) return strict;
  const soft = await searchParsed(p, { ...req, context_window: 0 }, parseQuery(req.q, { soft: true }));
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

async function searchParsed(p: SearchParts, req: SearchRequest, parsed: ParsedQuery): Promise<SearchResponse> {
  refuseBeforeIndexReady(p);
  const legs: SearchLegs = { lexical: true, vector: false };
  const grouped = req.group === 'thread';
  // Conversations: more candidates, so k threads can be found when one thread holds many of the best.
  const pool = Math.max(p.config.legCandidates, req.k * (grouped ? GROUP_POOL_PER_HIT : 1));

  const lexical = await lexicalLeg(p, req, parsed, legs, pool);
  if (lexical === null) return nothingCanMatch(req, legs);
  const { index, analysed, plan, matches } = lexical;

  // The vector leg embeds the words and phrases only, with the same filters.
  const vreq: SearchRequest = { ...req, q: plan.text, filters: plan.filters };
  // Documents only the vector leg finds join only where the lexical leg is thin, never an exact query (fusion.ts).
  const slots = p.config.lexicalEnabled ? vectorOnlySlots(plan, matches.docs.length, req.k) : req.k;
  const vector = p.vectors.notNeeded(req, plan, matches.candidates, slots, legs)
    ? []
    : await p.vectors.run(vreq, legs, { index, filter: lexical.filter }, slots > 0);
  const passing = vectorCandidatesJoining(p, index, lexical, vector, slots);
  const counted = index.facetsOf(matches, passing.map((v) => v.doc_id), PERSON_FACET_LIMIT);

  // Quoted phrases are checked as written over the whole pool (literal.ts): one stemmed deeper down may be the phrase itself.
  const depth = grouped || literalPhrases(parsed).length > 0 ? pool : Math.max(req.k * 3, 30);
  const { scored, threadOfDoc } = await rankCandidates(p, req, lexical, vector, passing, depth);
  // The messages of the attachments among the candidates (all of them when grouping: an attachment
  // joins its message's conversation).
  const parents = await attachedTo(
    p.db,
    (grouped ? scored : scored.slice(0, req.k)).filter((x) => x.attachment).map((x) => x.c.doc_id),
    threadOfDoc,
  );
  const ranked = (grouped ? onePerConversation(scored, parents) : scored).slice(0, req.k);

  const rows = await p.rows.read(
    ranked.map(({ c }) => c.doc_id),
    ranked.flatMap(({ c }) => (c.chunk_id === null ? [] : [c.chunk_id])),
    counted.people.map((x) => x.personId),
  );
  const threadIds = grouped ? [...new Set(ranked.flatMap((x) => (x.threadId === null ? [] : [x.threadId])))] : [];
  const threads = grouped ? index.threadsOf(matches, passing.map((v) => v.doc_id), threadIds, await attachmentJoins(p.db, index, matches, passing)) : null;
  const people = await threadPeople(p.db, threadIds);
  const terms = plan.lexemes.map((l) => l.term).filter((t) => !isWholeTerm(t));
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
          lexical: c.lexical === null ? null : roundScore(c.lexical),
          vector: c.vector === null ? null : roundScore(c.vector),
          fused: roundScore(c.fused),
        },
        sources: c.sources,
        ...(attachment ? { attached_to: parents.get(c.doc_id) ?? null } : {}),
        ...(grouped && threadId !== null
          ? { conversation: conversationOf(index, threadId, threads?.counts.get(threadId) ?? 0, people.get(threadId)) }
          : {}),
      }),
    ];
  });

  const context = await threadContext(index, vreq, hits, p.rows, { boosts: p.config.boosts, now: p.now });
  return {
    query: req.q,
    k: req.k,
    hits: [...hits, ...context],
    total: counted.total,
    ...(threads ? { group: 'thread' as const, total_groups: threads.groups } : {}),
    facets: await facetsOf(p, counted, rows.names),
    legs,
    // The query's lexemes with their idf (ask weighs the words of its sentences with them); not part of the route's answer.
    terms: matches.terms.filter(({ term }) => !isWholeTerm(term)).map(({ term, idf }) => ({ term, idf })),
  };
}

function refuseBeforeIndexReady(p: SearchParts): void {
  if (p.beforeIndexReady === 'refuse' && !p.sync.state.ready) {
    // Refused, but the build is started if nothing did (the one at start failed, say).
    p.sync.ready().catch((err) => p.onIndexError?.(err));
    throw new IndexNotReadyError(indexStateOf(p.sync));
  }
}

/** The lexical leg's outcome: the plan, the index filter, the constraints that held and the match set. */
interface LexicalResult {
  index: LexicalIndex;
  analysed: AnalysedQuery;
  plan: QueryPlan;
  filter: IndexFilter;
  constraints: QueryConstraints;
  matches: IndexMatches;
}

/**
 * The lexical leg first (the index brought up to date, the query parsed and its lexemes, and the
 * people a person filter names, in parallel): its candidates decide whether the vector leg can matter.
 * Null when the query's operators contradict each other or the filters.
 */
async function lexicalLeg(p: SearchParts, req: SearchRequest, parsed: ParsedQuery, legs: SearchLegs, pool: number): Promise<LexicalResult | null> {
  const started = performance.now();
  const [index, analysed, persons] = await Promise.all([
    p.sync.current(),
    analyseQuery(parsed, req.q, p.analyzer, p.db, p.phoneRegion),
    req.filters.person === undefined ? [] : personsOwning(p.db, req.filters.person),
  ]);
  // The request's filters and the query's operators, both applied (AND).
  const plan = planQuery(analysed, req.filters, index);
  p.onLegTiming?.('lexical', performance.now() - started);
  if (plan.dropped > 0) {
    legs.lexical_terms_dropped = plan.dropped;
    legs.lexical_note = `the query has ${QUERY_TERM_BUDGET + plan.dropped} distinct words; the lexical leg ranks the ${QUERY_TERM_BUDGET} most informative and left out the ${plan.dropped} most common`;
  }
  if (plan.never) {
    legs.lexical = false;
    legs.vector_skipped = 'no_text';
    legs.vector_error = 'the query\'s operators contradict each other or the filters: nothing can match';
    return null;
  }
  const filter = indexFilter(plan.filters, persons);
  // Only with date bounds: an index filter with any key set (null included) is a filter, and an unfiltered
  // query would list every passage for the in-memory k-NN instead of walking the graph.
  const occurring = await occurringDocs(p.db, plan.filters);
  if (occurring) filter.occurringDocs = occurring;
  // Vector-only measurements switch the lexical leg off; the lexemes still mark the snippets.
  const queried = p.config.lexicalEnabled ? plan.lexemes : [];
  if (queried.length === 0 && !plan.browse) legs.lexical = false;
  // Identifiers, paths, hashes and addresses match as a whole first: their whole terms (whole-terms.ts) and
  // the phrase of their lexemes; when no document holds the whole terms, as the phrase alone; when none holds
  // that either, by their parts (issue 48: `irq_domain_set_info` was four words ORed, `accepted_at` "accepted").
  const levels = identifierLevels(plan);
  let constraints = plan.constraints;
  let matches = index.match(queried, filter, pool, { constraints: required(constraints, levels[0] ?? []), browse: plan.browse });
  if (levels.length > 0 && queried.length > 0) {
    let level = 0;
    while (matches.docs.length === 0 && ++level < levels.length) {
      matches = index.match(queried, filter, pool, { constraints: required(constraints, levels[level]), browse: plan.browse });
    }
    if (level < levels.length) constraints = required(constraints, levels[level]);
    else matches = index.match(queried, filter, pool, { constraints, browse: plan.browse });
    if (level > 0) {
      legs.lexical_note =
        level < levels.length
          ? 'no document holds the identifiers as written; matched as the phrases of their parts'
          : 'no document holds the identifiers as written; matched by their parts';
    }
  }
  return { index, analysed, plan, filter, constraints, matches };
}

/** What an identifier query requires, strictest first: whole terms and phrases, then the phrases alone. */
function identifierLevels(plan: QueryPlan): DocCondition[][] {
  const levels: DocCondition[][] = [];
  if (plan.wholes.length > 0) levels.push([...plan.wholes, ...plan.identifiers]);
  if (plan.identifiers.length > 0) levels.push(plan.identifiers);
  return levels;
}

/** The query's constraints with these conditions required too (each a group of its own). */
function required(c: QueryConstraints, conditions: DocCondition[]): QueryConstraints {
  return conditions.length === 0 ? c : { all: [...c.all, ...conditions.map((x) => [x])], none: c.none };
}

/** The answer when the operators contradict each other or the filters. */
function nothingCanMatch(req: SearchRequest, legs: SearchLegs): SearchResponse {
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

/**
 * The vector leg's documents that join the answer: similar enough, holding the query's constraints,
 * and of those the lexical leg did not find, the `slots` nearest (issue 48).
 */
function vectorCandidatesJoining(p: SearchParts, index: LexicalIndex, lexical: LexicalResult, vector: VectorCandidate[], slots: number): VectorCandidate[] {
  const { constraints, matches } = lexical;
  let passing = vector.filter((v) => v.similarity >= p.config.vectorMinSimilarity);
  if ((constraints.all.length > 0 || constraints.none.length > 0) && passing.length > 0) {
    // A phrase, an exclusion or a person operator holds for the vector leg's documents too.
    const admitted = index.admits(constraints, passing.map((v) => v.doc_id));
    passing = passing.filter((v) => admitted.has(v.doc_id));
  }
  // The lexical candidates' own similarities always count; of the others, the `slots` nearest (issue 48).
  const lexicalIds = new Set(matches.candidates.map((c) => c.doc_id));
  let left = slots;
  return passing.filter((v) => lexicalIds.has(v.doc_id) || left-- > 0);
}

/**
 * Both legs fused, boosted and sorted. Boosts come before the final sort, over candidates beyond k
 * too so a boosted one can enter. The index holds the boost attributes; a vector hit it does not
 * know yet (written since the catch-up) is read from the catalog. An email attachment ranks below
 * its message for the same match (ATTACHMENT_RANK_FACTOR): whether a candidate is one is in its row
 * (metadata).
 */
async function rankCandidates(
  p: SearchParts,
  req: SearchRequest,
  lexical: LexicalResult,
  vector: VectorCandidate[],
  passing: VectorCandidate[],
  /** How many fused candidates are ranked. */
  depth: number,
): Promise<{ scored: RankedCandidate[]; threadOfDoc: (id: string) => string | null }> {
  const { index, plan, matches } = lexical;
  const { config } = p;
  const fused = fuse(matches.candidates, passing, config).slice(0, depth);
  const candidateRows = (await p.rows.read(fused.map((c) => c.doc_id), [], [])).docs;
  // Quotations in prose are preferences: a document holding one ranks higher, the others stay.
  const favoured = plan.preferred.length > 0 ? index.admits({ all: [plan.preferred], none: [] }, fused.map((c) => c.doc_id)) : null;
  // Quoted phrases as written rank above their stems only (literal.ts); the lexical candidates are the ones read.
  const phrases = literalPhrases(lexical.analysed.parsed);
  const literal = phrases.length > 0 ? await literalHolders(p.db, fused.filter((c) => c.lexical !== null).map((c) => c.doc_id), phrases) : null;
  const asWritten = (id: string) => (literal === null || literal.has(id) ? 1 : 0);
  const t = p.now();
  const scored = fused
    .flatMap((c): RankedCandidate[] => {
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
      return [{ c, score: roundScore(c.fused * factor), attachment, threadId: a ? a.threadId : row.thread_id, ts }];
    })
    // Operators alone (nothing to rank by): the newest first, as a mail client lists them.
    .sort((x, y) =>
      plan.browse && vector.length === 0
        ? y.ts - x.ts || x.c.doc_id.localeCompare(y.c.doc_id)
        : asWritten(y.c.doc_id) - asWritten(x.c.doc_id) || y.score - x.score || y.c.fused - x.c.fused || x.c.doc_id.localeCompare(y.c.doc_id),
    );
  const threadOfDoc = (id: string) => index.attributes(id)?.threadId ?? candidateRows.get(id)?.thread_id ?? null;
  return { scored, threadOfDoc };
}

/** The facets of the answer. Lists are no people (issue 40): the person facet leaves them out, the list facet counts them. */
async function facetsOf(p: SearchParts, counted: IndexFacets, names: Map<string, string | null>): Promise<SearchResponse['facets']> {
  const listOf = await p.lists.get();
  const byList = new Map<string, number>();
  for (const c of counted.people) {
    const id = listOf.get(c.personId);
    // A list's address and its bounce address are one list; a message linked to both counts once at least.
    if (id !== undefined) byList.set(id, Math.max(byList.get(id) ?? 0, c.count));
  }
  return {
    source_type: counted.sourceTypes,
    has_attachments: counted.hasAttachments,
    person: personFacet(counted.people.filter((c) => !listOf.has(c.personId)), names),
    list: [...byList]
      .map(([value, count]) => ({ value, display_name: listNameOf(value), count }))
      .sort((a, b) => b.count - a.count || (a.value < b.value ? -1 : 1)),
    tag: counted.tags,
  };
}

/**
 * Every document the query matches in the lexical index (the request's filters and the query's operators
 * applied), for tagging by query and saved searches' counts (Search.matchDocIds).
 */
export async function matchDocIds(
  p: SearchParts,
  q: string,
  opts: { filters?: SearchFilters; every?: boolean; within?: string[] } = {},
): Promise<string[]> {
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
    p.sync.current(),
    analyseQuery(parsed, q, p.analyzer, p.db, p.phoneRegion),
    filters.person === undefined ? [] : personsOwning(p.db, filters.person),
  ]);
  const plan = planQuery(analysed, filters, index);
  if (plan.never) return [];
  if (plan.lexemes.length === 0 && !plan.browse) return [];
  const filter: IndexFilter = { ...indexFilter(plan.filters, persons), ...(opts.within ? { docIds: opts.within } : {}) };
  const m = index.match(plan.lexemes, filter, 1, { constraints: plan.constraints, browse: plan.browse || plan.lexemes.length === 0 });
  return index.docIdsOf(m);
}
