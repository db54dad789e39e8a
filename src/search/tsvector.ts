/**
 * Reads PostgreSQL's text output of a tsvector (`'cat':16,17 'it''s':3 'word'`) into term
 * frequencies, so the search index gets exactly the lexemes (english stemming, stop words) that
 * PostgreSQL produced, without a second text parser in JavaScript.
 *
 * Format (src/backend/utils/adt/tsvector.c, tsvectorout): lexemes are single-quoted with `'` doubled
 * and `\` escaped as `\\`; an optional `:` follows with comma-separated positions, each a number
 * with an optional weight letter A-C. A lexeme stored without positions counts once.
 *
 * `positions`, when given, receives each lexeme's word positions (1-based, ascending, as stored:
 * PostgreSQL keeps at most 256 per lexeme and caps them at 16383); phrases are matched on these.
 */
export function parseTsvector(text: string | null | undefined, positions?: Map<string, number[]>): Map<string, number> {
  const out = new Map<string, number>();
  if (!text) return out;
  let i = 0;
  const n = text.length;
  while (i < n) {
    while (i < n && text[i] === ' ') i++;
    if (i >= n) break;
    if (text[i] !== "'") throw new Error(`tsvector: expected a quote at ${i}`);
    i++;
    let lexeme = '';
    for (;;) {
      if (i >= n) throw new Error('tsvector: unterminated lexeme');
      const ch = text[i];
      if (ch === '\\') {
        lexeme += text[i + 1];
        i += 2;
      } else if (ch === "'") {
        if (text[i + 1] === "'") {
          lexeme += "'";
          i += 2;
        } else {
          i++;
          break;
        }
      } else {
        lexeme += ch;
        i++;
      }
    }
    let tf = 1;
    if (text[i] === ':') {
      i++;
      tf = 1;
      const list = positions ? (positions.get(lexeme) ?? []) : null;
      let pos = 0;
      while (i < n && text[i] !== ' ') {
        const c = text.charCodeAt(i);
        if (c === 44 /* , */) {
          tf++;
          if (list && pos > 0) list.push(pos);
          pos = 0;
        } else if (c >= 48 && c <= 57) {
          pos = pos * 10 + (c - 48);
        }
        i++;
      }
      if (list) {
        if (pos > 0) list.push(pos);
        positions!.set(lexeme, list);
      }
    }
    out.set(lexeme, (out.get(lexeme) ?? 0) + tf);
  }
  return out;
}
