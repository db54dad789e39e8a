/**
 * Snippets with the matched words marked («word»), made in JavaScript from the chunk text and the
 * query's lexemes (which PostgreSQL produced).
 *
 * PostgreSQL's ts_headline did this before, at ~0.3 ms of database CPU per hit (6 ms for a page of
 * 20, measured), more than the rest of a query together. A word matches when its Porter2 stem
 * (the `porter2` package: the Snowball "english" stemmer PostgreSQL's english configuration uses;
 * it agreed with to_tsvector on 19,885 of 19,885 SciFact words) is one of the query's lexemes.
 * Words are split at every character that is not a letter or a digit, as PostgreSQL's parser does
 * for ordinary words ("O'Reilly's" -> "o", "reilly", "s").
 */
import { stem } from 'porter2';
import type { ParsedQuery } from './query-parse.ts';

export interface SnippetOptions {
  /** Words per fragment. */
  fragmentWords: number;
  maxFragments: number;
  /** Text read from the start of the chunk. */
  maxChars: number;
}

export const DEFAULT_SNIPPET: SnippetOptions = { fragmentWords: 22, maxFragments: 2, maxChars: 4000 };

const WORD = /[\p{L}\p{N}]+/gu;

interface Token {
  start: number;
  end: number;
  /** Index of the matched lexeme, or -1. */
  match: number;
}

/**
 * A phrase of the query as its lexemes with their positions (PostgreSQL's: stop words keep their place), e.g.
 * "declaration of function" -> [{declar, 0}, {function, 2}].
 */
export type PhraseLexemes = { lexeme: string; at: number }[];

/** The query's phrases, and the lexemes it also holds as words of their own (marked everywhere). */
export interface SnippetPhrases {
  phrases: PhraseLexemes[];
  free: Set<string>;
}

/**
 * The phrases of a parsed query (not the excluded ones) as lexemes with positions, from `positions` (what the
 * analysis gave each text), and the words it holds on their own.
 */
export function snippetPhrases(parsed: ParsedQuery, positions: Map<string, Map<string, number[]>>): SnippetPhrases {
  const phrases: PhraseLexemes[] = [];
  const free = new Set<string>();
  for (const group of parsed.groups) {
    for (const t of group) {
      if (t.kind === 'word') {
        const w = t.text.toLowerCase();
        free.add(w).add(stem(w));
      } else if (t.kind === 'phrase') {
        const at = positions.get(t.text);
        if (!at) continue;
        const list = [...at].flatMap(([lexeme, ps]) => ps.map((p) => ({ lexeme, at: p }))).sort((a, b) => a.at - b.at);
        if (list.length >= 2) phrases.push(list);
      }
    }
  }
  return { phrases, free };
}

export function makeSnippet(text: string, lexemes: string[], opts: SnippetOptions = DEFAULT_SNIPPET, phrases?: SnippetPhrases): string {
  const body = text.length > opts.maxChars ? text.slice(0, opts.maxChars) : text;
  const wanted = new Map(lexemes.map((l, i) => [l, i]));
  // Stems keep the word's first two letters, so only words sharing them with a lexeme are stemmed.
  const prefixes = new Set(lexemes.map((l) => l.slice(0, 2)));
  const tokens: Token[] = [];
  for (const m of body.matchAll(WORD)) {
    const lower = m[0].toLowerCase();
    let match = -1;
    if (prefixes.has(lower.slice(0, 2))) match = wanted.get(lower) ?? wanted.get(stem(lower)) ?? -1;
    tokens.push({ start: m.index!, end: m.index! + m[0].length, match });
  }
  if (tokens.length === 0) return body.trim();
  if (phrases) keepPhraseWordsInPhrases(tokens, lexemes, phrases);

  const w = Math.min(opts.fragmentWords, tokens.length);
  // Candidate fragments start a few words before each match; a fragment is worth the number of
  // distinct lexemes it holds, then the number of matches.
  const candidates: { from: number; score: number }[] = [];
  for (let i = 0; i < tokens.length; i++) {
    if (tokens[i].match < 0) continue;
    const from = Math.max(0, Math.min(i - 3, tokens.length - w));
    const seen = new Set<number>();
    let hits = 0;
    for (let j = from; j < from + w; j++) {
      if (tokens[j].match >= 0) {
        seen.add(tokens[j].match);
        hits++;
      }
    }
    // Among fragments with as many of the query's words, a reply's own words before what it quotes.
    candidates.push({ from, score: seen.size * 1000 + (quotedAt(body, tokens[i].start) ? 0 : 500) + Math.min(hits, 499) });
  }
  const chosen: number[] = [];
  for (const c of candidates.sort((a, b) => b.score - a.score || a.from - b.from)) {
    if (chosen.length >= opts.maxFragments) break;
    if (chosen.some((f) => Math.abs(f - c.from) < w)) continue;
    chosen.push(c.from);
  }
  if (chosen.length === 0) chosen.push(0);
  return chosen
    .sort((a, b) => a - b)
    .map((from) => render(body, tokens, from, Math.min(tokens.length, from + w)))
    .join(' … ');
}

/**
 * A word the query holds only inside a phrase ("device" of "device tree") is marked where the phrase is, not
 * wherever the word stands alone. Words split here as PostgreSQL splits them, so a phrase's lexemes stand at
 * the same distances in the tokens as in the query. Where the phrase is not found in this text (it matched
 * in another passage, or the split differs) its words stay marked as before.
 */
function keepPhraseWordsInPhrases(tokens: Token[], lexemes: string[], { phrases, free }: SnippetPhrases): void {
  if (phrases.length === 0) return;
  const index = new Map(lexemes.map((l, i) => [l, i]));
  const inPhrases = new Set<number>();
  const held = new Set<number>();
  for (const phrase of phrases) {
    if (phrase.length < 2) continue;
    const ids = phrase.map((p) => index.get(p.lexeme) ?? -2);
    phrase.forEach((p, j) => {
      if (ids[j] >= 0 && !free.has(p.lexeme)) inPhrases.add(ids[j]);
    });
    const first = phrase[0].at;
    let found = false;
    for (let i = 0; i < tokens.length; i++) {
      if (tokens[i].match !== ids[0]) continue;
      const at = phrase.map((p) => i + p.at - first);
      if (at.every((k, j) => k < tokens.length && tokens[k].match === ids[j])) {
        for (const k of at) held.add(k);
        found = true;
      }
    }
    // Not found here: its words are not phrase-only in this text.
    if (!found) for (const id of ids) inPhrases.delete(id);
  }
  if (inPhrases.size === 0) return;
  for (let i = 0; i < tokens.length; i++) if (inPhrases.has(tokens[i].match) && !held.has(i)) tokens[i].match = -1;
}

/** Whether the line holding offset `at` is a quoted line of an e-mail (`> …`, the quote parts of issue 40). */
function quotedAt(text: string, at: number): boolean {
  const lineStart = text.lastIndexOf('\n', at - 1) + 1;
  return /^[ \t]*>/.test(text.slice(lineStart, lineStart + 40));
}

/** The text of tokens [from, to), matched words wrapped in « ». */
function render(text: string, tokens: Token[], from: number, to: number): string {
  let out = '';
  let at = tokens[from].start;
  for (let i = from; i < to; i++) {
    const t = tokens[i];
    out += text.slice(at, t.start);
    out += t.match >= 0 ? `«${text.slice(t.start, t.end)}»` : text.slice(t.start, t.end);
    at = t.end;
  }
  // A fragment that reaches the last word keeps the text's closing punctuation.
  if (to === tokens.length) out += text.slice(at).trimEnd();
  return out;
}
