/**
 * The vector leg of a search: whether it runs at all (the lexical leg may already decide the page),
 * the query embedding within the budget, then the k-NN, exact in memory over the passages a filter
 * allows (vector-memory.ts) or on the database's graph.
 */
import type { Database } from '../db/types.ts';
import type { SearchConfig } from './config.ts';
import { lexicalDecidesPage } from './fusion.ts';
import type { IndexFilter, IndexHit, LexicalIndex } from './index/lexical-index.ts';
import { normaliseQuery, type QueryEmbeddings } from './query-embeddings.ts';
import type { QueryPlan } from './query-plan.ts';
import type { QueryEmbedder, SearchLegs, SearchRequest, VectorSkip } from './types.ts';
import { vectorCandidates, vectorsExist, VectorTimeoutError, type VectorCandidate } from './vector.ts';
import { MEMORY_MAX_PASSAGES, VectorMemory, type VectorSnapshotEvent } from './vector-memory.ts';

/**
 * The vector budget of a search whose vector leg may add documents (the lexical leg is thin): at least this
 * long, so that a model busy with an import does not decide which documents answer (issue 48).
 */
export const THIN_VECTOR_WAIT_MS = 2000;

export interface VectorLegDeps {
  db: Database;
  config: SearchConfig;
  embeddings: QueryEmbeddings;
  /** The query embedder now: null without one, undefined while its model threads start. */
  embedderNow: () => QueryEmbedder | null | undefined;
  onLegTiming?: (leg: 'lexical' | 'vector', ms: number, skipped?: VectorSkip) => void;
  onError?: (err: unknown) => void;
  /** Where the 8-bit vector copies are kept between starts (vector-memory.ts). */
  snapshot?: { file: string; onEvent?: (event: VectorSnapshotEvent) => void };
}

export class VectorLeg {
  /**
   * The embedder's vectors in memory, for filtered k-NN (vector-memory.ts); made with the embedder's
   * first vector leg, loaded once vectors exist.
   */
  memory: VectorMemory | null = null;
  /** Whether the model has any vector yet; once it has, it is not asked again. */
  private modelHasVectors = false;

  constructor(private readonly deps: VectorLegDeps) {}

  private memoryOf(embedder: QueryEmbedder): VectorMemory | null {
    const { config, db, snapshot } = this.deps;
    return config.vectorMemoryMb > 0
      ? (this.memory ??= new VectorMemory(db, embedder.name, { maxBytes: config.vectorMemoryMb * 2 ** 20, snapshot }))
      : null;
  }

  /** Loads the vectors in memory (in the background) once the model has any. */
  warm(): void {
    if (this.modelHasVectors) void this.memory?.warm().catch((err) => this.deps.onError?.(err));
  }

  private async hasVectors(model: string): Promise<boolean> {
    if (!this.modelHasVectors) {
      this.modelHasVectors = await vectorsExist(this.deps.db, model);
      this.warm();
    }
    return this.modelHasVectors;
  }

  /**
   * Why the vector leg is not run though it could be (named in `legs`), or null to run it: the
   * query's terms are exact and match, or the lexical leg's best k outrank anything it could add.
   */
  notNeeded(
    req: SearchRequest,
    plan: QueryPlan,
    lexicalCandidates: IndexHit[],
    /** Documents only the vector leg finds that may join (fusion.ts, vectorOnlySlots). */
    slots: number,
    legs: SearchLegs,
  ): boolean {
    const { config } = this.deps;
    const embedder = this.deps.embedderNow();
    if (!embedder || plan.text === '' || config.vectorLeg !== 'auto' || !config.lexicalEnabled) return false;
    if (slots === 0 && (plan.exact || plan.operators)) {
      // The terms decide: the vector leg could only reorder what holds them, and a busy model would make the
      // order depend on the moment.
      legs.vector_model = embedder.name;
      legs.vector_skipped = 'exact_terms';
      legs.vector_error = "the query's terms are exact (an identifier, a hash, an address, a phrase or operators) and match: the lexical leg answers it";
      this.deps.onLegTiming?.('vector', 0, 'exact_terms');
      return true;
    }
    if (lexicalDecidesPage(lexicalCandidates, req.k, config, config.boosts)) {
      legs.vector_model = embedder.name;
      legs.vector_skipped = 'lexical_sufficient';
      legs.vector_error = `the lexical leg's best ${req.k} outrank anything the vector leg could add; not run`;
      this.deps.onLegTiming?.('vector', 0, 'lexical_sufficient');
      return true;
    }
    return false;
  }

  /**
   * The query embedding within the budget, then the k-NN. Returns no candidates, and says why in
   * `legs`, when it cannot or need not run.
   */
  async run(
    req: SearchRequest,
    legs: SearchLegs,
    lexical: { index: LexicalIndex; filter: IndexFilter },
    /** The vector leg may add documents (the lexical leg is thin): its budget is THIN_VECTOR_WAIT_MS at least. */
    mayAdd: boolean,
  ): Promise<VectorCandidate[]> {
    const { config, db, onLegTiming } = this.deps;
    // What the vector leg may add decides which documents answer: a busy model must not make the same query
    // answer 1 document on one call and 51 on the next, so it is waited for longer (issue 48).
    const budgetMs = config.vectorBudgetMs > 0 && mayAdd ? Math.max(config.vectorBudgetMs, THIN_VECTOR_WAIT_MS) : config.vectorBudgetMs;
    if (normaliseQuery(req.q) === '') {
      onLegTiming?.('vector', 0, 'no_text');
      legs.vector_error = 'the query has no words to embed, only operators';
      legs.vector_skipped = 'no_text';
      return [];
    }
    const skip = (why: VectorSkip, message: string): VectorCandidate[] => {
      legs.vector_error = message;
      legs.vector_skipped = why;
      return [];
    };
    const embedder = this.deps.embedderNow();
    if (embedder === undefined) {
      onLegTiming?.('vector', 0, 'model_starting');
      return skip('model_starting', 'the embedding model is starting; answered from the lexical leg');
    }
    if (!embedder) {
      onLegTiming?.('vector', 0, 'no_embedder');
      return skip('no_embedder', 'no embedder configured');
    }
    legs.vector_model = embedder.name;
    const memory = this.memoryOf(embedder);
    const started = performance.now();
    try {
      // Nothing embedded yet (the first minutes of an import): no query embedding, no k-NN.
      if (!(await this.hasVectors(embedder.name))) return skip('no_vectors', `no vectors stored yet for model ${embedder.name}`);
      const qv = await this.deps.embeddings.withinBudget(embedder, req.q, budgetMs);
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
      onLegTiming?.('vector', performance.now() - started, legs.vector_skipped);
    }
  }
}
