/**
 * Ranking: BM25F over passages (one chunk of an active document plus that document's title); a
 * document scores as its best passage. For a passage, tf = tf_text + w * tf_title and
 * dl = len_text + w * len_title (token counts), idf = ln(1 + (N - df + 0.5) / (df + 0.5)) over live
 * passages, score = sum idf * qtf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)).
 * A query walks the postings of its few lexemes (typed arrays, no allocation per posting).
 */
import { dfOf, firstPassage, grown, passageCountOf, passagesOf, post, seek, type IndexColumns, type Postings } from './columns.ts';
import { constraintTest, filterPredicate, intersect, isEmptyFilter, restriction } from './filter.ts';
import type { IndexFilter, IndexMatches, MatchOptions, QueryLexeme } from './types.ts';

/** Relative avgdl drift tolerated before a term's impacts are recomputed. */
const IMPACT_TOLERANCE = 0.01;

/** idf of a lexeme over live passages (as `match` weighs it); null when no live passage has it. */
export function idf(c: IndexColumns, term: string): number | null {
  const tid = c.terms.find(term);
  const df = tid === undefined ? 0 : dfOf(c, tid);
  if (df === 0) return null;
  const n = c.livePassages;
  return Math.log(1 + (n - df + 0.5) / (df + 0.5));
}

/**
 * Lexemes of live passages that start with one of `prefixes`, the `max` found in the most
 * passages (then in text order): the prefix expansions of the last word typed.
 */
export function expand(c: IndexColumns, prefixes: string[], max: number): { term: string; df: number }[] {
  const values = c.terms.values;
  if (values.length - c.sortedUpTo > Math.max(5000, c.sortedUpTo / 4)) {
    c.sortedTerms = Int32Array.from(values.keys()).sort((x, y) => (values[x] < values[y] ? -1 : values[x] > values[y] ? 1 : 0));
    c.sortedUpTo = values.length;
  }
  const found = new Set<number>();
  const sorted = c.sortedTerms;
  for (const p of new Set(prefixes)) {
    if (p === '') continue;
    let lo = 0;
    let hi = sorted.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (values[sorted[mid]] < p) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < sorted.length && values[sorted[i]].startsWith(p); i++) if (dfOf(c, sorted[i]) > 0) found.add(sorted[i]);
    for (let t = c.sortedUpTo; t < values.length; t++) if (values[t].startsWith(p) && dfOf(c, t) > 0) found.add(t);
  }
  return [...found]
    .map((t) => ({ term: values[t], df: dfOf(c, t) }))
    .sort((x, y) => y.df - x.df || (x.term < y.term ? -1 : x.term > y.term ? 1 : 0))
    .slice(0, max);
}

/** The `limit` best documents for the query (best passage each) and the whole match set. */
export function match(c: IndexColumns, query: QueryLexeme[], filter: IndexFilter, limit: number, opts: MatchOptions = {}): IndexMatches {
  const n = c.livePassages;
  const avgdl = n > 0 ? Math.max(c.lengthSum / n, 1e-9) : 1;
  const terms = query.map((q) => {
    const tid = c.terms.find(q.term);
    const df = tid === undefined ? 0 : dfOf(c, tid);
    return { ...q, tid, df, idf: Math.log(1 + (n - df + 0.5) / (df + 0.5)) };
  });

  c.acc = grown(c.acc, c.passageCount);
  c.docBest = grown(c.docBest, c.docCount);
  c.docBestPid = grown(c.docBestPid, c.docCount);
  c.docState = grown(c.docState, c.docCount);
  c.checked = grown(c.checked, c.docCount);
  const { acc, docBest, docBestPid, docState, pAlive, pDoc, checked } = c;
  const constrained = constraintTest(c, opts.constraints);
  const base = filterPredicate(c, filter);
  const ok = constrained.ok;
  const pass = ok === null ? base : (d: number) => ok(d) && base(d);
  let restricted = restriction(c, filter);
  if (constrained.required !== null) restricted = restricted === null ? constrained.required : intersect(restricted, constrained.required);
  const unfiltered = restricted === null && ok === null && isEmptyFilter(filter);
  let nChecked = 0;
  let postingsTotal = 0;
  for (const t of terms) if (t.tid !== undefined) postingsTotal += post(c, t.tid).n;
  c.touched = grown(c.touched, Math.min(postingsTotal, c.passageCount));
  const touched = c.touched;
  let nTouched = 0;
  const scored = terms.filter((t) => t.tid !== undefined && t.df > 0);
  const weights = scored.map((t) => t.idf * t.qtf * (query.find((q) => q.term === t.term)?.weight ?? 1));
  const lists = scored.map((t) => post(c, t.tid!));
  const impacts = lists.map((list) => impactsOf(c, list, avgdl));

  if (opts.browse && query.length === 0) return browse(c, restricted, pass, limit);

  if (restricted !== null && restricted.length * scored.length * 8 < postingsTotal) {
    // Few allowed documents (one person's, one thread's) against long postings: look their
    // passages up in the postings (ascending on both sides, so each list is galloped through once).
    const cursor = new Int32Array(scored.length);
    for (let j = 0; j < restricted.length; j++) {
      const d = restricted[j];
      if (!pass(d)) continue;
      const passages = passagesOf(c, d);
      for (let p = 0; p < passages.length; p++) {
        const pid = passages[p];
        let s = 0;
        for (let t = 0; t < lists.length; t++) {
          const { pids, n } = lists[t];
          const i = (cursor[t] = seek(pids, n, cursor[t], pid));
          if (i < n && pids[i] === pid) s += weights[t] * impacts[t][i];
        }
        if (s > 0) {
          touched[nTouched++] = pid;
          acc[pid] = s;
        }
      }
    }
  } else {
    // Walk the postings. Documents a restriction allows are marked 3 first; every document is
    // tested once (state 1 passes, 2 fails) and reset at the end through `checked`.
    if (restricted !== null) {
      for (let j = 0; j < restricted.length; j++) {
        docState[restricted[j]] = 3;
        checked[nChecked++] = restricted[j];
      }
    }
    for (let t = 0; t < lists.length; t++) {
      const { pids, n: len } = lists[t];
      const weight = weights[t];
      const imp = impacts[t];
      if (unfiltered) {
        for (let i = 0; i < len; i++) {
          const pid = pids[i];
          if (pAlive[pid] === 0) continue;
          if (acc[pid] === 0) touched[nTouched++] = pid;
          acc[pid] += weight * imp[i];
        }
        continue;
      }
      for (let i = 0; i < len; i++) {
        const pid = pids[i];
        if (pAlive[pid] === 0) continue;
        const d = pDoc[pid];
        let st = docState[d];
        if (st === 0) {
          if (restricted !== null) continue;
          st = docState[d] = pass(d) ? 1 : 2;
          checked[nChecked++] = d;
        } else if (st === 3) {
          st = docState[d] = pass(d) ? 1 : 2;
        }
        if (st === 2) continue;
        if (acc[pid] === 0) touched[nTouched++] = pid;
        acc[pid] += weight * imp[i];
      }
    }
  }

  // Best passage per document (ties: the smaller chunk id, as the SQL leg did). The match set is
  // collected in a typed buffer: a plain array push per match was the largest cost of a query.
  c.matched = grown(c.matched, c.docCount);
  const matched = c.matched;
  let nMatched = 0;
  for (let i = 0; i < nTouched; i++) {
    const pid = touched[i];
    const d = pDoc[pid];
    const s = acc[pid];
    acc[pid] = 0;
    if (docBest[d] === 0) {
      matched[nMatched++] = d;
      docBest[d] = s;
      docBestPid[d] = pid;
    } else if (s > docBest[d] || (s === docBest[d] && c.pChunk[pid] < c.pChunk[docBestPid[d]])) {
      docBest[d] = s;
      docBestPid[d] = pid;
    }
  }

  // Top `limit` documents (score, then document id), then only those are sorted.
  const { dKey, dUuid } = c;
  const before = (x: number, y: number) =>
    docBest[x] > docBest[y] || (docBest[x] === docBest[y] && (dKey[x] < dKey[y] || (dKey[x] === dKey[y] && dUuid[x]! < dUuid[y]!)));
  const top = [...topK(matched, nMatched, limit, docBest, before)]
    .sort((x, y) => (before(x, y) ? -1 : 1))
    .map((d) => ({ doc_id: dUuid[d]!, chunk_id: c.pChunk[docBestPid[d]], score: docBest[d] }));

  for (let i = 0; i < nMatched; i++) docBest[matched[i]] = 0;
  for (let i = 0; i < nChecked; i++) docState[checked[i]] = 0;
  return {
    candidates: top,
    // A copy: the buffer is the next query's scratch, and facets may be counted after an await.
    docs: matched.slice(0, nMatched),
    terms: terms.map(({ term, qtf, df, idf }) => ({ term, qtf, df, idf })),
  };
}

/** Every live document among `restricted` (or all) passing `pass`, the newest `limit` first, score 1. */
function browse(c: IndexColumns, restricted: Int32Array | null, pass: (d: number) => boolean, limit: number): IndexMatches {
  const docs: number[] = [];
  const take = (d: number) => {
    if (c.dAlive[d] === 1 && passageCountOf(c, d) > 0 && pass(d)) docs.push(d);
  };
  if (restricted !== null) for (let j = 0; j < restricted.length; j++) take(restricted[j]);
  else for (let d = 0; d < c.docCount; d++) take(d);
  const { dTs, dKey, dUuid } = c;
  const newest = [...docs]
    .sort((x, y) => dTs[y] - dTs[x] || dKey[x] - dKey[y] || (dUuid[x]! < dUuid[y]! ? -1 : 1))
    .slice(0, limit);
  return {
    candidates: newest.map((d) => ({
      doc_id: dUuid[d]!,
      // The first passage (chunks are in document order).
      chunk_id: c.pChunk[firstPassage(c, d)],
      score: 1,
    })),
    docs: Int32Array.from(docs),
    terms: [],
  };
}

/** A term's BM25 weights without idf, made or brought up to date for the collection's avgdl (Postings.imp). */
function impactsOf(c: IndexColumns, list: Postings, avgdl: number): Float32Array {
  if (list.impValid === 0 || Math.abs(list.impAvgdl - avgdl) > IMPACT_TOLERANCE * avgdl) {
    list.impValid = 0;
    list.impAvgdl = avgdl;
  }
  list.imp = grown(list.imp ?? new Float32Array(0), list.pids.length);
  const { k1, b } = c.params;
  const { imp, tfs, pids } = list;
  const a = list.impAvgdl;
  for (let i = list.impValid; i < list.n; i++) {
    const tf = tfs[i];
    imp[i] = (tf * (k1 + 1)) / (tf + k1 * (1 - b + (b * c.pLen[pids[i]]) / a));
  }
  list.impValid = list.n;
  return imp;
}

/**
 * The `k` first of `docs[0..n)` in the order `before` (a strict total order that puts higher
 * `score` first): a heap whose root is the last of those kept so far; unordered.
 */
function topK(
  docs: Int32Array,
  n: number,
  k: number,
  score: Float64Array,
  before: (x: number, y: number) => boolean,
): Int32Array {
  if (n <= k) return docs.slice(0, n);
  const heap = new Int32Array(k);
  for (let j = 0; j < k; j++) {
    // Sift up: the root holds the element every other one comes before.
    let i = j;
    heap[i] = docs[j];
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(heap[p], heap[i])) break;
      const t = heap[p];
      heap[p] = heap[i];
      heap[i] = t;
      i = p;
    }
  }
  let floor = score[heap[0]];
  for (let j = k; j < n; j++) {
    const d = docs[j];
    // Most documents score below the last one kept: one comparison, no call.
    if (score[d] < floor || !before(d, heap[0])) continue;
    heap[0] = d;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < k && before(heap[m], heap[l])) m = l;
      if (r < k && before(heap[m], heap[r])) m = r;
      if (m === i) break;
      const t = heap[m];
      heap[m] = heap[i];
      heap[i] = t;
      i = m;
    }
    floor = score[heap[0]];
  }
  return heap;
}
