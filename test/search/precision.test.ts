/**
 * Exact queries with vectors present (issue 48 items 1 and 2): identifiers, paths, hashes, addresses,
 * phrases and operator queries are answered by what holds their terms, never padded by documents only
 * the vector leg found; an identifier matches as a whole before its parts; the same query gives the same
 * answer twice, also while the model is slower than the vector budget.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConceptEmbedder, doc, indexVectors, startSearchGateway, type SearchGateway } from './helpers.ts';

/** The model busy with an import: every query embedding takes longer than the vector budget. */
class BusyEmbedder extends ConceptEmbedder {
  override async embed(texts: string[]): Promise<number[][]> {
    await new Promise((r) => setTimeout(r, 200));
    return super.embed(texts);
  }
}

const HASH = '3f2a9c1b7e4d';
const ADDRESS = 'ralf@linux-mips.org';

let g: SearchGateway;
let busy: SearchGateway;
const D: Record<string, string> = {};

async function seed(gw: SearchGateway, embedder: ConceptEmbedder, ids: Record<string, string>) {
  const mail = (text: string, over: Record<string, unknown> = {}) => gw.ingest(doc(text, { source_type: 'email', ...over }));
  ids.identifier = (
    await mail(`MIPS: Octeon: call irq_domain_set_info() from the car driver\n\nFixes: ${HASH}\n\n arch/mips/kernel/setup.c | 3 +`, {
      content_timestamp: '2025-07-01T10:00:00Z',
    })
  ).doc_id;
  ids.address = (await mail(`Reported-by: ${ADDRESS}\nThe car port boots again.`)).doc_id;
  ids.phrase = (await mail('the car repair took a week, octeon board included', { content_timestamp: '2025-08-01T10:00:00Z' })).doc_id;
  ids.dotted = (await mail('set CONFIG in kconfig.local and call os.path.join for the car image')).doc_id;
  // Its parts, apart: matched only when the whole is nowhere.
  for (let i = 0; i < 12; i++) {
    ids[`parts${i}`] = (await mail(`the irq handler ${i} sets a domain; see info on the set of car setup here`)).doc_id;
  }
  // Near the queries in meaning (automobile ~ car), holding none of their terms: what padded exact queries.
  for (let i = 0; i < 12; i++) {
    ids[`near${i}`] = (await mail(`automobile sedan vehicle ${i}`, { content_timestamp: '2025-09-01T10:00:00Z' })).doc_id;
  }
  // Identifiers whose parts are prose too (issue 48 item 2): a stop word part, UPPER_CASE.
  ids.acceptedAt = (await mail('migration 071 adds accepted_at to the invites table')).doc_id;
  ids.authToken = (await mail('export AUTH_TOKEN before starting memex serve')).doc_id;
  ids.authTokenLower = (await mail('the gateway reads auth_token from its environment')).doc_id;
  for (let i = 0; i < 12; i++) {
    ids[`prose${i}`] = (await mail(`the invite ${i} was accepted at noon, accepted at once; the auth token was rotated, auth token ${i} too`)).doc_id;
  }
  // A phrase as written, and its stems only (they hold "agent setting", more often).
  ids.literal = (await mail('open the Agent settings in the menu of the gateway')).doc_id;
  for (let i = 0; i < 4; i++) {
    ids[`stems${i}`] = (await mail(`agent setting in ${i}: the agent setting in the file, agent setting in the menu`)).doc_id;
  }
  // Near 'invoice' (a synonym group of the test embedder), holding no query's word.
  for (let i = 0; i < 3; i++) ids[`bill${i}`] = (await mail(`bill receipt ${i}`)).doc_id;
  await indexVectors(gw.db, embedder);
}

async function texts(gw: SearchGateway, ids: string[]): Promise<Map<string, string>> {
  const r = await gw.db.query<{ doc_id: string; t: string }>(
    `SELECT doc_id::text AS doc_id, lower(coalesce(title, '') || ' ' || text) AS t FROM documents WHERE doc_id = ANY($1::uuid[])`,
    [ids],
  );
  return new Map(r.rows.map((x) => [x.doc_id, x.t]));
}

const q = (query: string, k = 10) => `/v1/search?q=${encodeURIComponent(query)}&k=${k}`;

beforeAll(async () => {
  const embedder = new ConceptEmbedder();
  g = await startSearchGateway({ embedder });
  await seed(g, embedder, D);
}, 180_000);
afterAll(async () => {
  await g?.close();
  await busy?.close();
});

describe('exact queries with vectors present', () => {
  // Each query and what every one of its top-10 hits must hold (lower-cased text).
  const CASES: [string, (t: string) => boolean][] = [
    ['irq_domain_set_info', (t) => t.includes('irq_domain_set_info')],
    ['irq_domain_set_info()', (t) => t.includes('irq_domain_set_info')],
    ['arch/mips/kernel/setup.c', (t) => t.includes('arch/mips/kernel/setup.c')],
    ['os.path.join car', (t) => t.includes('os.path.join')],
    [`${HASH} car`, (t) => t.includes(HASH)],
    [`${ADDRESS} car`, (t) => t.includes(ADDRESS)],
    ['"car repair"', (t) => t.includes('car repair')],
    ['car after:2025-06-02', (t) => t.includes('car')],
    ['octeon car -repair', (t) => /octeon|car/.test(t) && !t.includes('repair')],
  ];

  it('every top-10 hit holds the query\'s terms; none comes from the vector leg alone', async () => {
    for (const [query, holds] of CASES) {
      const res = await g.get(q(query));
      expect(res.statusCode, res.body).toBe(200);
      const body = res.json();
      expect(body.hits.length, query).toBeGreaterThan(0);
      const t = await texts(g, body.hits.map((h: any) => h.document_id));
      for (const h of body.hits) {
        expect({ query, holds: holds(t.get(h.document_id) ?? '') }).toEqual({ query, holds: true });
        expect({ query, sources: h.sources }).toEqual({ query, sources: ['lexical'] });
      }
      // A page not full: the total counts no document beyond those holding the terms either.
      if (body.hits.length < 10) expect(body.total, query).toBe(body.hits.length);
    }
  });

  it('an identifier matches as a whole first; by its parts only when no document holds it whole', async () => {
    const whole = (await g.get(q('irq_domain_set_info'))).json();
    expect(whole.hits.map((h: any) => h.document_id)).toEqual([D.identifier]);
    expect(whole.legs.vector_skipped).toBe('exact_terms');
    // Mixed with plain words: the identifier is required, the words rank.
    const mixed = (await g.get(q('octeon irq_domain_set_info'))).json();
    expect(mixed.hits.map((h: any) => h.document_id)).toEqual([D.identifier]);
    // Nowhere whole: its parts answer, and legs says so.
    const parts = (await g.get(q('irq_domain_set_handler'))).json();
    expect(parts.hits.length).toBeGreaterThan(5);
    expect(parts.legs.lexical_note).toMatch(/by their parts/);
    expect(parts.hits.every((h: any) => h.sources.includes('lexical'))).toBe(true);
  });

  it('an identifier with a stop-word part or in upper case finds only the messages holding it', async () => {
    const at = (await g.get(q('accepted_at'))).json();
    expect(at.hits.map((h: any) => h.document_id)).toEqual([D.acceptedAt]);
    expect(at.total).toBe(1);
    const token = (await g.get(q('AUTH_TOKEN'))).json();
    expect(new Set(token.hits.map((h: any) => h.document_id))).toEqual(new Set([D.authToken, D.authTokenLower]));
    expect(token.total).toBe(2);
    // As a call, and beside a plain word: the whole identifier is still required, the word ranks.
    const call = (await g.get(q('gateway auth_token()'))).json();
    expect(call.hits.map((h: any) => h.document_id)).toEqual([D.authTokenLower, D.authToken]);
  });

  it('a quoted phrase ranks its literal occurrence above the documents holding only its stems', async () => {
    const body = (await g.get(q('"Agent settings in"'))).json();
    const ids = body.hits.map((h: any) => h.document_id);
    // The stems match too (PostgreSQL's phrase), and rank below the phrase as written.
    expect(ids[0]).toBe(D.literal);
    expect(new Set(ids.slice(1))).toEqual(new Set([0, 1, 2, 3].map((i) => D[`stems${i}`])));
    // Unquoted, the same words rank by BM25 alone: the literal one is not first (the test means something).
    const plain = (await g.get(q('agent settings in'))).json();
    expect(plain.hits[0].document_id).not.toBe(D.literal);
  });

  it('a plain query whose words find little is still completed by meaning (above the floor)', async () => {
    const body = (await g.get(q('invoice'))).json();
    expect(body.hits.map((h: any) => h.document_id)).toContain(D.bill0);
    // "car" is in many documents: the page is full, nothing is added by the vector leg.
    const car = (await g.get(q('car'))).json();
    expect(car.hits.every((h: any) => h.sources.includes('lexical'))).toBe(true);
    // Thin: 'octeon' is in two documents, 'invoice' in none; the vector leg adds what is near 'invoice'.
    const thin = (await g.get(q('octeon invoice'))).json();
    const ids = thin.hits.map((h: any) => h.document_id);
    expect(ids).toContain(D.phrase);
    expect(ids).toContain(D.bill0);
  });

  it('the same query gives the same answer twice', async () => {
    for (const query of ['irq_domain_set_info', `${HASH} car`, 'car after:2025-06-02', 'octeon invoice', 'invoice']) {
      const a = (await g.get(q(query))).json();
      const b = (await g.get(q(query))).json();
      expect(b.hits.map((h: any) => h.document_id), query).toEqual(a.hits.map((h: any) => h.document_id));
      expect(b.total, query).toBe(a.total);
    }
  });
});

describe('the same answer twice while the model is slower than the vector budget', () => {
  const B: Record<string, string> = {};
  beforeAll(async () => {
    const embedder = new BusyEmbedder();
    busy = await startSearchGateway({ embedder, config: { vectorBudgetMs: 20 } });
    await seed(busy, embedder, B);
  }, 180_000);

  it('a thin plain query waits for its embedding; an exact one does not need it', async () => {
    for (const query of ['octeon invoice', `${HASH} car`]) {
      const first = (await busy.get(q(query))).json();
      const second = (await busy.get(q(query))).json();
      expect(second.hits.map((h: any) => h.document_id), query).toEqual(first.hits.map((h: any) => h.document_id));
      expect(second.total, query).toBe(first.total);
    }
    const thin = (await busy.get(q('octeon invoice'))).json();
    expect(thin.legs.vector_skipped).toBeUndefined();
    expect(thin.hits.map((h: any) => h.document_id)).toContain(B.bill0);
  });
});
