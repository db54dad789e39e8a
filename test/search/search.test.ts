import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSearch, type Search } from '../../src/search/search.ts';
import { ConceptEmbedder, doc, indexVectors, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const ids = (res: any) => res.json().hits.filter((h: any) => !h.context).map((h: any) => h.document_id);

describe('GET /v1/search: validation', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway();
  });
  afterAll(async () => g.close());

  it.each([
    ['k=0', q({ q: 'x', k: 0 }), 'k'],
    ['k=51', q({ q: 'x', k: 51 }), 'k'],
    ['context_window=21', q({ q: 'x', context_window: 21 }), 'context_window'],
    ['empty q', q({ q: '' }), 'q'],
    ['missing q', '/v1/search', 'q'],
    ['blank q', q({ q: '   ' }), 'q'],
    ['bad start_date', q({ q: 'x', start_date: '2024-13-01' }), 'start_date'],
    ['bad end_date', q({ q: 'x', end_date: 'yesterday' }), 'end_date'],
    ['end before start', q({ q: 'x', start_date: '2024-05-02', end_date: '2024-05-01' }), 'end_date'],
    ['bad thread_id', q({ q: 'x', thread_id: 'not-a-uuid' }), 'thread_id'],
    ['k not a number', q({ q: 'x', k: 'ten' }), 'k'],
  ])('422 for %s', async (_name, url, field) => {
    const res = await g.get(url);
    expect(res.statusCode).toBe(422);
    const detail = res.json().detail;
    expect(Array.isArray(detail)).toBe(true);
    expect(detail.some((d: any) => d.loc.includes(field))).toBe(true);
  });

  it('accepts the limits themselves (k=1, k=50, context_window=20) and needs the token', async () => {
    for (const url of [q({ q: 'x', k: 1 }), q({ q: 'x', k: 50 }), q({ q: 'x', context_window: 20 })]) {
      expect((await g.get(url)).statusCode).toBe(200);
    }
    const res = await g.app.inject({ method: 'GET', url: q({ q: 'x' }) });
    expect(res.statusCode).toBe(401);
  });

  it('ask: 422 for an empty query or k below 1; k above 20 is read as 20', async () => {
    expect((await g.post('/v1/ask', { query: '' })).statusCode).toBe(422);
    expect((await g.post('/v1/ask', { query: 'x', k: 0 })).statusCode).toBe(422);
    expect((await g.post('/v1/ask', { query: 'x', k: 21 })).statusCode).toBe(200);
  });
});

describe('GET /v1/search: ranking, filters, facets, context', () => {
  let g: SearchGateway;
  const D: Record<string, string> = {};
  let threadId = '';
  let thread: string[] = [];

  beforeAll(async () => {
    g = await startSearchGateway();
    const add = async (key: string, text: string, over: Record<string, unknown> = {}) => {
      D[key] = (await g.ingest(doc(text, over))).doc_id;
    };
    await add('email', 'Quarterly budget review with the finance team', {
      source_type: 'email',
      title: 'Budget review',
      content_timestamp: '2024-03-10T09:00:00Z',
      people: [{ identifier: 'Alice@Example.com', identifier_type: 'email', role: 'sender', display_name: 'Alice' }],
      metadata: {
        attachments: [{ index: 0, kind: 'pdf', role: 'attachment', mime_type: 'application/pdf', filename: 'budget.pdf', size_bytes: 1234 }],
      },
    });
    await add('sms', 'Budget numbers look fine, call me', {
      source_type: 'sms',
      content_timestamp: '2024-03-12T23:30:00Z',
      people: [{ identifier: '+1 (415) 555-0100', identifier_type: 'phone', role: 'sender', display_name: 'Bob' }],
    });
    await add('note', 'Personal budget for the garden project', { content_timestamp: '2024-04-01T08:00:00Z' });
    await add('other', 'Recipe for lemon cake', { content_timestamp: '2024-03-11T08:00:00Z' });
    await add('titled', 'Notes from the meeting about nothing in particular', {
      title: 'Budget offsite agenda',
      content_timestamp: '2024-02-01T08:00:00Z',
    });
    // A chat thread of 7 messages, one of which mentions the budget.
    for (let i = 0; i < 7; i++) {
      const r = await g.ingest(
        doc(i === 3 ? 'The budget spreadsheet is in the shared folder' : `chat message number ${i} about lunch plans`, {
          source_type: 'chatapp',
          content_timestamp: `2024-05-0${i + 1}T10:00:00Z`,
          thread: { external_id: 'thread-lunch', thread_type: 'group', is_group: true },
          people: [{ identifier: 'carol@example.com', identifier_type: 'email', role: 'sender', display_name: 'Carol' }],
        }),
      );
      thread.push(r.doc_id);
      threadId = r.thread_id;
    }
  });
  afterAll(async () => g.close());

  it('finds every document containing the term, best first, with marked snippets and per-leg scores', async () => {
    const res = await g.get(q({ q: 'budget' }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const found = ids(res);
    expect(new Set(found)).toEqual(new Set([D.email, D.sms, D.note, D.titled, thread[3]]));
    expect(found).not.toContain(D.other);
    const hit = body.hits.find((h: any) => h.document_id === D.email);
    expect(hit.snippet).toContain('«budget»');
    expect(hit.scores.lexical).toBeGreaterThan(0);
    expect(hit.scores.vector).toBeNull();
    expect(hit.sources).toEqual(['lexical']);
    expect(hit.attachments).toEqual([
      { index: 0, kind: 'pdf', role: 'attachment', mime_type: 'application/pdf', filename: 'budget.pdf', size_bytes: 1234 },
    ]);
    expect(hit.has_attachments).toBe(true);
    expect(hit.content_timestamp).toBe('2024-03-10T09:00:00.000Z');
    expect(hit.people[0].display_name).toBe('Alice');
    expect(body.legs).toMatchObject({ lexical: true, vector: false });
    // Scores are sorted.
    const scores = body.hits.map((h: any) => h.score);
    expect([...scores].sort((a, b) => b - a)).toEqual(scores);
  });

  it('a title-only match is found', async () => {
    expect(ids(await g.get(q({ q: 'offsite' })))).toEqual([D.titled]);
  });

  it('OR semantics: a document matching one of several words is still found', async () => {
    const found = ids(await g.get(q({ q: 'lemon budget' })));
    expect(found).toContain(D.other);
    expect(found).toContain(D.email);
  });

  it('filters alone', async () => {
    expect(ids(await g.get(q({ q: 'budget', source_type: 'email' })))).toEqual([D.email]);
    expect(ids(await g.get(q({ q: 'budget', has_attachments: true })))).toEqual([D.email]);
    expect(new Set(ids(await g.get(q({ q: 'budget', has_attachments: false }))))).toEqual(
      new Set([D.sms, D.note, D.titled, thread[3]]),
    );
    // The person filter is canonicalised like ingest: case and phone formatting do not matter.
    expect(ids(await g.get(q({ q: 'budget', person: 'ALICE@example.COM' })))).toEqual([D.email]);
    expect(ids(await g.get(q({ q: 'budget', person: '415-555-0100' })))).toEqual([D.sms]);
    expect(ids(await g.get(q({ q: 'budget', person: 'nobody@example.com' })))).toEqual([]);
    expect(new Set(ids(await g.get(q({ q: 'budget', start_date: '2024-03-12' }))))).toEqual(
      new Set([D.sms, D.note, thread[3]]),
    );
    // A bare end date includes its whole day (the sms is at 23:30 that day).
    expect(new Set(ids(await g.get(q({ q: 'budget', end_date: '2024-03-12' }))))).toEqual(
      new Set([D.email, D.sms, D.titled]),
    );
    // A date-time end is exact.
    expect(new Set(ids(await g.get(q({ q: 'budget', end_date: '2024-03-12T23:00:00Z' }))))).toEqual(
      new Set([D.email, D.titled]),
    );
    expect(ids(await g.get(q({ q: 'budget', thread_id: threadId })))).toEqual([thread[3]]);
  });

  it('filters combined', async () => {
    expect(
      ids(await g.get(q({ q: 'budget', start_date: '2024-03-01', end_date: '2024-03-31', source_type: 'sms' }))),
    ).toEqual([D.sms]);
    expect(ids(await g.get(q({ q: 'budget', source_type: 'email', person: '+14155550100' })))).toEqual([]);
    expect(ids(await g.get(q({ q: 'budget', has_attachments: true, start_date: '2024-03-11' })))).toEqual([]);
    expect(ids(await g.get(q({ q: 'budget spreadsheet', thread_id: threadId, person: 'carol@example.com' })))).toEqual([
      thread[3],
    ]);
  });

  it('facet counts describe the whole match set, not only the returned page', async () => {
    const body = (await g.get(q({ q: 'budget', k: 1 }))).json();
    expect(body.hits).toHaveLength(1);
    expect(body.total).toBe(5);
    const st = Object.fromEntries(body.facets.source_type.map((f: any) => [f.value, f.count]));
    expect(st).toEqual({ email: 1, sms: 1, note: 2, chatapp: 1 });
    const att = Object.fromEntries(body.facets.has_attachments.map((f: any) => [String(f.value), f.count]));
    expect(att).toEqual({ true: 1, false: 4 });
    const people = Object.fromEntries(body.facets.person.map((f: any) => [f.display_name, f.count]));
    expect(people).toEqual({ Alice: 1, Bob: 1, Carol: 1 });
    // Facets follow the filters too.
    const filtered = (await g.get(q({ q: 'budget', source_type: 'note' }))).json();
    expect(filtered.total).toBe(2);
    expect(filtered.facets.source_type).toEqual([{ value: 'note', count: 2 }]);
  });

  it('thread context: neighbours within the window, in time order, marked as context', async () => {
    const body = (await g.get(q({ q: 'spreadsheet', thread_id: threadId, context_window: 2 }))).json();
    expect(body.hits[0].document_id).toBe(thread[3]);
    expect(body.hits[0].context).toBe(false);
    const ctx = body.hits.filter((h: any) => h.context);
    expect(ctx.map((h: any) => h.document_id)).toEqual([thread[1], thread[2], thread[4], thread[5]]);
    for (const h of ctx) {
      expect(h.chunk_id).toBeNull();
      expect(h.sources).toEqual(['context']);
      expect(h.context_for).toEqual([thread[3]]);
    }
    const times = ctx.map((h: any) => h.content_timestamp);
    expect([...times].sort()).toEqual(times);
    // Without thread_id no context is added; window 0 adds none either.
    expect((await g.get(q({ q: 'spreadsheet', context_window: 2 }))).json().hits).toHaveLength(1);
    expect((await g.get(q({ q: 'spreadsheet', thread_id: threadId }))).json().hits).toHaveLength(1);
    // The window is clamped at the thread's ends.
    const edge = (await g.get(q({ q: 'spreadsheet', thread_id: threadId, context_window: 20 }))).json();
    expect(edge.hits.filter((h: any) => h.context)).toHaveLength(6);
  });

  it('a superseded version never appears; the new version does', async () => {
    const first = await g.ingest(doc('Original wording about zeppelins', { source_id: 'versioned-note' }));
    expect(ids(await g.get(q({ q: 'zeppelins' })))).toEqual([first.doc_id]);
    const second = await g.ingest(doc('Rewritten wording about airships', { source_id: 'versioned-note' }));
    expect(second.doc_id).not.toBe(first.doc_id);
    expect(ids(await g.get(q({ q: 'zeppelins' })))).toEqual([]);
    expect(ids(await g.get(q({ q: 'wording' })))).toEqual([second.doc_id]);
    const patched = await g.app.inject({
      method: 'PATCH',
      url: `/v1/documents/${second.doc_id}`,
      headers: { authorization: 'Bearer test-token-0123456789' },
      payload: { text: 'Third text about dirigibles', metadata: {} },
    });
    expect(patched.statusCode).toBe(200);
    expect(ids(await g.get(q({ q: 'airships' })))).toEqual([]);
    expect(ids(await g.get(q({ q: 'dirigibles' })))).toEqual([patched.json().doc_id]);
  });

  it('a query about nothing in the store returns no hits (lexical only)', async () => {
    const body = (await g.get(q({ q: 'xylophonist quasar' }))).json();
    expect(body.hits).toEqual([]);
    expect(body.total).toBe(0);
    // Stop words only: nothing to match.
    expect((await g.get(q({ q: 'the and of' }))).json().hits).toEqual([]);
  });
});

describe('hybrid: vector leg, fusion, fallback, cache', () => {
  let g: SearchGateway;
  let embedder: ConceptEmbedder;
  const D: Record<string, string> = {};

  beforeAll(async () => {
    embedder = new ConceptEmbedder();
    g = await startSearchGateway({ embedder, config: { vectorMinSimilarity: 0.3, vectorWeight: 0.5 } });
    D.exact = (await g.ingest(doc('Receipt XK42 from the garage visit'))).doc_id;
    D.near = (await g.ingest(doc('automobile automobile sedan vehicle'))).doc_id;
    D.semantic = (await g.ingest(doc('Booked the vacation flights early'))).doc_id;
    // Many unrelated documents of another source, so a filtered k-NN has to scan past them.
    for (let i = 0; i < 40; i++) {
      await g.ingest(doc(`filler sms ${i} about weather and traffic ${i % 7}`, { source_type: 'sms' }));
    }
    D.smsCar = (await g.ingest(doc('my car broke down again', { source_type: 'sms' }))).doc_id;
    await indexVectors(g.db, embedder);
  });
  afterAll(async () => g.close());

  it('a semantically near document is found by the vector leg alone', async () => {
    const body = (await g.get(q({ q: 'holiday trip' }))).json();
    expect(body.legs).toMatchObject({ lexical: true, vector: true, vector_model: 'test-concepts' });
    const hit = body.hits.find((h: any) => h.document_id === D.semantic);
    expect(hit).toBeDefined();
    expect(hit.sources).toEqual(['vector']);
    expect(hit.scores.lexical).toBeNull();
    expect(hit.scores.vector).toBeGreaterThan(0.3);
  });

  it('the exact keyword hit beats the semantically nearer document', async () => {
    const body = (await g.get(q({ q: 'XK42 car' }))).json();
    const order = body.hits.map((h: any) => h.document_id);
    expect(order).toContain(D.near);
    expect(order.indexOf(D.exact)).toBeLessThan(order.indexOf(D.near));
    const near = body.hits.find((h: any) => h.document_id === D.near);
    const exact = body.hits.find((h: any) => h.document_id === D.exact);
    expect(near.scores.vector).toBeGreaterThan(exact.scores.vector ?? 0);
  });

  it('filters apply inside the vector leg (k rows even when most neighbours are filtered out)', async () => {
    const body = (await g.get(q({ q: 'automobile', source_type: 'sms', k: 5 }))).json();
    expect(body.hits.map((h: any) => h.document_id)).toContain(D.smsCar);
    for (const h of body.hits) expect(h.source_type).toBe('sms');
    const none = (await g.get(q({ q: 'automobile', source_type: 'email' }))).json();
    expect(none.hits).toEqual([]);
  });

  it('nonsense returns nothing even with the vector leg on (similarity floor)', async () => {
    const body = (await g.get(q({ q: 'qwzx plonk vrrm' }))).json();
    expect(body.legs.vector).toBe(true);
    expect(body.hits).toEqual([]);
    expect(body.total).toBe(0);
  });

  it('a repeated query does not call the embedder again (LRU cache)', async () => {
    const before = embedder.calls;
    await g.get(q({ q: 'unique cached query text' }));
    await g.get(q({ q: 'unique cached query text' }));
    await g.get(q({ q: 'unique cached query text', k: 3 }));
    expect(embedder.calls - before).toBe(1);
    await g.get(q({ q: 'another query text' }));
    expect(embedder.calls - before).toBe(2);
  });

  it('falls back to lexical only when the embedder fails, and says so', async () => {
    embedder.failing = true;
    try {
      const res = await g.get(q({ q: 'garage receipt fresh' }));
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.legs.lexical).toBe(true);
      expect(body.legs.vector).toBe(false);
      expect(body.legs.vector_error).toMatch(/unreachable/);
      expect(body.hits.map((h: any) => h.document_id)).toEqual([D.exact]);
    } finally {
      embedder.failing = false;
    }
  });

  it('no vectors for the embedder model: lexical only, reported', async () => {
    const other = new ConceptEmbedder();
    other.name = 'model-without-vectors';
    const g2 = await startSearchGateway({ embedder: other, testDb: undefined });
    try {
      await g2.ingest(doc('Receipt XK42 again'));
      const body = (await g2.get(q({ q: 'XK42' }))).json();
      expect(body.legs.vector).toBe(false);
      expect(body.legs.vector_error).toMatch(/no vectors/);
      expect(body.hits).toHaveLength(1);
    } finally {
      await g2.close();
    }
  });
});

describe('SEARCH_VECTOR_LEG=auto: the vector leg runs only when it could change the page', () => {
  let g: SearchGateway;
  let always: Search;
  let embedder: ConceptEmbedder;
  const lighthouse: string[] = [];
  let vacation: string;

  beforeAll(async () => {
    embedder = new ConceptEmbedder();
    // The default weights (lexical 1, vector 0.02) and mode (auto).
    g = await startSearchGateway({ embedder });
    // Lexical scores far apart (1, 2, 4, 8 occurrences in texts of one length), so the vector
    // leg's at most 0.02 cannot reorder them: both modes must give the same page.
    for (const times of [1, 2, 4, 8]) {
      const text = [...Array(times).fill('lighthouse'), ...Array(10 - times).fill('keeper')].join(' ');
      lighthouse.push((await g.ingest(doc(text))).doc_id);
    }
    lighthouse.reverse();
    vacation = (await g.ingest(doc('Booked the vacation flights early'))).doc_id;
    await indexVectors(g.db, embedder);
    always = createSearch({ db: g.db, embedder, config: { vectorBudgetMs: 0, vectorLeg: 'always' } });
  });
  afterAll(async () => {
    always.close();
    await g.close();
  });

  const request = (text: string, k: number) => ({ q: text, k, filters: {}, context_window: 0 });

  it('a page the lexical leg decides is answered without embedding the query, with the same hits as always running it', async () => {
    const before = embedder.calls;
    const body = (await g.get(q({ q: 'lighthouse', k: 3 }))).json();
    expect(embedder.calls).toBe(before);
    expect(body.legs).toMatchObject({ lexical: true, vector: false, vector_skipped: 'lexical_sufficient', vector_model: 'test-concepts' });
    expect(body.hits.map((h: any) => h.document_id)).toEqual(lighthouse.slice(0, 3));

    const full = await always.search(request('lighthouse', 3));
    expect(full.legs.vector).toBe(true);
    expect(embedder.calls).toBe(before + 1);
    expect(full.hits.map((h) => h.document_id)).toEqual(lighthouse.slice(0, 3));
  });

  it('fewer lexical matches than the page: the vector leg runs and adds what only it finds', async () => {
    const before = embedder.calls;
    const body = (await g.get(q({ q: 'holiday lighthouse', k: 10 }))).json();
    expect(embedder.calls).toBe(before + 1);
    expect(body.legs).toMatchObject({ lexical: true, vector: true });
    expect(body.legs.vector_skipped).toBeUndefined();
    const ids = body.hits.map((h: any) => h.document_id);
    expect(ids.slice(0, 4)).toEqual(lighthouse);
    expect(ids).toContain(vacation);
    expect(body.hits.find((h: any) => h.document_id === vacation).sources).toEqual(['vector']);
    expect(body.total).toBe(5);
  });

  it('the skip is reported to the leg timings (the gateway counts it in search_vector_skipped_total)', async () => {
    const seen: (string | undefined)[] = [];
    const s = createSearch({ db: g.db, embedder, config: { vectorBudgetMs: 0 }, onLegTiming: (leg, _ms, skipped) => leg === 'vector' && seen.push(skipped) });
    try {
      await s.search(request('keeper lighthouse', 2));
      await s.search(request('holiday lighthouse', 10));
      expect(seen).toEqual(['lexical_sufficient', undefined]);
    } finally {
      s.close();
    }
  });
});
