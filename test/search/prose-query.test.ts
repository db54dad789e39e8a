/**
 * Queries as people write them (issue 46): a pasted paragraph is ranked by its words, its quotation a preference
 * rather than a mandatory phrase (ArguAna's 146 quoting queries scored 0.06 as written against 0.46 unquoted,
 * 9 found nothing), and a strict query that matches nothing says so and offers what matches its words. Operators
 * typed as a query keep their meaning (query-language.test.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseQuery, readsAsProse } from '../../src/search/query-parse.ts';
import { doc, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const PROSE =
  'Cities must act now, because the evidence is overwhelming: as one report put it, "sea level rise is accelerating faster ' +
  'than any model predicted" - and coastal flooding will follow. Not acting is a choice too.';

/** A SciFact-like claim (test query 1114's shape): one sentence of 20 words, its quotation not written so in the abstract. */
const CLAIM =
  'Surfactin producing cells and exopolymer producing cells cooperate to generate "Van Gogh bundles" that have sliding abilities on specialized media.';

describe('reading a query as prose', () => {
  it('tells a pasted paragraph from a query typed as one', () => {
    expect(readsAsProse(PROSE)).toBe(true);
    expect(readsAsProse('"sea level rise" -flooding from:anna before:2026-01-01')).toBe(false);
    expect(readsAsProse('sea level rise coastal flooding cities evidence report model predicted faster choice')).toBe(false);
    // A claim as SciFact writes them: one long sentence with its full stop, a term in quotes.
    expect(readsAsProse(CLAIM)).toBe(true);
    expect(readsAsProse('"sea level rise" coastal flooding cities evidence report model predicted faster.')).toBe(false);
  });

  it('ranks every word of prose, prefers its quotation and requires nothing', () => {
    const p = parseQuery(PROSE);
    expect(p.soft).toBe(true);
    expect(p.excluded).toEqual([]);
    expect(p.groups.every((g) => g.length === 1 && g[0].kind === 'word')).toBe(true);
    expect(p.preferred).toEqual([{ kind: 'phrase', text: 'sea level rise is accelerating faster than any model predicted' }]);
    const typed = parseQuery('"sea level rise" -flooding');
    expect(typed.soft).toBe(false);
    expect(typed.groups).toEqual([[{ kind: 'phrase', text: 'sea level rise' }]]);
    expect(typed.excluded).toEqual([{ kind: 'word', text: 'flooding' }]);
  });
});

describe('GET /v1/search with prose and with strict queries that match nothing', () => {
  let g: SearchGateway;
  const D: Record<string, string> = {};
  const ids = (res: any) => res.json().hits.filter((h: any) => !h.context).map((h: any) => h.document_id);

  beforeAll(async () => {
    g = await startSearchGateway();
    const add = async (key: string, text: string) => (D[key] = (await g.ingest(doc(text))).doc_id);
    await add('quoting', 'The report found that sea level rise is accelerating faster than any model predicted, so coastal cities must plan.');
    await add('words', 'Coastal flooding in cities: evidence that sea level rise will force a choice between acting and retreating.');
    await add('other', 'A recipe for lemon cake with cream and berries.');
    await add('abstract', 'Bacillus subtilis colonies spread by sliding motility: surfactin producers and matrix (exopolymer) producers ' +
      'organize into bundles of aligned cell chains, called van Gogh filaments, that migrate away from the colony on soft media.');
  });
  afterAll(async () => g.close());

  it('a pasted paragraph finds the documents sharing its words, the one holding its quotation first', async () => {
    const res = await g.get(q({ q: PROSE, k: 10 }));
    expect(res.statusCode).toBe(200);
    const found = ids(res);
    expect(found[0]).toBe(D.quoting);
    expect(found).toContain(D.words);
    expect(found).not.toContain(D.other);
    expect(res.json().relaxed).toBeUndefined();
  });

  it('prose whose quotation no document holds still finds what shares its words', async () => {
    const misquoted = PROSE.replace('faster than any model predicted', 'more quickly than anyone had feared');
    const found = ids(await g.get(q({ q: misquoted, k: 10 })));
    expect(found).toContain(D.quoting);
    expect(found).toContain(D.words);
  });

  it('a long one-sentence claim with a quotation the abstract does not hold verbatim still fills the page (SciFact-like)', async () => {
    const res = await g.get(q({ q: CLAIM, k: 10 }));
    expect(res.statusCode).toBe(200);
    const found = ids(res);
    expect(found[0]).toBe(D.abstract);
    expect(res.json().total).toBeGreaterThanOrEqual(1);
    expect(res.json().relaxed).toBeUndefined();
  });

  it('a strict query that matches nothing says so and offers what matches its words', async () => {
    const res = await g.get(q({ q: '"coastal cities flooding" -cake', k: 10 }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    // The answer as written stays empty; the relaxed reading is offered beside it.
    expect(body.total).toBe(0);
    expect(body.hits).toEqual([]);
    expect(body.relaxed.note).toMatch(/no document matches the query as written/);
    expect(body.relaxed.total).toBeGreaterThanOrEqual(2);
    expect(body.relaxed.hits.map((h: any) => h.document_id)).toContain(D.words);
    // A strict query with matches is answered as written.
    const exact = (await g.get(q({ q: '"sea level rise is accelerating"', k: 10 }))).json();
    expect(exact.relaxed).toBeUndefined();
    expect(exact.hits.map((h: any) => h.document_id)).toEqual([D.quoting]);
    // Nothing to relax: words alone that match nothing stay an empty answer.
    const none = (await g.get(q({ q: 'zanzibar', k: 10 }))).json();
    expect(none.total).toBe(0);
    expect(none.relaxed).toBeUndefined();
  });
});
