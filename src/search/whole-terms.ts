/**
 * Identifiers joined by underscores (`irq_domain_set_info`, `AUTH_TOKEN`, `accepted_at`) as one term each,
 * beside the lexemes PostgreSQL makes of them (issue 48 item 2). PostgreSQL's parser splits such a word at
 * every `_` and stems and drops the parts (`accepted_at` is the lexeme `accept`), so the phrase of its
 * lexemes also matches prose ("accepted at", "auth token"). notmuch (Xapian) keeps the word whole, and so
 * does the index now: each run of letters, digits and underscores with an underscore inside is a term of its
 * own, lower-cased and unstemmed, in a namespace no lexeme can be in (WHOLE_PREFIX: to_tsvector never yields
 * a control character). Dotted names, paths and `a::b` need nothing of their own: PostgreSQL keeps
 * `os.path.join` and `arch/mips/kernel/setup.c` whole, and the runs inside them (`setup_64` of
 * `arch/mips/kernel/setup_64.c`, `my_method` of `MyClass::my_method`) are found here like any other.
 *
 * The same function reads a query's word and a document's text, so the two always agree. Whole terms are
 * not words of the passage for BM25's length (update.ts): a document's ranking for plain words is unchanged.
 */

/** The namespace of whole terms in the index's term dictionary. */
export const WHOLE_PREFIX = '\u0001';

/** A letter, a digit or an underscore (ASCII first; others by their Unicode class, one UTF-16 unit at a time). */
const WORD_CHAR = /[\p{L}\p{N}]/u;
function isWordCode(c: number): boolean {
  if (c < 128) return (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95;
  return WORD_CHAR.test(String.fromCharCode(c));
}
/** An underscore between two letters or digits. */
const INNER = /[\p{L}\p{N}]_+[\p{L}\p{N}]/u;
/** Longer runs are not identifiers anyone types (base64url in links, hex dumps): left to the lexemes. */
export const WHOLE_MAX_CHARS = 80;

/** SQL: whether a text may hold a whole term (the build reads the text only then). */
export const mayHoldWhole = (column: string) => `strpos(${column}, '_') > 0`;

/**
 * The whole terms of a text (namespaced) with their occurrences; empty for a text without any. Only the
 * runs around an underscore are looked at (a chunk of prose costs one indexOf).
 */
export function wholeTerms(text: string | null | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!text) return out;
  const n = text.length;
  for (let i = text.indexOf('_'); i >= 0; ) {
    let s = i;
    while (s > 0 && isWordCode(text.charCodeAt(s - 1))) s--;
    let e = i + 1;
    while (e < n && isWordCode(text.charCodeAt(e))) e++;
    if (e - s <= WHOLE_MAX_CHARS) {
      const w = text.slice(s, e);
      if (INNER.test(w)) {
        const t = WHOLE_PREFIX + w.toLowerCase();
        out.set(t, (out.get(t) ?? 0) + 1);
      }
    }
    i = e < n ? text.indexOf('_', e) : -1;
  }
  return out;
}

/** The whole terms of a query's word, once each, in order (`MyClass::my_method` -> `my_method`). */
export function wholeTermsOfWord(word: string): string[] {
  return [...wholeTerms(word).keys()];
}

/** Whether an index term is a whole term (not a lexeme: no snippet or ask weighs it). */
export const isWholeTerm = (term: string): boolean => term.startsWith(WHOLE_PREFIX);
