/**
 * Quoted phrases as written (issue 48): the index matches a phrase by its lexemes, stemmed and without its stop
 * words (`"Agent settings in"` holds for "agent setting in"), as PostgreSQL's phrase search does; notmuch's
 * quoted phrases are not stemmed. Both stay found, and the documents whose title or text holds the phrase as
 * it was typed (case aside, its words in order, whitespace between them) rank above those that hold only its
 * stems. The check reads the texts of the best candidates only: at most LITERAL_VERIFY_MAX documents and the
 * first LITERAL_TEXT_CHARS characters of each, in one statement.
 */
import type { Queryable } from '../db/types.ts';
import type { ParsedQuery } from './query-parse.ts';

/** Candidates whose texts are read at most. */
export const LITERAL_VERIFY_MAX = 200;
/** Characters of a document's text searched for the phrase. */
export const LITERAL_TEXT_CHARS = 1_000_000;

/** The quoted phrases a strict query requires (each a group of its own): what is verified as written. */
export function literalPhrases(parsed: ParsedQuery): string[] {
  if (parsed.soft) return [];
  const out = new Set<string>();
  for (const g of parsed.groups) {
    if (g.length !== 1 || g[0].kind !== 'phrase') continue;
    const text = g[0].text.trim();
    if (text !== '') out.add(text);
  }
  return [...out];
}

/**
 * A phrase as a PostgreSQL regular expression (for `~*`): its words as written, in order, whitespace between
 * them, not inside a longer word (`"set info"` is not in `irq_domain_set_info`).
 */
export function literalPattern(phrase: string): string {
  const words = phrase.split(/\s+/).filter(Boolean).map((w) => w.replace(/[\\^$.|?*+()[\]{}]/g, '\\$&'));
  return `(^|[^[:alnum:]_])${words.join('[[:space:]]+')}([^[:alnum:]_]|$)`;
}

/** Of these documents, those whose title or text holds every phrase as written. */
export async function literalHolders(db: Queryable, docIds: string[], phrases: string[]): Promise<Set<string>> {
  if (docIds.length === 0 || phrases.length === 0) return new Set();
  const r = await db.query<{ doc_id: string }>(
    `SELECT d.doc_id::text AS doc_id FROM documents d
      WHERE d.doc_id = ANY($1::uuid[])
        AND NOT EXISTS (SELECT 1 FROM unnest($2::text[]) AS p(re)
                         WHERE NOT (coalesce(d.title, '') ~* p.re OR left(d.text, $3) ~* p.re))`,
    [docIds.slice(0, LITERAL_VERIFY_MAX), phrases.map(literalPattern), LITERAL_TEXT_CHARS],
    { name: 'memex_search_literal' },
  );
  return new Set(r.rows.map((x) => x.doc_id));
}
