/**
 * The in-memory lexical index follows the catalog (src/search/index-sync.ts): what a user of
 * GET /v1/search notices when documents are added, re-versioned, deleted, when people merge, and
 * when the write comes from another connection or from a transaction that was still open while
 * the index polled. The background poll timer is off (indexPollMs 0): every search catches up
 * itself, so nothing here waits on time.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database, Queryable } from '../../src/db/types.ts';
import { prepareIngest } from '../../src/catalog/prepare.ts';
import { IndexSync } from '../../src/search/index-sync.ts';
import type { LexicalIndex } from '../../src/search/index/lexical-index.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { doc, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const ids = (res: any) => res.json().hits.filter((h: any) => !h.context).map((h: any) => h.document_id);
const auth = { authorization: `Bearer ${TEST_TOKEN}` };
const BM25 = { k1: 1.2, b: 0.4, titleWeight: 2 };
type LexicalIndexSearch = LexicalIndex['search'];

async function del(g: SearchGateway, docId: string) {
  const res = await g.app.inject({ method: 'DELETE', url: `/v1/catalog/documents/${docId}`, headers: auth });
  expect(res.statusCode).toBe(202);
}

describe('the index follows the catalog: new documents, versions, deletes', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway({ config: { indexPollMs: 0 } });
    // The index is built by the first search, before the documents below exist.
    await g.ingest(doc('Seed document about gardening'));
    expect(ids(await g.get(q({ q: 'gardening' })))).toHaveLength(1);
  });
  afterAll(async () => g.close());

  it('a document ingested after the build is found by the very next search', async () => {
    for (let i = 0; i < 5; i++) {
      const word = ['quokka', 'axolotl', 'pangolin', 'okapi', 'narwhal'][i];
      const d = await g.ingest(doc(`Field notes on the ${word} enclosure`));
      expect(ids(await g.get(q({ q: word })))).toEqual([d.doc_id]);
    }
    const body = (await g.get(q({ q: 'enclosure' }))).json();
    expect(body.total).toBe(5);
  });

  it('a new version (same source_id) replaces the old one: old words miss, new words hit, counted once', async () => {
    const sourceId = `versioned-${Math.random().toString(36).slice(2)}`;
    const v1 = await g.ingest(doc('Harbour inspection report: barnacles on the hull', { source_id: sourceId }));
    expect(ids(await g.get(q({ q: 'barnacles' })))).toEqual([v1.doc_id]);

    const v2 = await g.ingest(doc('Harbour inspection report: propeller polished', { source_id: sourceId }));
    expect(v2.doc_id).not.toBe(v1.doc_id);
    expect(ids(await g.get(q({ q: 'barnacles' })))).toEqual([]);
    expect((await g.get(q({ q: 'barnacles' }))).json().total).toBe(0);
    expect(ids(await g.get(q({ q: 'propeller' })))).toEqual([v2.doc_id]);
    // Words both versions share find the document once.
    const both = (await g.get(q({ q: 'harbour inspection' }))).json();
    expect(both.hits.map((h: any) => h.document_id)).toEqual([v2.doc_id]);
    expect(both.total).toBe(1);
    expect(both.facets.source_type).toEqual([{ value: 'note', count: 1 }]);

    // A catalog version (PATCH …/version) on top: only the newest is found.
    const v3 = await g.app.inject({
      method: 'PATCH',
      url: `/v1/catalog/documents/${v2.doc_id}/version`,
      headers: auth,
      payload: { text: 'Harbour inspection report: rudder repainted', title: 'Rudder' },
    });
    expect(v3.statusCode).toBe(200);
    const v3id = v3.json().doc_id;
    expect(ids(await g.get(q({ q: 'propeller' })))).toEqual([]);
    expect(ids(await g.get(q({ q: 'rudder' })))).toEqual([v3id]);
    const again = (await g.get(q({ q: 'harbour' }))).json();
    expect(again.hits.map((h: any) => h.document_id)).toEqual([v3id]);
    expect(again.total).toBe(1);
  });

  it('a title-only change (new version, same text) moves the title words', async () => {
    const d = await g.ingest(doc('Minutes of the weekly sync', { title: 'Tangerine project' }));
    expect(ids(await g.get(q({ q: 'tangerine' })))).toEqual([d.doc_id]);
    const v = await g.app.inject({
      method: 'PATCH',
      url: `/v1/catalog/documents/${d.doc_id}/version`,
      headers: auth,
      payload: { title: 'Persimmon project' },
    });
    expect(v.statusCode).toBe(200);
    expect(ids(await g.get(q({ q: 'tangerine' })))).toEqual([]);
    expect(ids(await g.get(q({ q: 'persimmon' })))).toEqual([v.json().doc_id]);
    const body = (await g.get(q({ q: 'weekly sync' }))).json();
    expect(body.total).toBe(1);
  });

  it('a deleted document disappears from results, facets and total', async () => {
    const keep = await g.ingest(doc('Warranty card for the dishwasher', { source_type: 'email' }));
    const gone = await g.ingest(doc('Warranty card for the toaster', { source_type: 'sms' }));
    const before = (await g.get(q({ q: 'warranty' }))).json();
    expect(new Set(before.hits.map((h: any) => h.document_id))).toEqual(new Set([keep.doc_id, gone.doc_id]));
    expect(before.total).toBe(2);

    await del(g, gone.doc_id);
    const after = (await g.get(q({ q: 'warranty' }))).json();
    expect(after.hits.map((h: any) => h.document_id)).toEqual([keep.doc_id]);
    expect(after.total).toBe(1);
    expect(after.facets.source_type).toEqual([{ value: 'email', count: 1 }]);
    expect(ids(await g.get(q({ q: 'toaster' })))).toEqual([]);
  });
});

describe('person merge: the person filter and facet follow the survivor', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway({ config: { indexPollMs: 0 } });
  });
  afterAll(async () => g.close());

  it('two people, then one after a contact card names both identifiers', async () => {
    const mail = await g.ingest(
      doc('Zeppelin museum tickets attached', {
        source_type: 'email',
        people: [{ identifier: 'Ann.Lee@Example.com', identifier_type: 'email', role: 'sender', display_name: 'Ann Lee' }],
      }),
    );
    const sms = await g.ingest(
      doc('Zeppelin museum opens at nine', {
        source_type: 'sms',
        people: [{ identifier: '(508) 410-9572', identifier_type: 'phone', role: 'sender' }],
      }),
    );
    const personOf = async (docId: string) =>
      (await g.db.query<{ person_id: string }>('SELECT person_id::text AS person_id FROM document_people WHERE doc_id = $1', [docId]))
        .rows[0].person_id;
    const pMail = await personOf(mail.doc_id);
    const pSms = await personOf(sms.doc_id);
    expect(pMail).not.toBe(pSms);

    const before = (await g.get(q({ q: 'zeppelin' }))).json();
    expect(before.total).toBe(2);
    expect(new Map(before.facets.person.map((f: any) => [f.value, f.count]))).toEqual(
      new Map([
        [pMail, 1],
        [pSms, 1],
      ]),
    );
    expect(ids(await g.get(q({ q: 'zeppelin', person: 'ann.lee@example.com' })))).toEqual([mail.doc_id]);
    expect(ids(await g.get(q({ q: 'zeppelin', person: '+15084109572' })))).toEqual([sms.doc_id]);

    const sync = await g.post('/catalog/contacts/ingest', {
      source: 'host_contacts',
      device_id: 'laptop-1',
      batch_id: `b-${Math.random().toString(36).slice(2)}`,
      since_token: null,
      people: [
        {
          external_id: 'ann',
          display_name: 'Ann Lee',
          emails: [{ value: 'ann.lee@example.com' }],
          phones: [{ value: '+1 508-410-9572', label: 'Mobile' }],
        },
      ],
    });
    expect(sync.statusCode).toBe(200);
    // The merge happened in the catalog (the older person survives) …
    expect(await personOf(sms.doc_id)).toBe(pMail);

    // … and the very next search sees it: one person with both documents.
    const after = (await g.get(q({ q: 'zeppelin' }))).json();
    expect(after.total).toBe(2);
    expect(after.facets.person).toEqual([{ value: pMail, display_name: 'Ann Lee', count: 2 }]);
    // Either identifier now names the merged person, who is linked to both documents.
    for (const person of ['ann.lee@example.com', '508-410-9572']) {
      expect(new Set(ids(await g.get(q({ q: 'zeppelin', person }))))).toEqual(new Set([mail.doc_id, sms.doc_id]));
    }
  });

  it('a contact renamed shows its new name in the person facet at the next search (no document changed)', async () => {
    const contact = (display_name: string) =>
      g.post('/catalog/contacts/ingest', {
        source: 'host_contacts',
        device_id: 'laptop-1',
        batch_id: `b-${Math.random().toString(36).slice(2)}`,
        since_token: null,
        people: [{ external_id: 'cy', display_name, emails: [{ value: 'cy@example.com' }] }],
      });
    expect((await contact('Cy')).statusCode).toBe(200);
    await g.ingest(
      doc('Dirigible hangar lease', { people: [{ identifier: 'cy@example.com', identifier_type: 'email', role: 'sender' }] }),
    );
    const before = (await g.get(q({ q: 'dirigible' }))).json();
    expect(before.facets.person.map((f: any) => f.display_name)).toEqual(['Cy']);
    expect((await contact('Cyrus')).statusCode).toBe(200);
    const after = (await g.get(q({ q: 'dirigible' }))).json();
    expect(after.facets.person.map((f: any) => f.display_name)).toEqual(['Cyrus']);
  });
});

describe('incremental upkeep: one build, then the change log', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway({ config: { indexPollMs: 0 } });
    for (let i = 0; i < 5; i++) await g.ingest(doc(`Baseline entry ${i} about lighthouse keeping`));
  });
  afterAll(async () => g.close());

  it('counters.builds stays 1 across many small changes; the result equals a fresh build; rebuild() builds again', async () => {
    const sync = new IndexSync(g.db, BM25, { pollIntervalMs: 0 });
    try {
      await sync.current();
      expect(sync.counters.builds).toBe(1);

      const live: string[] = [];
      for (let i = 0; i < 12; i++) {
        const d = await g.ingest(doc(`Lighthouse log ${i}: lamp ${i % 2 ? 'trimmed' : 'cleaned'}`, { source_id: `log-${i}` }));
        live.push(d.doc_id);
        if (i % 4 === 1) {
          const v = await g.ingest(doc(`Lighthouse log ${i}: lamp replaced`, { source_id: `log-${i}` }));
          live[live.length - 1] = v.doc_id;
        }
        if (i % 4 === 2) {
          await del(g, d.doc_id);
          live.pop();
        }
        const index = await sync.current();
        expect(index.has(live[live.length - 1])).toBe(true);
      }
      expect(sync.counters.builds).toBe(1);
      expect(sync.counters.polls).toBeGreaterThanOrEqual(12);
      expect(sync.counters.applied).toBeGreaterThanOrEqual(12);

      const active = (await g.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE is_active_version'))
        .rows[0].n;
      const incremental = await sync.current();
      expect(incremental.size.documents).toBe(active);

      // Same answers as an index built from scratch now.
      const fresh = new IndexSync(g.db, BM25, { pollIntervalMs: 0 });
      try {
        const built = await fresh.current();
        expect(built.size.documents).toBe(incremental.size.documents);
        expect(built.size.passages).toBe(incremental.size.passages);
        for (const terms of [['lamp'], ['lighthous', 'replac'], ['trim'], ['clean'], ['keep']]) {
          const query = terms.map((term) => ({ term, qtf: 1 }));
          const a = incremental.search(query, {}, 50);
          const b = built.search(query, {}, 50);
          expect(a.total).toBe(b.total);
          expect(new Set(a.candidates.map((c) => c.doc_id))).toEqual(new Set(b.candidates.map((c) => c.doc_id)));
          expect(a.terms.map((x) => x.df)).toEqual(b.terms.map((x) => x.df));
        }
      } finally {
        fresh.close();
      }

      await sync.rebuild();
      expect(sync.counters.builds).toBe(2);
      expect((await sync.current()).size.documents).toBe(active);
      expect(sync.counters.builds).toBe(2);
    } finally {
      sync.close();
    }
  });

  it('refreshIndex({ rebuild: true }) reads the catalog again (a write the change log never saw appears)', async () => {
    await g.search.refreshIndex();
    const d = await g.ingest(doc('Ledger of the foghorn maintenance'));
    // Make the write invisible to the incremental path: drop its change-log rows.
    await g.db.query('DELETE FROM search_changes WHERE doc_id = $1', [d.doc_id]);
    expect(ids(await g.get(q({ q: 'foghorn' })))).toEqual([]);
    const size = await g.search.refreshIndex({ rebuild: true });
    const active = (await g.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE is_active_version'))
      .rows[0].n;
    expect(size.documents).toBe(active);
    expect(ids(await g.get(q({ q: 'foghorn' })))).toEqual([d.doc_id]);
  });

  it('a search running while the index is rebuilt still answers, and still sees the latest write', async () => {
    const req = { q: 'lighthouse', k: 50, filters: {}, context_window: 0 };
    const before = await g.search.search(req);
    expect(before.total).toBeGreaterThan(0);
    // A write, then a search and a rebuild asked for at the same moment (an admin refresh while a
    // user searches): the search must answer from an index that holds the write.
    const d = await g.ingest(doc('Lighthouse relief roster for October'));
    const [res] = await Promise.all([g.search.search(req), g.search.refreshIndex({ rebuild: true })]);
    expect(res.hits.map((h) => h.document_id)).toContain(d.doc_id);
    expect(res.total).toBe(before.total + 1);
  });

  it('a poll that brings more changes than a rebuild would read still answers the search that brought them', async () => {
    await g.search.refreshIndex();
    const d = await g.ingest(doc('Semaphore flags inventory'));
    // A bulk load elsewhere: more than 5000 change-log rows arrive in one poll, which makes the
    // index rebuild instead of applying them one by one (their documents do not exist: removals).
    await g.db.query(
      `INSERT INTO search_changes (doc_id)
       SELECT md5(i::text || random()::text)::uuid FROM generate_series(1, 5100) i`,
    );
    const body = (await g.get(q({ q: 'semaphore' }))).json();
    expect(body.hits.map((h: any) => h.document_id)).toEqual([d.doc_id]);
    expect(body.total).toBe(1);
  });

  it('concurrent current() calls share polls, and a call made after a write sees it even while an older poll is in flight', async () => {
    // Hold the first poll's answer after PostgreSQL has read the log, so the write below commits
    // while that poll is still in flight.
    let release!: () => void;
    let held!: () => void;
    const pollRead = new Promise<void>((r) => (held = r));
    let holdNext = false;
    const slow: Database = {
      kind: g.db.kind,
      exec: g.db.exec.bind(g.db),
      close: g.db.close.bind(g.db),
      transaction: g.db.transaction.bind(g.db),
      async query(sql: string, params?: unknown[], opts?: { name?: string }) {
        const r = await g.db.query(sql, params as any[], opts);
        if (opts?.name === 'memex_search_poll' && holdNext) {
          holdNext = false;
          held();
          await new Promise<void>((res) => (release = res));
        }
        return r;
      },
    } as Database;
    const sync = new IndexSync(slow, BM25, { pollIntervalMs: 0 });
    const quasar = (index: { search: LexicalIndexSearch }) => index.search([{ term: 'quasar', qtf: 1 }], {}, 10).total;
    try {
      await sync.ready(); // the build polls too
      holdNext = true;
      const first = sync.current();
      await pollRead;
      await g.ingest(doc('Quasar observation log'));
      const later = Array.from({ length: 8 }, () => sync.current());
      release();
      expect(quasar(await first)).toBe(0);
      const polls = sync.counters.polls;
      for (const index of await Promise.all(later)) expect(quasar(index)).toBe(1);
      // The eight calls made while the first poll was in flight shared one poll.
      expect(sync.counters.polls - polls).toBe(1);
    } finally {
      sync.close();
    }
  });

  it('IndexSync.current() called while rebuild() is pending returns an index, not null', async () => {
    const sync = new IndexSync(g.db, BM25, { pollIntervalMs: 0 });
    try {
      await sync.current();
      const pending = sync.current();
      const rebuilt = sync.rebuild();
      const [a, b] = await Promise.all([pending, rebuilt]);
      expect(b).not.toBeNull();
      expect(a).not.toBeNull();
    } finally {
      sync.close();
    }
  });
});

/** A Database whose first transaction waits, after its work and before COMMIT, until released. */
function heldOpen(db: Database) {
  let release!: () => void;
  let abort!: (err: Error) => void;
  let written!: () => void;
  const gate = new Promise<void>((resolve, reject) => {
    release = resolve;
    abort = reject;
  });
  const wrote = new Promise<void>((r) => (written = r));
  let used = false;
  const held: Database = {
    kind: db.kind,
    query: db.query.bind(db),
    exec: db.exec.bind(db),
    close: db.close.bind(db),
    transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> {
      return db.transaction(async (tx) => {
        const out = await fn(tx);
        if (!used) {
          used = true;
          written();
          await gate;
        }
        return out;
      });
    },
  };
  return { db: held, wrote, release, abort };
}

const note = (text: string, over: Record<string, unknown> = {}) => prepareIngest(doc(text, over) as any);

describe.skipIf(backend !== 'postgres')(
  'writes from another connection (PostgreSQL; skipped on PGlite: one in-process connection, no second writer)',
  () => {
    let t: TestDatabase;
    let g: SearchGateway;
    let other: Database;
    let otherCatalog: Catalog;
    beforeAll(async () => {
      if (backend !== 'postgres') return;
      t = await createTestDatabase();
      g = await startSearchGateway({ testDb: t, config: { indexPollMs: 0 } });
      other = await openDatabase({ databaseUrl: t.url! });
      otherCatalog = new Catalog(other);
      await g.ingest(doc('Seed document about beekeeping'));
      expect(ids(await g.get(q({ q: 'beekeeping' })))).toHaveLength(1);
    });
    afterAll(async () => {
      await other?.close();
      await g?.close(); // drops the database
    });

    it('a document, a new version and a delete made through a second Catalog on its own pool are seen', async () => {
      const a = await otherCatalog.ingest(note('Apiary inspection: queen spotted', { source_id: 'apiary-1' }));
      expect(ids(await g.get(q({ q: 'queen' })))).toEqual([a.doc_id]);

      const v = await otherCatalog.createVersion(a.doc_id, { text: 'Apiary inspection: swarm captured' });
      expect(ids(await g.get(q({ q: 'queen' })))).toEqual([]);
      expect(ids(await g.get(q({ q: 'swarm' })))).toEqual([v.doc_id]);
      expect((await g.get(q({ q: 'apiary' }))).json().total).toBe(1);

      await otherCatalog.deleteDocument(v.doc_id);
      expect(ids(await g.get(q({ q: 'swarm' })))).toEqual([]);
      expect((await g.get(q({ q: 'apiary' }))).json().total).toBe(0);
    });

    it('a raw SQL change on another connection (a new title) is seen, in the ranking and in the hit', async () => {
      const d = await g.ingest(doc('Honey harvest totals for June', { title: 'Harvest' }));
      // The hit's row is read (and kept in memory) before the change.
      expect((await g.get(q({ q: 'honey' }))).json().hits[0].title).toBe('Harvest');
      await other.query(`UPDATE documents SET title = 'Mead brewing' WHERE doc_id = $1`, [d.doc_id]);
      const after = (await g.get(q({ q: 'mead' }))).json();
      expect(after.hits.map((h: any) => h.document_id)).toEqual([d.doc_id]);
      expect(after.hits[0].title).toBe('Mead brewing');
    });

    it('a person renamed on another connection shows the new name in the person facet', async () => {
      await g.ingest(
        doc('Pollen count readings', { people: [{ identifier: 'bea@example.com', identifier_type: 'email', role: 'sender', display_name: 'Bea' }] }),
      );
      expect((await g.get(q({ q: 'pollen' }))).json().facets.person.map((f: any) => f.display_name)).toEqual(['Bea']);
      await other.query(
        `UPDATE people SET display_name = 'Beatrix' WHERE person_id = (SELECT person_id FROM person_identifiers WHERE value_canonical = 'bea@example.com')`,
      );
      expect((await g.get(q({ q: 'pollen' }))).json().facets.person.map((f: any) => f.display_name)).toEqual(['Beatrix']);
    });

    it('a transaction open across a poll, overtaken by a later commit, is not missed when it commits', async () => {
      const held = heldOpen(other);
      const slow = new Catalog(held.db).ingest(note('Wax candle batch number seven', { source_id: 'slow-writer' }));
      await held.wrote; // its document and change-log rows are written, not committed

      // A later transaction commits first (its change-log rows get higher sequence numbers), and
      // the index polls while the slow one is still open.
      const fast = await g.ingest(doc('Wax seal order for the jars'));
      const during = (await g.get(q({ q: 'wax' }))).json();
      expect(during.hits.map((h: any) => h.document_id)).toEqual([fast.doc_id]);
      expect(during.total).toBe(1);

      held.release();
      const slowDoc = await slow;
      const after = (await g.get(q({ q: 'wax' }))).json();
      expect(new Set(after.hits.map((h: any) => h.document_id))).toEqual(new Set([fast.doc_id, slowDoc.doc_id]));
      expect(after.total).toBe(2);
      expect(ids(await g.get(q({ q: 'candle' })))).toEqual([slowDoc.doc_id]);
    });

    it('a transaction open across a poll that rolls back never shows up', async () => {
      const held = heldOpen(other);
      const slow = new Catalog(held.db).ingest(note('Smoker fuel comparison, never committed', { source_id: 'rolled-back' }));
      await held.wrote;
      expect((await g.get(q({ q: 'smoker' }))).json().total).toBe(0);
      held.abort(new Error('rolled back by the test'));
      await expect(slow).rejects.toThrow('rolled back by the test');
      expect((await g.get(q({ q: 'smoker' }))).json().total).toBe(0);
      const n = await g.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id = 'rolled-back'`);
      expect(n.rows[0].n).toBe(0);
    });

    it('a transaction open while the index is first built is not missed when it commits', async () => {
      const held = heldOpen(other);
      const slow = new Catalog(held.db).ingest(note('Propolis tincture recipe', { source_id: 'slow-at-build' }));
      await held.wrote;
      const sync = new IndexSync(g.db, BM25, { pollIntervalMs: 0 });
      try {
        const built = await sync.current();
        expect(built.search([{ term: 'propoli', qtf: 1 }], {}, 10).total).toBe(0);
        held.release();
        const d = await slow;
        const r = (await sync.current()).search([{ term: 'propoli', qtf: 1 }], {}, 10);
        expect(r.candidates.map((c) => c.doc_id)).toEqual([d.doc_id]);
        expect(sync.counters.builds).toBe(1);
      } finally {
        sync.close();
      }
    });
  },
);
