/**
 * Extractive answers: the units (sentences, key-value lines) of the retrieved passages scored
 * against the question, near-duplicates removed, and the best one to three quoted with their exact
 * spans.
 *
 * Question words are the query's lexemes weighted by their idf in the lexical index; a unit's word
 * matches by its Porter2 stem (the english stemmer of those lexemes). A unit's score:
 *   support    share of the question's weight found in the unit, its passage or its document title;
 *   coverage   share found in the unit itself, the question's names (capitalised words: "Casa do
 *              Rio") counting `topicWeight` as much as its other words, so that the line holding
 *              what is asked ("Confirmation number: …") beats the one repeating the name;
 *   proximity  the matched words close together;
 *   focus      the unit names what a what/which question asks for ("reference", "seat");
 *   type       the kind of answer asked for (answer-types.ts) present, or absent;
 *   minus small penalties for long units, quoted text and lower-ranked passages.
 * A passage lacking one of the question's names is about something else and gives no unit. A unit
 * answers only when its support reaches `floor` and, for a question of a known kind, it holds that
 * kind of answer: otherwise the answer is "nothing found". The weights and the floor were chosen
 * on the dev slice of bench/ask (docs/BENCHMARKS.md).
 */
import { stem } from 'porter2';
import { answerUnits, type AnswerUnit } from './answer-units.ts';
import { hasAnswerOfType, questionFocus, questionTopics, questionType, type AnswerType } from './answer-types.ts';

export interface Passage {
  document_id: string;
  chunk_id: string;
  /** The retrieval's score and rank (0 = best) of the hit. */
  score: number;
  rank: number;
  title: string | null;
  /** The whole chunk text. */
  text: string;
  /** Lower-cased names of the people linked to the document (senders, authors, mentioned). */
  people: string[];
  /** Lower-cased names of those it was written to. */
  addressees: string[];
}

/** A query lexeme (PostgreSQL's english configuration) with its inverse document frequency. */
export interface QueryTerm {
  term: string;
  idf: number;
}

export interface ExtractiveParams {
  /** Weight of the question's share found in the unit, its passage or its document title. */
  supportWeight: number;
  /** Weight of the question's share found in the unit itself. */
  coverageWeight: number;
  /**
   * What the names of the question weigh in a unit's coverage, against its other words: the passage must hold
   * the names ("Casa do Rio"), the unit should hold what is asked about them ("confirmation number").
   */
  topicWeight: number;
  /** Least share of the question's names (capitalised words, numbers) a passage must hold to answer. */
  topicFloor: number;
  proximityWeight: number;
  /** The unit names what a what/which question asks for ("reference", "seat"). */
  focusBonus: number;
  typeBonus: number;
  typeMissPenalty: number;
  /** An amount on a line that says it is the total, for a how-much question (not the VAT or one item). */
  totalBonus: number;
  rankPenalty: number;
  quotedPenalty: number;
  /** Least support for an answer: below it, nothing found. */
  floor: number;
  /**
   * A question of a known kind (when, who, how much…) is answered only by a unit holding that kind of answer,
   * or holding every word of the question.
   */
  requireType: boolean;
  /** Further units join the first only when scoring at least this share of it. */
  secondRatio: number;
  maxUnits: number;
  maxChars: number;
}

export const DEFAULT_EXTRACTIVE: ExtractiveParams = {
  supportWeight: 0.5,
  coverageWeight: 0.3,
  topicWeight: 0.3,
  topicFloor: 0.99,
  proximityWeight: 0.15,
  focusBonus: 0.25,
  typeBonus: 0.3,
  typeMissPenalty: 0.2,
  totalBonus: 0.1,
  rankPenalty: 0.02,
  quotedPenalty: 0.05,
  floor: 0.5,
  requireType: true,
  secondRatio: 0.7,
  maxUnits: 3,
  maxChars: 400,
};

export interface Candidate {
  passage: number;
  unit: AnswerUnit;
  score: number;
  /** Share of the question's idf weight found in the unit, its passage or its document's title. */
  support: number;
  /** Question words the unit itself holds, and their weighted share of the question. */
  matched: number;
  coverage: number;
  /** The unit holds the kind of answer the question asks for (false when it asks for no particular kind). */
  typed: boolean;
}

/** Question words that only say what kind of answer is wanted ("how much", "how many"). */
const ASKING_WORDS = new Set(['much', 'mani']);

const WORD = /[\p{L}\p{N}]+/gu;
const TOTAL = /\b(total|grand total|amount due|balance due|to pay)\b/i;

interface Tokens {
  /** Per token: its keys (the lower-cased word and its stem). */
  keys: string[][];
  lower: string;
}

function tokens(text: string): Tokens {
  const keys: string[][] = [];
  for (const m of text.matchAll(WORD)) {
    const w = m[0].toLowerCase();
    const s = /^\p{L}+$/u.test(w) ? stem(w) : w;
    keys.push(s === w ? [w] : [w, s]);
  }
  return { keys, lower: text.toLowerCase() };
}

/** Positions (token indexes) of each query term in the tokens; compound terms ("cdr-48213") match as text. */
function positions(t: Tokens, terms: QueryTerm[]): number[][] {
  return terms.map(({ term }) => {
    if (/[^\p{L}\p{N}]/u.test(term)) return t.lower.includes(term) ? [0] : [];
    const out: number[] = [];
    t.keys.forEach((k, i) => {
      if (k.includes(term)) out.push(i);
    });
    return out;
  });
}

/** Distinct matched terms over the smallest token window holding one of each (1 when adjacent). */
function proximity(pos: number[][]): number {
  const events: [number, number][] = [];
  pos.forEach((p, term) => {
    for (const i of p) events.push([i, term]);
  });
  const distinct = pos.filter((p) => p.length > 0).length;
  if (distinct < 2) return 0;
  events.sort((a, b) => a[0] - b[0]);
  const count = new Map<number, number>();
  let have = 0;
  let best = Infinity;
  let lo = 0;
  for (let hi = 0; hi < events.length; hi++) {
    const t = events[hi][1];
    count.set(t, (count.get(t) ?? 0) + 1);
    if (count.get(t) === 1) have++;
    while (have === distinct) {
      best = Math.min(best, events[hi][0] - events[lo][0] + 1);
      const u = events[lo][1];
      count.set(u, count.get(u)! - 1);
      if (count.get(u) === 0) have--;
      lo++;
    }
  }
  return best === Infinity ? 0 : distinct / best;
}

/** Lower-cased words of a text, for near-duplicate detection. */
function wordSet(text: string): Set<string> {
  return new Set((text.toLowerCase().match(WORD) ?? []).filter((w) => w.length > 1));
}

function nearDuplicate(a: Set<string>, b: Set<string>): boolean {
  if (a.size === 0 || b.size === 0) return false;
  let both = 0;
  for (const w of a) if (b.has(w)) both++;
  const small = Math.min(a.size, b.size);
  // The same words (a quoted copy, the same file twice), or one unit contained in the other.
  return both / (a.size + b.size - both) >= 0.8 || (small >= 4 && both / small >= 0.9);
}

export interface Ranked {
  type: AnswerType | null;
  /** Best first, near-duplicates of a better unit removed. */
  candidates: Candidate[];
}

/** Every unit of the passages scored against the question. */
export function rankUnits(question: string, queryTerms: QueryTerm[], passages: Passage[], p: ExtractiveParams = DEFAULT_EXTRACTIVE): Ranked {
  const terms = queryTerms.filter((t) => !ASKING_WORDS.has(t.term) && t.idf > 0);
  const total = terms.reduce((s, t) => s + t.idf, 0);
  const type = questionType(question);
  const focus = questionFocus(question).map((w) => stem(w));
  const topicWords = new Set(questionTopics(question).flatMap((w) => [w, stem(w)]));
  const isTopic = terms.map((t) => topicWords.has(t.term));
  const weight = terms.map((t, i) => t.idf * (isTopic[i] ? p.topicWeight : 1));
  const totalWeight = weight.reduce((a, b) => a + b, 0);
  const topicTotal = terms.reduce((a, t, i) => a + (isTopic[i] ? t.idf : 0), 0);
  const qLower = question.toLowerCase();
  const scored: (Candidate & { words: Set<string> })[] = [];
  if (total === 0) return { type, candidates: [] };
  passages.forEach((passage, pi) => {
    const around = positions(tokens(`${passage.title ?? ''}\n${passage.text}`), terms).map((x) => x.length > 0);
    // The names the question is about, all in the passage (else it is about something else).
    const topicHeld = topicTotal === 0 ? 1 : terms.reduce((a, t, i) => a + (isTopic[i] && around[i] ? t.idf : 0), 0) / topicTotal;
    if (topicHeld < p.topicFloor) return;
    const addressees = new Set(passage.addressees);
    const names = new Set(passage.people.filter((n) => !addressees.has(n)));
    for (const unit of answerUnits(passage.text)) {
      const t = tokens(unit.text);
      const pos = positions(t, terms);
      const typed = type !== null && hasAnswerOfType(unit.text, type, qLower, names, addressees);
      let coverage = 0;
      let support = 0;
      let matched = 0;
      terms.forEach((term, i) => {
        if (pos[i].length > 0) {
          coverage += weight[i];
          matched++;
        }
        if (pos[i].length > 0 || around[i]) support += term.idf;
      });
      // A unit that shares no word with the question can still hold the kind of answer asked for.
      if (matched === 0 && !typed) continue;
      coverage /= totalWeight;
      support /= total;
      const words = t.keys.length;
      let score = p.supportWeight * support + p.coverageWeight * coverage + p.proximityWeight * proximity(pos) * coverage;
      if (focus.length > 0 && t.keys.some((k) => focus.some((f) => k.includes(f)))) score += p.focusBonus;
      if (type) score += typed ? p.typeBonus : -p.typeMissPenalty;
      if (typed && type === 'amount' && TOTAL.test(unit.text)) score += p.totalBonus;
      if (words > 50) score -= Math.min(0.2, (0.1 * (words - 50)) / 50);
      if (unit.quoted) score -= p.quotedPenalty;
      score -= p.rankPenalty * passage.rank;
      scored.push({ passage: pi, unit, score, support, matched, coverage, typed, words: wordSet(unit.text) });
    }
  });
  scored.sort((a, b) => b.score - a.score || passages[a.passage].rank - passages[b.passage].rank || a.unit.start - b.unit.start);
  const kept: (Candidate & { words: Set<string> })[] = [];
  for (const c of scored) {
    if (kept.some((k) => nearDuplicate(k.words, c.words))) continue;
    kept.push(c);
  }
  return { type, candidates: kept.map(({ words: _w, ...c }) => c) };
}

export interface Quote {
  candidate: Candidate;
  /** The text quoted (the unit, or the part of a long unit around its matches, with "…"). */
  text: string;
  /** Span of the quoted text in the passage, end exclusive. */
  start: number;
  end: number;
}

/** Offset in the passage of character `k` of a unit's squashed text (whitespace and quote markers read as one space). */
function rawOffset(passage: string, unit: AnswerUnit, k: number): number {
  let i = unit.start;
  for (let j = 0; j < k && i < unit.end; j++) {
    if (/\s/.test(passage[i])) {
      while (i < unit.end && (/\s/.test(passage[i]) || (passage[i] === '>' && /\n[\s>]*$/.test(passage.slice(Math.max(0, i - 8), i))))) i++;
    } else i++;
  }
  return i;
}

/** A long unit cut to `max` characters around its first matched question word. */
function cut(passage: string, c: Candidate, terms: QueryTerm[], max: number): Quote {
  const u = c.unit;
  if (u.text.length <= max) return { candidate: c, text: u.text, start: u.start, end: u.end };
  const lower = u.text.toLowerCase();
  let first = u.text.length;
  for (const m of u.text.matchAll(WORD)) {
    const w = m[0].toLowerCase();
    if (terms.some((t) => t.term === w || t.term === stem(w))) {
      first = m.index!;
      break;
    }
  }
  if (first === u.text.length) first = 0;
  let from = Math.max(0, Math.min(first - Math.floor(max / 4), u.text.length - max + 2));
  if (from > 0) from = lower.indexOf(' ', from) + 1 || from;
  let to = Math.min(u.text.length, from + max - 2);
  if (to < u.text.length) to = u.text.lastIndexOf(' ', to) > from ? u.text.lastIndexOf(' ', to) : to;
  const text = `${from > 0 ? '…' : ''}${u.text.slice(from, to).trim()}${to < u.text.length ? '…' : ''}`;
  return { candidate: c, text, start: rawOffset(passage, u, from), end: rawOffset(passage, u, to) };
}

/**
 * The answer's quotes: the best unit if it clears the floor, then up to `maxUnits - 1` more that
 * score within `secondRatio` of it, as long as the answer (markers included) fits `maxChars`.
 */
export function pickQuotes(ranked: Ranked, queryTerms: QueryTerm[], passages: Passage[], p: ExtractiveParams = DEFAULT_EXTRACTIVE): Quote[] {
  // A unit holding the whole question ("Receipt XK42 …" for "Where is receipt XK42?") answers it as it stands.
  const ok = ranked.candidates.filter((c) => c.support >= p.floor && (!p.requireType || ranked.type === null || c.typed || c.coverage >= 0.99));
  if (ok.length === 0) return [];
  const best = ok[0];
  const quotes: Quote[] = [cut(passages[best.passage].text, best, queryTerms, p.maxChars - 4)];
  let used = quotes[0].text.length + 4;
  for (const c of ok.slice(1)) {
    if (quotes.length >= p.maxUnits) break;
    if (c.score < best.score * p.secondRatio) break;
    if (used + c.unit.text.length + 5 > p.maxChars) continue;
    quotes.push({ candidate: c, text: c.unit.text, start: c.unit.start, end: c.unit.end });
    used += c.unit.text.length + 5;
  }
  return quotes;
}
