/**
 * The search query language (docs/search.md, "Search terms"), parsed once on the server: the API's
 * `q` (and so the CLI, the web UI and MCP, which send it as typed) becomes a typed tree here, then
 * words, phrases and conditions for the lexical index and filters for both legs (search.ts).
 *
 *   word            ranked, as before (every word of the query counts; none is required)
 *   "a phrase"      required: its words adjacent and in order (an unbalanced quote is closed at the end)
 *   -word -"a b"    excluded (also NOT word)
 *   x OR y          one of them is required when one side is a phrase or an operator (words alone
 *                   are ranked either way)
 *   from: to: with: subject:          people (sender, recipient, any role) and the title
 *   type: has:attachment in:thread/ID before: after: on:   the search filters (type: takes families: email, file, chat…)
 *   list:NAME       mail that came through a mailing list (its List-Id, or its name part: list:linux-mips)
 *   tag:NAME        documents with the tag, or in a conversation with it; tag:finance/* also finance/bank…
 *
 * Nothing here throws: whatever the text, the query is words, phrases and operators. A `name:` that
 * is not an operator, or an operator with a value it cannot use (`before:yesterday`), stays a word.
 *
 * Text that reads as prose (a pasted paragraph: many words and sentence punctuation, `readsAsProse`) is
 * ranked by all of its words: a quotation in it is a preferred phrase (a boost, never a requirement),
 * and its dashes, colons and capitalised OR/NOT are just what the writer wrote. Operators keep their
 * meaning in a query typed as a query. The same softening is the fallback of a strict query that
 * matches nothing (search.ts: `relaxed`).
 */

import { normaliseTag } from '../schemas/tag-names.ts';

/** Operators that select people or the title: conditions on documents (they may be joined by OR). */
export type FieldName = 'from' | 'to' | 'with' | 'subject';

export type QueryTerm =
  | { kind: 'word'; text: string }
  | { kind: 'phrase'; text: string }
  | { kind: 'field'; field: FieldName; value: string; phrase: boolean }
  | { kind: 'type'; value: string }
  | { kind: 'list'; value: string }
  | { kind: 'tag'; value: string; tree: boolean }
  | { kind: 'attachment' }
  | { kind: 'thread'; id: string }
  | { kind: 'date'; op: 'before' | 'after' | 'on'; start: string; end: string };

/** A term as written, negated or not. */
export interface QueryItem {
  term: QueryTerm;
  negated: boolean;
}

export interface ParsedQuery {
  /** Positive terms; each group is one term or terms joined by OR. */
  groups: QueryTerm[][];
  /** Negated terms (`-x`, `NOT x`). */
  excluded: QueryTerm[];
  /** The last word, open to prefix matching (search as you type): null when the query ends otherwise (a space, a quote, an operator). */
  prefix: string | null;
  /** The words and phrases to rank and embed (operators and exclusions left out), single-spaced. */
  text: string;
  /** Read as prose (or relaxed): every token is a word, and quotations are `preferred`. */
  soft: boolean;
  /** Phrases that rank a document higher when it holds them, without being required (soft queries). */
  preferred: QueryTerm[];
}

/** A query of at least this many words can read as prose. */
export const PROSE_MIN_WORDS = 12;

/**
 * Whether a query reads as prose rather than as a query: at least PROSE_MIN_WORDS words and sentence
 * punctuation inside it (a full stop, comma, semicolon, question or exclamation mark followed by more
 * text), or a sentence's end after its last word (a claim pasted with its full stop, as SciFact's are).
 * Nobody types twelve words and a comma or a full stop as operators; everyone who pastes a paragraph does.
 */
export function readsAsProse(q: string): boolean {
  const words = q.split(/\s+/).filter((w) => /[\p{L}\p{N}]/u.test(w));
  if (words.length < PROSE_MIN_WORDS) return false;
  return /[\p{L}\p{N}"')\]][.,;!?]["')\]]*\s+\S/u.test(q) || /[\p{L}\p{N}"')\]][.!?]["')\]]*\s*$/u.test(q);
}

const FIELDS = new Set(['from', 'to', 'with', 'subject', 'type', 'list', 'tag', 'has', 'in', 'thread', 'before', 'after', 'on', 'date']);
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SPACE = /\s/;

/** `2026-10-05`, `2026-10`, `2026` or an ISO date-time, as the UTC interval it names; null otherwise. */
export function dateInterval(value: string): { start: string; end: string } | null {
  const v = value.trim();
  let m = /^(\d{4})$/.exec(v);
  if (m) {
    const y = Number(m[1]);
    return { start: iso(Date.UTC(y, 0, 1)), end: iso(Date.UTC(y + 1, 0, 1)) };
  }
  m = /^(\d{4})-(\d{2})$/.exec(v);
  if (m) {
    const [y, mo] = [Number(m[1]), Number(m[2])];
    if (mo < 1 || mo > 12) return null;
    return { start: iso(Date.UTC(y, mo - 1, 1)), end: iso(Date.UTC(y, mo, 1)) };
  }
  m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(v);
  if (m) {
    const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
    const t = Date.UTC(y, mo - 1, d);
    if (new Date(t).getUTCDate() !== d || mo < 1 || mo > 12) return null;
    return { start: iso(t), end: iso(t + 86_400_000) };
  }
  if (/^\d{4}-\d{2}-\d{2}T/.test(v)) {
    const t = Date.parse(v);
    if (Number.isNaN(t)) return null;
    // A moment: `before:` it, `after:` it, `on:` that second.
    return { start: iso(t), end: iso(t + 1000) };
  }
  return null;
}

const iso = (t: number) => new Date(t).toISOString();

interface Token {
  text: string;
  /** Written in quotes (a phrase, or an operator's quoted value). */
  quoted: boolean;
  negated: boolean;
  /** The operator name when written `name:value`. */
  field: string | null;
  /** The token ran to the end of the query with nothing after it. */
  last: boolean;
}

function tokenize(q: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const n = q.length;
  while (i < n) {
    while (i < n && (SPACE.test(q[i]) || q[i] === '(' || q[i] === ')')) i++;
    if (i >= n) break;
    let negated = false;
    if ((q[i] === '-' || q[i] === '!') && i + 1 < n && !SPACE.test(q[i + 1])) {
      negated = true;
      i++;
    }
    let field: string | null = null;
    const head = /^([A-Za-z]+):/.exec(q.slice(i, i + 12));
    if (head && FIELDS.has(head[1].toLowerCase()) && i + head[0].length < n && !SPACE.test(q[i + head[0].length])) {
      field = head[1].toLowerCase();
      i += head[0].length;
    }
    if (q[i] === '"') {
      // An unbalanced quote is closed at the end of the query.
      const close = q.indexOf('"', i + 1);
      const end = close < 0 ? n : close;
      out.push({ text: q.slice(i + 1, end), quoted: true, negated, field, last: false });
      i = close < 0 ? n : close + 1;
      continue;
    }
    let j = i;
    while (j < n && !SPACE.test(q[j]) && q[j] !== '"' && q[j] !== '(' && q[j] !== ')') j++;
    // A call as written in code (`func()`, `of_node_put()`): the parentheses belong to the word (an identifier).
    if (j > i && q.startsWith('()', j) && /[\p{L}\p{N}_]/u.test(q[j - 1])) j += 2;
    out.push({ text: q.slice(i, j), quoted: false, negated, field, last: j === n });
    i = j;
  }
  return out;
}

/** One token as a term; a value an operator cannot use leaves it a word as written. */
function termOf(t: Token): QueryTerm | null {
  const asWord = (): QueryTerm | null => {
    const text = t.field === null ? t.text : `${t.field}:${t.text}`;
    if (text.trim() === '') return null;
    return t.quoted ? { kind: 'phrase', text } : { kind: 'word', text };
  };
  if (t.field === null) return asWord();
  const v = t.text.trim();
  if (v === '') return null;
  switch (t.field) {
    case 'from':
    case 'to':
    case 'with':
    case 'subject':
      return { kind: 'field', field: t.field, value: v, phrase: t.quoted };
    case 'type':
      return { kind: 'type', value: v };
    case 'list': {
      // A List-Id (`<linux-mips.vger.kernel.org>`), its name, or the list's address.
      const id = v.replace(/^<|>$/g, '').toLowerCase();
      return id === '' ? asWord() : { kind: 'list', value: id.includes('@') ? id.replace('@', '.') : id };
    }
    case 'tag': {
      // tag:NAME (as tag-names.ts normalises it), tag:NAME/* (it and every tag below it); a name that is no tag stays a word.
      const tree = v.endsWith('/*');
      const n = normaliseTag(tree ? v.slice(0, -2) : v);
      return n.ok ? { kind: 'tag', value: n.name, tree } : asWord();
    }
    case 'has':
      return /^attachments?$/i.test(v) ? { kind: 'attachment' } : asWord();
    case 'in':
    case 'thread': {
      const id = t.field === 'in' ? /^thread[/:](.+)$/i.exec(v)?.[1] : v;
      return id !== undefined && UUID.test(id) ? { kind: 'thread', id: id.toLowerCase() } : asWord();
    }
    case 'before':
    case 'after':
    case 'on':
    case 'date': {
      const d = dateInterval(v);
      if (!d) return asWord();
      return { kind: 'date', op: t.field === 'date' ? 'on' : t.field, ...d };
    }
  }
  return asWord();
}

export function parseQuery(q: string, opts: { soft?: boolean } = {}): ParsedQuery {
  const tokens = tokenize(q);
  if (opts.soft ?? readsAsProse(q)) return softQuery(tokens);
  const groups: QueryTerm[][] = [];
  const excluded: QueryTerm[] = [];
  let joinNext = false;
  let negateNext = false;
  let prefix: string | null = null;
  const text: string[] = [];
  tokens.forEach((tok, k) => {
    if (!tok.quoted && tok.field === null && !tok.negated) {
      // OR joins its neighbours; NOT negates the next term (as written in Gmail and notmuch).
      if (tok.text === 'OR' && groups.length > 0 && k + 1 < tokens.length) {
        joinNext = true;
        return;
      }
      if (tok.text === 'NOT' && k + 1 < tokens.length) {
        negateNext = true;
        return;
      }
    }
    const term = termOf(tok);
    const negated = tok.negated !== negateNext;
    negateNext = false;
    if (term === null) return;
    if (negated) {
      excluded.push(term);
      joinNext = false;
      return;
    }
    if (term.kind === 'word' || term.kind === 'phrase') text.push(term.text);
    if (joinNext) groups[groups.length - 1].push(term);
    else groups.push([term]);
    joinNext = false;
    // Being typed: the query ends in it, and it ends in a letter or digit (`budget?` is a finished question).
    if (k === tokens.length - 1 && term.kind === 'word' && tok.last && /[\p{L}\p{N}]$/u.test(term.text)) prefix = term.text;
  });
  return { groups, excluded, prefix, text: text.join(' ').replace(/\s+/g, ' ').trim(), soft: false, preferred: [] };
}

/** Every token as words to rank (an operator as the words it is written with); quotations preferred. */
function softQuery(tokens: Token[]): ParsedQuery {
  const groups: QueryTerm[][] = [];
  const preferred: QueryTerm[] = [];
  for (const tok of tokens) {
    const text = (tok.field === null ? tok.text : `${tok.field}:${tok.text}`).trim();
    if (text === '') continue;
    groups.push([{ kind: 'word', text }]);
    if (tok.quoted && /\s/.test(tok.text.trim())) preferred.push({ kind: 'phrase', text: tok.text.trim() });
  }
  const text = groups.map((g) => (g[0] as { text: string }).text).join(' ').replace(/\s+/g, ' ').trim();
  return { groups, excluded: [], prefix: null, text, soft: true, preferred };
}

/**
 * What kind of exact token a word is, or null for an ordinary word: code identifiers (`snake_case`,
 * `a::b`, `a->b`, `func()`, `dotted.names`, paths such as `arch/mips/kernel/setup.c`), commit hashes
 * and e-mail addresses. Such a word is matched as a whole (the phrase of its parts, search.ts) before
 * its parts are; a query holding one is exact, so the vector leg adds no document to it (fusion.ts).
 * Mixed case alone (`CamelCase`, gene names such as `mTORC2`) is none of these: PostgreSQL keeps it one
 * lexeme already, and natural-language queries are full of it.
 */
export type ExactKind = 'identifier' | 'path' | 'hash' | 'address';

export function exactKind(word: string): ExactKind | null {
  if (/^[A-Za-z_][\w:.>-]*\(\)$/.test(word.replace(/[,;:!?.]+$/, ''))) return 'identifier';
  // Sentence punctuation and brackets around the token are not part of it.
  const w = word.replace(/^[\s"'`([{<]+|[\s"'`,;:!?)\]}>]+$/g, '').replace(/\.+$/, '');
  if (w.length < 3) return null;
  if (/^[^\s@]+@[^\s@]+\.[^\s@.]+$/.test(w)) return 'address';
  if (/^[0-9a-f]{7,64}$/i.test(w) && /\d/.test(w) && /[a-f]/i.test(w)) return 'hash';
  if (/[\p{L}\p{N}]_+[\p{L}\p{N}]/u.test(w) || /\w(::|->)\w/.test(w)) return 'identifier';
  // Paths: two separators, or one and a file name's extension (`drivers/net`, `TCR/CD8` and `1/2` are not).
  if (/^[\w.-]*\w\/[\w.-]+\/[\w./-]*\w$/.test(w) || /^[\w.-]*\w\/[\w-]+\.[A-Za-z]\w{0,4}$/.test(w)) return 'path';
  // Dotted names: letters after every dot, some part longer than a letter (`e.g`, `H2A.Z` and `3.14` are not).
  if (/^[A-Za-z_]\w*(\.[a-z_]\w*)+$/.test(w) && w.split('.').some((part) => part.length > 1)) return 'identifier';
  return null;
}

/** Whether the query is plain words only (no phrase, operator, exclusion or OR): ranked exactly as before the query language. */
export function isPlain(p: ParsedQuery): boolean {
  return !p.soft && p.excluded.length === 0 && p.groups.every((g) => g.length === 1 && g[0].kind === 'word');
}

/** Whether the query holds anything a soft reading would loosen (a phrase, an exclusion, an operator, OR). */
export function hasConditions(p: ParsedQuery): boolean {
  return !p.soft && !isPlain(p);
}
