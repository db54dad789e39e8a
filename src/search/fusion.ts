/**
 * Fusion of the two legs on normalised scores, then the ranking boosts of the spec.
 *
 * Raw BM25 (unbounded, query-dependent) and cosine (-1..1) are never added. Each leg is mapped to
 * 0..1 first: lexical = bm25 / best bm25 of the query; vector = (cos - floor) / (best cos - floor),
 * 0 at the similarity floor. fused = wL * lexical + wV * vector. The weights are measured on SciFact
 * (docs/search.md): with a weak dense model a small vector weight only reorders close lexical
 * candidates, and a document with the exact keyword (lexical 1.0) keeps wL >= wV of a lead.
 * A document enters the result only through a lexical match or a similarity above the floor, so a
 * query about nothing in the store returns nothing; and only through a lexical match when the query's terms
 * are exact or the lexical leg fills the page (vectorOnlySlots).
 */
import type { SearchConfig } from './config.ts';
import type { IndexHit } from './index/lexical-index.ts';
import type { VectorCandidate } from './vector.ts';

export interface FusedCandidate {
  doc_id: string;
  chunk_id: string;
  lexical: number | null;
  vector: number | null;
  fused: number;
  sources: ('lexical' | 'vector')[];
}

export function fuse(
  lexical: IndexHit[],
  vector: VectorCandidate[],
  cfg: Pick<SearchConfig, 'lexicalWeight' | 'vectorWeight' | 'vectorMinSimilarity'>,
): FusedCandidate[] {
  const out = new Map<string, FusedCandidate & { lexNorm: number; vecNorm: number }>();
  const maxLex = lexical.reduce((m, c) => Math.max(m, c.score), 0);
  for (const c of lexical) {
    out.set(c.doc_id, {
      doc_id: c.doc_id,
      chunk_id: c.chunk_id,
      lexical: c.score,
      vector: null,
      fused: 0,
      sources: ['lexical'],
      lexNorm: maxLex > 0 ? c.score / maxLex : 0,
      vecNorm: 0,
    });
  }
  const floor = cfg.vectorMinSimilarity;
  const above = vector.filter((v) => v.similarity >= floor);
  const maxVec = above.reduce((m, c) => Math.max(m, c.similarity), floor);
  for (const v of above) {
    const norm = maxVec > floor ? (v.similarity - floor) / (maxVec - floor) : 1;
    const cur = out.get(v.doc_id);
    if (cur) {
      cur.vector = v.similarity;
      cur.vecNorm = norm;
      cur.sources.push('vector');
    } else {
      out.set(v.doc_id, {
        doc_id: v.doc_id,
        chunk_id: v.chunk_id,
        lexical: null,
        vector: v.similarity,
        fused: 0,
        sources: ['vector'],
        lexNorm: 0,
        vecNorm: norm,
      });
    }
  }
  const list = [...out.values()];
  for (const c of list) c.fused = cfg.lexicalWeight * c.lexNorm + cfg.vectorWeight * c.vecNorm;
  return list
    .sort((a, b) => b.fused - a.fused || a.doc_id.localeCompare(b.doc_id))
    .map(({ lexNorm: _l, vecNorm: _v, ...c }) => c);
}

/** Multipliers of spec-notes 4.3 (the original system's numbers): modest, so relevance leads. */
export const SOURCE_WEIGHTS: Record<string, number> = { email: 1.05, email_local: 1.05, chatapp: 1.03, sms: 1.02 };
export const ATTACHMENT_BOOST = 1.05;
/**
 * An email attachment (a file uploaded with its message's Message-ID) ranks below its message for
 * the same match (issue 31: a kernel config or a .patch outranked the mail that carried it). Modest:
 * an attachment that matches much better than its message still comes first.
 */
export const ATTACHMENT_RANK_FACTOR = 0.8;
/**
 * A document holding a quotation of a prose query (query-parse.ts `preferred`) ranks this much higher: a
 * preference, so a passage that quotes the pasted text comes first without the others being dropped. A
 * document only the vector leg found cannot hold the phrase (its words would make it a lexical candidate), so
 * `lexicalDecidesPage`'s bound is unchanged.
 */
export const PREFERRED_PHRASE_FACTOR = 1.25;
const RECENCY_BOOSTS = [
  { underDays: 1, boost: 1.15 },
  { underDays: 7, boost: 1.1 },
  { underDays: 30, boost: 1.05 },
];

export function recencyBoost(contentTimestamp: Date, now: Date): number {
  const ageDays = (now.getTime() - contentTimestamp.getTime()) / 86_400_000;
  return RECENCY_BOOSTS.find((r) => ageDays < r.underDays)?.boost ?? 1;
}

/** The largest factor boostFactor can give (every boost is at least 1). */
export const MAX_BOOST =
  Math.max(...RECENCY_BOOSTS.map((r) => r.boost)) * ATTACHMENT_BOOST * Math.max(...Object.values(SOURCE_WEIGHTS));

/**
 * Whether the lexical candidates alone decide which documents can fill a page of `k`, so the
 * vector leg need not run (SEARCH_VECTOR_LEG=auto). `lexical` is sorted best first.
 *
 * A document only the vector leg finds has fused <= wV (its normalised similarity is at most 1),
 * so a final score <= wV * MAX_BOOST. Each of the k best lexical candidates has fused >= wL *
 * score_k / score_1 and a boost >= 1. When that bound is above the first, no vector-only document
 * can reach the page. What the vector leg could still do is add at most wV to lexical candidates,
 * reordering those whose scores lie within wV of each other (with USE-lite's measured weight 0.02,
 * worth +0.0002 nDCG@10 on SciFact: docs/search.md).
 */
export function lexicalDecidesPage(
  lexical: { score: number }[],
  k: number,
  cfg: Pick<SearchConfig, 'lexicalWeight' | 'vectorWeight'>,
  boosts: boolean,
): boolean {
  if (lexical.length < k || k < 1) return false;
  const best = lexical[0].score;
  const kth = lexical[k - 1].score;
  if (!(best > 0) || !(kth > 0)) return false;
  // A lexical candidate may be an attachment (ATTACHMENT_RANK_FACTOR): its final score is that much lower.
  return cfg.lexicalWeight * (kth / best) * ATTACHMENT_RANK_FACTOR > cfg.vectorWeight * (boosts ? MAX_BOOST : 1);
}

/**
 * How many documents only the vector leg found may join an answer (issue 48): the vector leg pads an answer
 * only where the lexical leg is thin, and never a query whose terms are exact.
 *
 * - An exact query (an identifier, a path, a hash, an address, a phrase: query-plan.ts `exact`): none. Its
 *   answer is what holds its terms; the passages nearest a commit hash are noise, however near the model
 *   puts them.
 * - A query with operators (`octeon after:2019-11-01`) whose words match: none. When its words match nothing,
 *   the vector leg answers it within the operators, as it does a plain query.
 * - A plain query: as many as the page has places left after the `lexicalMatches` documents holding its
 *   words, each above the similarity floor (fuse): meaning search where the words find too little.
 */
export function vectorOnlySlots(q: { exact: boolean; operators: boolean }, lexicalMatches: number, k: number): number {
  if (q.exact) return 0;
  if (q.operators && lexicalMatches > 0) return 0;
  return Math.max(0, k - lexicalMatches);
}

export function boostFactor(
  doc: { content_timestamp: Date | string; has_attachments: boolean; source_type: string },
  now: Date,
): number {
  return (
    recencyBoost(new Date(doc.content_timestamp), now) *
    (doc.has_attachments ? ATTACHMENT_BOOST : 1) *
    (SOURCE_WEIGHTS[doc.source_type] ?? 1)
  );
}
