/**
 * A parsed query (query-parse.ts) made into what the legs use: the lexemes to rank (with the prefix
 * expansions of the last word and within the per-query term budget), the conditions the lexical
 * index checks (phrases, exclusions, people, subject, OR), and the request's filters combined with
 * the query's operators (AND). Two steps: `analyseQuery` asks PostgreSQL what it must (lexemes,
 * positions, people), in parallel with the index catch-up; `planQuery` then reads the index.
 */
import type { Queryable } from '../db/types.ts';
import { canonicalLookupValues } from '../identity/identifiers.ts';
import type { QueryAnalyzer } from './analyzer.ts';
import type { DocCondition, LexicalIndex, QueryConstraints, QueryLexeme } from './index/lexical-index.ts';
import { exactKind, isPlain, type ParsedQuery, type QueryTerm } from './query-parse.ts';
import { sourceTypesFilter, type SearchFilters } from '../catalog/filters.ts';
import { sourceTypesOf } from '../catalog/source-families.ts';
import { TAG_IDENT, TAG_TREE_IDENT } from '../schemas/tag-names.ts';
import { wholeTermsOfWord } from './whole-terms.ts';

/** Distinct lexemes ranked per query: beyond it the least informative (lowest idf) are left out. */
export const QUERY_TERM_BUDGET = 64;
/** The last word is prefix-matched from this many characters on. */
export const PREFIX_MIN_CHARS = 2;
/** Lexemes a prefix expands to at most (those in the most passages). */
export const PREFIX_MAX_EXPANSIONS = 16;
/** A prefix expansion weighs at most this much of the word typed (exact matches rank first). */
export const PREFIX_WEIGHT = 0.5;
/** A stop word this short is taken as typed in full, not as the beginning of a word. */
const STOP_WORD_MAX_CHARS = 3;
/** People an operator's name (`from:alice`) may name at most. */
const MAX_PEOPLE = 200;

export interface AnalysedQuery {
  parsed: ParsedQuery;
  /** Lexemes of the words and phrases to rank. */
  lexemes: QueryLexeme[];
  /** Lexemes with positions of each text in `texts` (phrases, subjects, excluded words, words joined by OR). */
  positions: Map<string, Map<string, number[]>>;
  /** People named by from:/to:/with: values. */
  people: Map<string, { personIds: string[]; identifiers: string[] }>;
  /** The list persons (people.list_id) each list: value names. */
  lists: Map<string, string[]>;
  /** The lexeme of the last word typed as a whole word (null: none, or no prefix). */
  prefixLexeme: string | null;
  /** The last word is a stop word (no lexeme): a short one is not expanded (`of` is not `office` being typed). */
  prefixStop: boolean;
}

export interface QueryPlan {
  lexemes: QueryLexeme[];
  constraints: QueryConstraints;
  filters: SearchFilters;
  /** The operators contradict each other or the request's filters: nothing can match. */
  never: boolean;
  /** No lexeme to rank, but operators to hold: every document that holds them, newest first. */
  browse: boolean;
  /** What the vector leg embeds: the words and phrases ('' when there are none). */
  text: string;
  /** Lexemes left out by the term budget. */
  dropped: number;
  /** Lexemes the last word was expanded to. */
  expansions: string[];
  /** Phrases that raise a document's rank without being required (quotations in prose). */
  preferred: DocCondition[];
  /**
   * The identifiers, paths, hashes and addresses of the query, each as the phrase of its lexemes: required
   * while some document holds them all (they match as a whole first), left out when none does (then by parts).
   */
  identifiers: DocCondition[];
  /**
   * The identifiers' runs joined by underscores as whole terms (whole-terms.ts), each a condition: required
   * first, before the phrases of `identifiers` alone (`accepted_at` is not "accepted at"); also ranked.
   */
  wholes: DocCondition[];
  /**
   * The query's terms are exact: an identifier, a path, a hash, an address or a phrase. The vector leg adds no
   * document to such a query (a hash's nearest passages are noise): what holds its terms is the answer.
   */
  exact: boolean;
  /** The query has operators or conditions (from:, after:, -word, OR with a phrase…). */
  operators: boolean;
}

/** Texts whose positions a term needs as a condition. */
function conditionText(t: QueryTerm): string | null {
  if (t.kind === 'word' || t.kind === 'phrase') return t.text;
  if (t.kind === 'field' && t.field === 'subject') return t.value;
  return null;
}

/** Values naming people: the operator's canonical identifiers, and people whose name or address begins so. */
async function peopleNamed(db: Queryable, value: string, phoneRegion: string): Promise<{ personIds: string[]; identifiers: string[] }> {
  const identifiers = canonicalLookupValues(value, phoneRegion);
  const name = value.trim().toLowerCase();
  const like = name.replace(/[\\%_]/g, (c) => `\\${c}`);
  const r = await db.query<{ person_id: string }>(
    `SELECT person_id::text AS person_id FROM person_identifiers WHERE value_canonical = ANY($1::text[])
     UNION SELECT person_id::text FROM people WHERE person_id::text = ANY($1::text[])
     UNION (SELECT person_id::text FROM people WHERE length($2) >= 2 AND display_name ILIKE '%' || $2 || '%' LIMIT ${MAX_PEOPLE})
     UNION (SELECT person_id::text FROM person_identifiers WHERE length($2) >= 2 AND strpos($3, '@') = 0 AND value_canonical LIKE $2 || '@%' LIMIT ${MAX_PEOPLE})`,
    [identifiers, like, name],
    { name: 'memex_search_people_named' },
  );
  return { personIds: r.rows.map((x) => x.person_id), identifiers };
}

/** The persons that are the list `value` names (its id, its name part, or its address), issue 40. */
async function listPersons(db: Queryable, value: string): Promise<string[]> {
  const r = await db.query<{ person_id: string }>(
    `SELECT person_id::text AS person_id FROM people
      WHERE list_id IS NOT NULL AND merged_into IS NULL AND (list_id = $1 OR split_part(list_id, '.', 1) = $1) LIMIT ${MAX_PEOPLE}`,
    [value],
    { name: 'memex_search_list_persons' },
  );
  return r.rows.map((x) => x.person_id);
}

export async function analyseQuery(
  parsed: ParsedQuery,
  q: string,
  analyzer: QueryAnalyzer,
  db: Queryable,
  phoneRegion = 'US',
): Promise<AnalysedQuery> {
  const texts = new Set<string>();
  for (const g of parsed.groups) {
    for (const t of g) {
      const text = conditionText(t);
      // A word alone is ranked, not required; joined by OR to a phrase or operator it is a condition.
      if (text !== null && !(t.kind === 'word' && g.every((x) => x.kind === 'word'))) texts.add(text);
    }
  }
  // Identifiers, paths, hashes and addresses among the words: matched as a whole (their parts as a phrase).
  for (const w of identifierWords(parsed)) texts.add(w);
  for (const t of [...parsed.excluded, ...parsed.preferred]) {
    const text = conditionText(t);
    if (text !== null) texts.add(text);
  }
  const names = new Set<string>();
  for (const t of [...parsed.groups.flat(), ...parsed.excluded]) if (t.kind === 'field' && t.field !== 'subject') names.add(t.value);
  const listValues = new Set<string>();
  for (const t of [...parsed.groups.flat(), ...parsed.excluded]) if (t.kind === 'list') listValues.add(t.value);
  const subjects = parsed.groups.flat().flatMap((t) => (t.kind === 'field' && t.field === 'subject' ? [t.value] : []));
  // Ranked: the words and phrases, and subjects (plain queries exactly as before the query language).
  // A soft query (prose, or a strict one relaxed) ranks every word as written, as a plain one does.
  const ranked = isPlain(parsed) || parsed.soft ? q : [parsed.text, ...subjects].join(' ').trim();
  const textList = [...texts];
  const prefix = parsed.prefix !== null && parsed.prefix.length >= PREFIX_MIN_CHARS ? parsed.prefix : null;
  const [lexemes, positions, people, prefixLexemes, lists] = await Promise.all([
    ranked === '' ? [] : analyzer.lexemes(ranked),
    textList.length === 0 ? [] : analyzer.positions(textList),
    Promise.all([...names].map(async (n) => [n, await peopleNamed(db, n, phoneRegion)] as const)),
    prefix === null ? [] : analyzer.lexemes(prefix),
    Promise.all([...listValues].map(async (v) => [v, await listPersons(db, v)] as const)),
  ]);
  return {
    parsed,
    lexemes,
    positions: new Map(textList.map((t, i) => [t, positions[i]])),
    people: new Map(people),
    lists: new Map(lists),
    prefixLexeme: prefixLexemes.length === 1 ? prefixLexemes[0].term : null,
    prefixStop: prefix !== null && prefixLexemes.length === 0,
  };
}

/** The words of a strict query that are identifiers, paths, hashes or addresses (query-parse.ts `exactKind`), once each. */
function identifierWords(parsed: ParsedQuery): string[] {
  if (parsed.soft) return [];
  const words = parsed.groups.flatMap((g) => (g.every((t) => t.kind === 'word') ? g : [])) as { kind: 'word'; text: string }[];
  return [...new Set(words.filter((t) => exactKind(t.text) !== null).map((t) => t.text))];
}

/** Lexemes at their positions, as a phrase condition (relative positions kept: stop words leave their gap). */
function phraseCondition(pos: Map<string, number[]> | undefined, title: boolean): DocCondition | null {
  const terms = [...(pos ?? new Map<string, number[]>())].flatMap(([term, at]) => at.map((a) => ({ term, at: a })));
  if (terms.length === 0) {
    // Lexemes without positions (never from to_tsvector) or none at all (stop words only): no condition.
    const bare = [...(pos?.keys() ?? [])];
    return bare.length > 0 ? { kind: 'terms', terms: bare, title } : null;
  }
  return { kind: 'phrase', terms: terms.sort((a, b) => a.at - b.at), title };
}

/** How many file or host names one excluded word may take out with it. */
const EXCLUDED_COMPOUNDS_MAX = 200;

/**
 * The index's file and host names that begin with an excluded word as their first part: PostgreSQL's parser keeps
 * `pEpkey.asc` or `setup.c/x` whole (no lexeme `pepkey`), so `-pepkey` would leave the attachment a positive
 * `pepkey` finds by its prefix (issue 46).
 */
function compoundsOf(word: string, pos: Map<string, number[]> | undefined, index: LexicalIndex): string[] {
  const starts = new Set([word.toLowerCase(), ...(pos?.keys() ?? [])]);
  if ([...starts].some((w) => /[./]/.test(w))) return []; // the word is a compound itself: matched as written
  const prefixes = [...starts].flatMap((w) => [`${w}.`, `${w}/`]);
  return index.expand(prefixes, EXCLUDED_COMPOUNDS_MAX).map((e) => e.term);
}

/** Endings the English stemmer removes (Snowball's suffixes, their common spellings). */
const STEMMED_ENDINGS = [
  'ance', 'ence', 'ances', 'ences', 'ation', 'ations', 'ational', 'ing', 'ings', 'ed', 'er', 'ers', 'es', 'ies',
  'ied', 'ness', 'ment', 'ments', 'able', 'ible', 'ity', 'ities', 'ly', 'ous', 'ive', 'ives', 'al', 'als', 'ful',
  'ism', 'ist', 'ists', 'ize', 'ise', 'ized', 'ised', 'izing', 'ising', 'ization', 'isation', 'ent', 'ant', 'ic',
  'ical', 'ement', 'ion', 'ions', 'ate', 'ated', 'ates', 'iti', 'li', 'y', 'e', 's',
];

/** Whether `rest` (letters typed past a stem) can be the start of an ending the stemmer removes. */
function couldBeEnding(rest: string): boolean {
  return STEMMED_ENDINGS.some((e) => e.startsWith(rest));
}

export function planQuery(a: AnalysedQuery, requested: SearchFilters, index: LexicalIndex): QueryPlan {
  const { parsed } = a;
  const f: SearchFilters = { ...requested };
  let never = false;
  const same = <T>(cur: T | undefined, v: T): T => {
    if (cur !== undefined && cur !== v) never = true;
    return v;
  };
  // Date bounds: the latest start and the earliest end win; an end from the query is exclusive.
  const after = (start: string) => {
    if (f.start === undefined || start > f.start) f.start = start;
  };
  const before = (end: string) => {
    if (f.end === undefined || end < f.end || (end === f.end && !f.endExclusive)) {
      f.end = end;
      f.endExclusive = true;
    }
  };
  const condition = (t: QueryTerm): DocCondition | null | 'filter' => {
    switch (t.kind) {
      case 'word':
        return phraseCondition(a.positions.get(t.text), false);
      case 'phrase':
        return phraseCondition(a.positions.get(t.text), false);
      case 'field': {
        if (t.field === 'subject') return phraseCondition(a.positions.get(t.value), true);
        const who = a.people.get(t.value) ?? { personIds: [], identifiers: [] };
        return { kind: 'person', ...who, role: t.field === 'from' ? 'sender' : t.field === 'to' ? 'recipient' : undefined };
      }
      case 'list':
        // The list's own address on the message (its person), or the List-Id the message came with (index-sync.ts).
        return { kind: 'person', personIds: a.lists.get(t.value) ?? [], identifiers: [`list:${t.value}`] };
      case 'tag':
        // The document's tags and its conversation's, as the index holds them (index-sync.ts, tag-names.ts).
        return { kind: 'person', personIds: [], identifiers: [(t.tree ? TAG_TREE_IDENT : TAG_IDENT) + t.value] };
      case 'type': {
        // A family (`email`) or an exact type; with another type filter, what both allow.
        const types = sourceTypesOf(t.value);
        const cur = sourceTypesFilter(f);
        f.source_types = cur === undefined ? types : cur.filter((x) => types.includes(x));
        if (f.source_types.length === 0) never = true;
        f.source_type ??= t.value;
        return 'filter';
      }
      case 'attachment':
        // A message with attachments: a stored file (one attachment, itself) is not one (issue 46).
        f.has_attachments = same(f.has_attachments, true);
        f.not_source_types = [...new Set([...(f.not_source_types ?? []), ...sourceTypesOf('file')])];
        return 'filter';
      case 'thread':
        f.thread_id = same(f.thread_id, t.id);
        return 'filter';
      case 'date':
        if (t.op !== 'before') after(t.start);
        if (t.op === 'before') before(t.start);
        else if (t.op === 'on') before(t.end);
        return 'filter';
    }
  };

  const all: DocCondition[][] = [];
  for (const g of parsed.groups) {
    if (g.every((t) => t.kind === 'word')) continue; // ranked, not required
    const alternatives: DocCondition[] = [];
    let always = false;
    for (const t of g) {
      const c = condition(t);
      if (c === 'filter') continue; // operators on filters hold with AND even when joined by OR
      if (c === null) always = true; // a phrase of stop words: holds for every document
      else alternatives.push(c);
    }
    if (!always && alternatives.length > 0) all.push(alternatives);
  }
  const none: DocCondition[] = [];
  for (const t of parsed.excluded) {
    switch (t.kind) {
      case 'attachment':
        f.has_attachments = same(f.has_attachments, false);
        break;
      case 'date':
        // Not before D: from D on; not after D: before D; not on D: not expressible as a range, left out.
        if (t.op === 'before') after(t.start);
        else if (t.op === 'after') before(t.start);
        break;
      case 'type':
      case 'thread':
        break; // not a range or a value the filters can exclude; left out (docs/search.md)
      default: {
        const c = condition(t);
        if (c !== null && c !== 'filter') none.push(c);
        if (t.kind === 'word') {
          const compounds = compoundsOf(t.text, a.positions.get(t.text), index);
          if (compounds.length > 0) none.push({ kind: 'terms', terms: compounds });
        }
      }
    }
  }
  if (f.start !== undefined && f.end !== undefined && (f.endExclusive ? f.start >= f.end : f.start > f.end)) never = true;

  // The term budget: the most informative lexemes (highest idf); those no live passage has go first.
  let lexemes = a.lexemes;
  let dropped = 0;
  if (lexemes.length > QUERY_TERM_BUDGET) {
    const idf = new Map(lexemes.map((l) => [l.term, index.idf(l.term) ?? -1]));
    const kept = new Set(
      [...lexemes]
        .sort((x, y) => idf.get(y.term)! - idf.get(x.term)! || (x.term < y.term ? -1 : 1))
        .slice(0, QUERY_TERM_BUDGET)
        .map((l) => l.term),
    );
    dropped = lexemes.length - kept.size;
    lexemes = lexemes.filter((l) => kept.has(l.term));
  }

  // Prefix on the last word: lexemes beginning with what was typed (or with its stem), and the stems
  // a few letters shorter that the word typed so far begins with ('insuranc' -> 'insur').
  const expansions: string[] = [];
  const raw = parsed.prefix?.toLowerCase() ?? '';
  if (raw.length >= PREFIX_MIN_CHARS && !(a.prefixStop && raw.length <= STOP_WORD_MAX_CHARS)) {
    const have = new Set(lexemes.map((l) => l.term));
    const exact = a.prefixLexeme;
    const found = index.expand([raw, ...(exact !== null && exact !== raw ? [exact] : [])], PREFIX_MAX_EXPANSIONS).map((e) => e.term);
    for (let k = Math.max(3, raw.length - 3); k < raw.length; k++) {
      const stem = raw.slice(0, k);
      // Only where the letters past the stem can begin an ending the stemmer takes off ('insur' + 'anc'
      // of 'ance'): 'lisbonzzq' is no word being typed towards 'lisbon'.
      if (index.idf(stem) !== null && couldBeEnding(raw.slice(k))) found.push(stem);
    }
    const exactIdf = exact === null ? null : index.idf(exact);
    for (const term of found) {
      if (have.has(term) || expansions.includes(term) || expansions.length >= PREFIX_MAX_EXPANSIONS) continue;
      expansions.push(term);
      const idf = index.idf(term) ?? 1;
      // Below the word itself when it is a word the index knows; a word still being typed has only its expansions.
      const weight = exactIdf === null ? 1 : PREFIX_WEIGHT * Math.min(1, exactIdf / idf);
      lexemes = [...lexemes, { term, qtf: 1, weight }];
    }
  }

  const preferred = parsed.preferred.flatMap((t) => {
    const c = phraseCondition(a.positions.get((t as { text: string }).text), false);
    return c === null ? [] : [c];
  });
  const constraints = { all, none };
  const operators = all.length > 0 || none.length > 0 || JSON.stringify(f) !== JSON.stringify(requested);
  const identifiers = identifierWords(parsed).flatMap((w) => {
    const c = phraseCondition(a.positions.get(w), false);
    return c === null ? [] : [c];
  });
  // Whole terms: required when some document holds them (pipeline.ts), and ranked by their own weight.
  const wholeTerms = [...new Set(identifierWords(parsed).flatMap(wholeTermsOfWord))];
  const wholes = wholeTerms.map((t): DocCondition => ({ kind: 'terms', terms: [t] }));
  for (const term of wholeTerms) if (index.idf(term) !== null) lexemes = [...lexemes, { term, qtf: 1 }];
  const phrases = !parsed.soft && parsed.groups.some((g) => g.some((t) => t.kind === 'phrase' || (t.kind === 'field' && t.phrase)));
  return {
    lexemes,
    constraints,
    filters: f,
    never,
    browse: lexemes.length === 0 && operators,
    text: parsed.text,
    dropped,
    expansions,
    preferred,
    identifiers,
    wholes,
    exact: identifiers.length > 0 || phrases,
    operators,
  };
}
