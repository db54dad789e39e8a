/**
 * A query's lexemes: PostgreSQL's `to_tsvector('english', q)`, the function the stored vectors came
 * from, so stemming and stop words always agree with the index. Asking PostgreSQL costs a round
 * trip per query; most queries are a few plain words, so words are remembered: for a query made
 * only of ASCII letters and the separators below, PostgreSQL's parser yields exactly one word
 * token per run of letters, and the vector is the union of the words' own lexemes (stop words give
 * none). Such a query is answered from the remembered words, and only words never seen go to
 * PostgreSQL. Anything else (digits, hyphens, dots, apostrophes, e-mail addresses, non-ASCII
 * letters: the parser's other token types) is sent whole, as before. test/search/analyzer.test.ts
 * checks the two ways against each other on both backends.
 */
import type { Queryable } from '../db/types.ts';
import { LruCache } from './cache.ts';
import type { QueryLexeme } from './index/lexical-index.ts';

/** Letters and the characters PostgreSQL's default parser treats as plain separators between words. */
const PLAIN = /^[A-Za-z\s,;!?()"]*$/;
const WORD = /[A-Za-z]+/g;
/** Longer words go to PostgreSQL whole (its parser has its own limits for very long words). */
const MAX_WORD = 100;
/** tsvector keeps at most 256 positions per lexeme. */
const MAX_POSITIONS = 256;

export class QueryAnalyzer {
  private readonly words: LruCache<string, string | null>;
  /** Queries answered from remembered words only, and round trips made; for tests and benchmarks. */
  readonly counters = { remembered: 0, asked: 0 };

  constructor(
    private readonly db: Queryable,
    capacity = 50_000,
  ) {
    this.words = new LruCache(capacity);
  }

  async lexemes(q: string): Promise<QueryLexeme[]> {
    const words = PLAIN.test(q) ? (q.match(WORD) ?? []).map((w) => w.toLowerCase()) : null;
    if (words === null || words.some((w) => w.length > MAX_WORD)) return this.whole(q);
    const missing = [...new Set(words.filter((w) => this.words.get(w) === undefined))];
    if (missing.length > 0) {
      this.counters.asked++;
      const r = await this.db.query<{ w: string; lexeme: string | null }>(
        `SELECT w, (SELECT lexeme FROM unnest(to_tsvector('english', w)) LIMIT 1) AS lexeme FROM unnest($1::text[]) AS w`,
        [missing],
        { name: 'memex_search_words' },
      );
      for (const row of r.rows) this.words.set(row.w, row.lexeme);
    } else {
      this.counters.remembered++;
    }
    const qtf = new Map<string, number>();
    for (const w of words) {
      const lexeme = this.words.get(w);
      if (lexeme === undefined) return this.whole(q); // evicted meanwhile by other queries
      if (lexeme !== null) qtf.set(lexeme, Math.min(MAX_POSITIONS, (qtf.get(lexeme) ?? 0) + 1));
    }
    // In the order of a tsvector's lexemes (bytewise), as `whole` returns them.
    return [...qtf.keys()].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).map((term) => ({ term, qtf: qtf.get(term)! }));
  }

  /**
   * Each text's lexemes with their word positions (1-based, stop words counted, as PostgreSQL
   * numbers them): what a phrase is matched with. Plain texts come from the remembered words (one
   * word token per run of letters); the others are analysed by PostgreSQL in one statement.
   */
  async positions(texts: string[]): Promise<Map<string, number[]>[]> {
    const out: (Map<string, number[]> | null)[] = texts.map(() => null);
    const plain = texts.map((t) => (PLAIN.test(t) ? (t.match(WORD) ?? []).map((w) => w.toLowerCase()) : null));
    const unknown = new Set<string>();
    for (const ws of plain) for (const w of ws ?? []) if (w.length <= MAX_WORD && this.words.get(w) === undefined) unknown.add(w);
    if (unknown.size > 0) {
      this.counters.asked++;
      const r = await this.db.query<{ w: string; lexeme: string | null }>(
        `SELECT w, (SELECT lexeme FROM unnest(to_tsvector('english', w)) LIMIT 1) AS lexeme FROM unnest($1::text[]) AS w`,
        [[...unknown]],
        { name: 'memex_search_words' },
      );
      for (const row of r.rows) this.words.set(row.w, row.lexeme);
    }
    const whole: number[] = [];
    plain.forEach((ws, i) => {
      if (ws === null || ws.some((w) => w.length > MAX_WORD || this.words.get(w) === undefined)) {
        whole.push(i);
        return;
      }
      const m = new Map<string, number[]>();
      ws.forEach((w, k) => {
        const lexeme = this.words.get(w);
        if (lexeme) m.set(lexeme, [...(m.get(lexeme) ?? []), k + 1]);
      });
      out[i] = m;
    });
    if (whole.length > 0) {
      this.counters.asked++;
      const r = await this.db.query<{ i: number; term: string; positions: number[] | null }>(
        `SELECT t.i::int AS i, v.lexeme AS term, v.positions::int[] AS positions
           FROM unnest($1::text[]) WITH ORDINALITY AS t(s, i), unnest(to_tsvector('english', t.s)) AS v`,
        [whole.map((i) => texts[i])],
        { name: 'memex_search_positions' },
      );
      for (const i of whole) out[i] = new Map();
      for (const row of r.rows) out[whole[row.i - 1]]!.set(row.term, row.positions ?? []);
    }
    return out.map((m) => m ?? new Map());
  }

  /** The query's vector computed by PostgreSQL. */
  async whole(q: string): Promise<QueryLexeme[]> {
    this.counters.asked++;
    const r = await this.db.query<{ term: string; qtf: number }>(
      `SELECT lexeme AS term, coalesce(array_length(positions, 1), 1) AS qtf FROM unnest(to_tsvector('english', $1))`,
      [q],
      { name: 'memex_search_lexemes' },
    );
    return r.rows;
  }
}
