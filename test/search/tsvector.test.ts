/**
 * parseTsvector against PostgreSQL's own output: for every input the tsvector text comes from the
 * database (the same `::text` the index builder reads), and the expected term frequencies come from
 * PostgreSQL too (`unnest(tsvector)`: one row per lexeme with its positions; a lexeme stored without
 * positions counts once).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTsvector } from '../../src/search/tsvector.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

/** `expr` is a tsvector expression over $1..; returns its text form and PostgreSQL's own term counts. */
async function fromPostgres(expr: string, params: unknown[]): Promise<{ text: string; expected: Map<string, number> }> {
  const text = (await t.db.query<{ t: string }>(`SELECT (${expr})::text AS t`, params)).rows[0].t;
  const rows = (
    await t.db.query<{ lexeme: string; n: number }>(
      `SELECT lexeme, coalesce(array_length(positions, 1), 1)::int AS n FROM unnest(${expr})`,
      params,
    )
  ).rows;
  return { text, expected: new Map(rows.map((r) => [r.lexeme, r.n])) };
}

const sorted = (m: Map<string, number>) => [...m.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

describe("parseTsvector reads PostgreSQL's to_tsvector('english', …) output", () => {
  const inputs: [string, string][] = [
    ['apostrophes', "O'Reilly's book isn't Bob's, it's Dan's"],
    ['backslashes', 'C:\\Users\\bob\\file.txt and a\\\\b and \\ alone'],
    ['e-mail addresses', 'mail bob.smith+tag@example.co.uk or O.Neil@Example.COM now'],
    ['URLs (the path keeps its quotes)', "see https://example.com/it's/a?q=1&x=y#frag and http://ex.com/a''b ok"],
    ['hyphenated words', 'state-of-the-art well-known co-operate e-mail'],
    ['repeated words', 'cat cat cat dog cat the cat'],
    ['unicode', 'café naïve résumé Ærø 東京 Straße crème brûlée'],
    ['numbers and versions', 'version 1.2.3 costs $4,500.00 on 2024-03-10 at 10:30'],
    ['punctuation only', "'' '\\' -- ;;"],
    ['stop words only', 'the and of to'],
    ['empty string', ''],
  ];

  it.each(inputs)('%s', async (_name, input) => {
    const { text, expected } = await fromPostgres(`to_tsvector('english', $1)`, [input]);
    expect(sorted(parseTsvector(text))).toEqual(sorted(expected));
  });

  it.each(inputs)('%s: word positions as PostgreSQL stores them (phrases are matched on these)', async (_name, input) => {
    const text = (await t.db.query<{ t: string }>(`SELECT to_tsvector('english', $1)::text AS t`, [input])).rows[0].t;
    const rows = (
      await t.db.query<{ lexeme: string; positions: number[] | null }>(
        `SELECT lexeme, positions::int[] AS positions FROM unnest(to_tsvector('english', $1))`,
        [input],
      )
    ).rows;
    const positions = new Map<string, number[]>();
    parseTsvector(text, positions);
    expect([...positions.entries()].sort(([a], [b]) => (a < b ? -1 : 1))).toEqual(
      rows.filter((r) => r.positions).map((r) => [r.lexeme, r.positions]).sort(([a], [b]) => ((a as string) < (b as string) ? -1 : 1)),
    );
  });

  it('the tricky inputs really reach the escapes: a doubled quote in a URL lexeme', async () => {
    const { text, expected } = await fromPostgres(`to_tsvector('english', $1)`, ["see https://example.com/it's/x"]);
    expect(text).toContain("''");
    const parsed = parseTsvector(text);
    expect([...parsed.keys()].some((k) => k.includes("'"))).toBe(true);
    expect(sorted(parsed)).toEqual(sorted(expected));
  });

  it('a word repeated past the positions PostgreSQL keeps per lexeme counts what PostgreSQL kept', async () => {
    const input = `${'budget '.repeat(300)} review ${'cat '.repeat(40)}`;
    const { text, expected } = await fromPostgres(`to_tsvector('english', $1)`, [input]);
    const parsed = parseTsvector(text);
    expect(sorted(parsed)).toEqual(sorted(expected));
    // PostgreSQL caps the positions of one lexeme (255 on current versions), the parser follows.
    expect(parsed.get('budget')).toBe(expected.get('budget'));
    expect(parsed.get('budget')).toBeLessThan(300);
    expect(parsed.get('cat')).toBe(40);
    expect(parsed.get('review')).toBe(1);
  });

  it('weighted positions (setweight) count like plain ones', async () => {
    const { text, expected } = await fromPostgres(
      `setweight(to_tsvector('english', $1), 'A') || setweight(to_tsvector('english', $2), 'C')`,
      ['cat dog cat', 'cat bird'],
    );
    expect(text).toMatch(/\d[AC]/);
    expect(sorted(parseTsvector(text))).toEqual(sorted(expected));
  });

  it('lexemes without positions (strip) count once each', async () => {
    const { text, expected } = await fromPostgres(`strip(to_tsvector('english', $1))`, ['a b c cat dog cat cat']);
    expect(text).not.toContain(':');
    expect(sorted(parseTsvector(text))).toEqual(sorted(expected));
    expect(sorted(parseTsvector(text))).toEqual([
      ['b', 1],
      ['c', 1],
      ['cat', 1],
      ['dog', 1],
    ]);
  });

  it('lexemes with a backslash, a quote, a space, a colon (array_to_tsvector, no positions)', async () => {
    const lexemes = ['back\\slash', "it's", "''", 'x y', 'q:1', '\\', "\\'", 'trailing\\', 'plain'];
    const { text, expected } = await fromPostgres(`array_to_tsvector($1::text[])`, [lexemes]);
    expect(text).toContain('\\\\');
    const parsed = parseTsvector(text);
    expect(sorted(parsed)).toEqual(sorted(expected));
    expect(new Set(parsed.keys())).toEqual(new Set(lexemes));
  });

  it('mixed: escaped lexemes with positions (tsvector input)', async () => {
    const { text, expected } = await fromPostgres(`$1::tsvector`, ["'a\\\\b':1,5 'it''s':3A 'x y':2 plain:4,6,7"]);
    const parsed = parseTsvector(text);
    expect(sorted(parsed)).toEqual(sorted(expected));
    expect(parsed.get('a\\b')).toBe(2);
    expect(parsed.get("it's")).toBe(1);
    expect(parsed.get('plain')).toBe(3);
  });

  it('NULL (a document without a title) and the empty tsvector give no terms', async () => {
    const r = await t.db.query<{ t: string | null }>(`SELECT to_tsvector('english', NULL::text)::text AS t`);
    expect(parseTsvector(r.rows[0].t).size).toBe(0);
    expect(parseTsvector('').size).toBe(0);
    expect(parseTsvector(undefined).size).toBe(0);
  });
});
