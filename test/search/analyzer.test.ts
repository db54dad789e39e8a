/**
 * Query lexemes from remembered words (src/search/analyzer.ts) must be exactly what PostgreSQL's
 * to_tsvector('english', q) gives for the whole query, or a search would miss documents the index
 * holds. Random queries built from real words, stop words, upper case and every separator the
 * word path accepts are compared with PostgreSQL's answer for the whole string, on both backends.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { QueryAnalyzer } from '../../src/search/analyzer.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let t: TestDatabase;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

const WORDS = (
  'the and of to a in is it you that he was for on are with as I his they be at one have this from ' +
  'running runs ran meetings meeting invoice invoices flight flights hotel budgets reported reporting ' +
  'generously generous happiness skies sky dying lying agreed feed abilities universal university ' +
  'Caresses ponies ties caress cats QUICK Brown foxes jumped over lazy dogs x y z ab mr mrs'
).split(' ');
const SEPARATORS = [' ', '  ', ', ', ' ; ', '! ', '? ', ' (', ') ', '"', '\t', '\n'];

function rng(seed: number) {
  return () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

describe('QueryAnalyzer: remembered words give what to_tsvector gives for the whole query', () => {
  it('on 400 random plain queries (repeats, stop words, case, separators)', async () => {
    const rnd = rng(11);
    const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
    const analyzer = new QueryAnalyzer(t.db);
    for (let i = 0; i < 400; i++) {
      let q = pick(['', ' ', '"', '(']);
      const n = 1 + Math.floor(rnd() * 6);
      for (let j = 0; j < n; j++) q += pick(WORDS) + (j < n - 1 ? pick(SEPARATORS) : pick(['', '?', '!', ')', '"']));
      expect(await analyzer.lexemes(q), q).toEqual(await analyzer.whole(q));
    }
    // Most of those were answered without asking PostgreSQL.
    expect(analyzer.counters.remembered).toBeGreaterThan(300);
  });

  it('a query of remembered words makes no round trip; other token kinds go to PostgreSQL whole', async () => {
    const analyzer = new QueryAnalyzer(t.db);
    await analyzer.lexemes('the budget meeting tomorrow');
    const before = { ...analyzer.counters };
    expect(await analyzer.lexemes('Tomorrow, the BUDGET meeting?')).toEqual([
      { term: 'budget', qtf: 1 },
      { term: 'meet', qtf: 1 },
      { term: 'tomorrow', qtf: 1 },
    ]);
    expect(analyzer.counters).toEqual({ remembered: before.remembered + 1, asked: before.asked });
    for (const q of ["O'Reilly's e-mail", 'bob@example.com invoice', 'flight 2024-03-10', 'café crème', 'well-known state']) {
      const asked = analyzer.counters.asked;
      expect(await analyzer.lexemes(q), q).toEqual(await analyzer.whole(q));
      expect(analyzer.counters.asked, q).toBe(asked + 2);
    }
  });

  it('a repeated word counts as often as PostgreSQL counts its positions', async () => {
    const analyzer = new QueryAnalyzer(t.db);
    const q = 'cats cat Cat, CATS dog';
    expect(await analyzer.lexemes(q)).toEqual(await analyzer.whole(q));
    expect(await analyzer.lexemes(q)).toContainEqual({ term: 'cat', qtf: 4 });
  });
});

describe('QueryAnalyzer.positions: phrase positions from remembered words are PostgreSQL\'s', () => {
  it('on 200 random plain phrases and a few that go to PostgreSQL whole', async () => {
    const rnd = rng(23);
    const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
    const analyzer = new QueryAnalyzer(t.db);
    const texts: string[] = ['e-mail from bob.smith@example.com', "don't stop", 'version 1.2.3 of the app'];
    for (let i = 0; i < 200; i++) {
      const n = 1 + Math.floor(rnd() * 5);
      texts.push(Array.from({ length: n }, () => pick(WORDS)).join(pick([' ', ', ', ' ; '])));
    }
    const got = await analyzer.positions(texts);
    const r = await t.db.query<{ i: number; lexeme: string; positions: number[] | null }>(
      `SELECT t.i::int AS i, v.lexeme, v.positions::int[] AS positions
         FROM unnest($1::text[]) WITH ORDINALITY AS t(s, i), unnest(to_tsvector('english', t.s)) AS v`,
      [texts],
    );
    const expected = texts.map(() => new Map<string, number[]>());
    for (const row of r.rows) expected[row.i - 1].set(row.lexeme, row.positions ?? []);
    texts.forEach((text, i) => expect(new Map([...got[i]].sort()), text).toEqual(new Map([...expected[i]].sort())));
  });
});
