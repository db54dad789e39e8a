/**
 * The in-memory index against a plain reference: BM25F written out passage by passage, the filters
 * as a test on every document, facets counted over the whole match set. Random corpora with a small
 * vocabulary (so scores tie often), random queries and filters, including the person and thread
 * filters that start from their own documents instead of the postings. Whatever path the index
 * takes, a user must get the same documents, in the same order, with the same counts.
 */
import { describe, expect, it } from 'vitest';
import { LexicalIndex, type IndexedDocument, type IndexFilter, type QueryLexeme } from '../../src/search/index/lexical-index.ts';

const PARAMS = { k1: 1.2, b: 0.4, titleWeight: 2 };

function rng(seed: number) {
  return () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function makeCorpus(seed: number, size: number) {
  const rnd = rng(seed);
  const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rnd() * 16).toString(16)).join('');
  // Ids sharing their first 12 hex digits exercise the full-text tie-break after the numeric one.
  const uuid = (shared = false) => `${shared ? 'abcdef01-2345' : `${hex(8)}-${hex(4)}`}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
  const vocab = Array.from({ length: 30 }, (_, i) => `w${i}`);
  const terms = (n: number) => {
    const m = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const w = vocab[Math.floor(rnd() ** 2 * vocab.length)];
      m.set(w, (m.get(w) ?? 0) + 1);
    }
    return m;
  };
  const people = Array.from({ length: 8 }, () => uuid());
  const idents = Array.from({ length: 8 }, (_, i) => `p${i}@example.com`);
  const threads = Array.from({ length: 6 }, () => uuid());
  const sources = ['email', 'chatapp', 'sms', 'note'];
  const docs: IndexedDocument[] = Array.from({ length: size }, () => ({
    docId: uuid(rnd() < 0.2),
    sourceType: pick(sources),
    hasAttachments: rnd() < 0.3,
    tsMicros: Math.floor(rnd() * 1000) * 1_000_000,
    threadId: rnd() < 0.6 ? pick(threads) : null,
    personIds: rnd() < 0.8 ? Array.from({ length: 1 + Math.floor(rnd() * 4) }, () => pick(people)) : [],
    identifiers: rnd() < 0.5 ? [pick(idents)] : [],
    title: rnd() < 0.4 ? terms(1 + Math.floor(rnd() * 3)) : new Map(),
    passages: Array.from({ length: rnd() < 0.2 ? 2 : 1 }, () => ({ chunkId: uuid(), terms: terms(1 + Math.floor(rnd() * 12)) })),
  }));
  const query = (): QueryLexeme[] =>
    Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => ({ term: pick([...vocab, 'absent']), qtf: rnd() < 0.2 ? 2 : 1 }));
  const filter = (): IndexFilter => {
    const f: IndexFilter = {};
    if (rnd() < 0.3) f.sourceType = pick([...sources, 'unknown']);
    if (rnd() < 0.2) f.hasAttachments = rnd() < 0.5;
    if (rnd() < 0.3) f.threadId = pick([...threads, uuid()]);
    if (rnd() < 0.3) {
      f.startMicros = Math.floor(rnd() * 500) * 1_000_000;
      f.endMicros = f.startMicros + Math.floor(rnd() * 600) * 1_000_000;
      f.endExclusive = rnd() < 0.5;
    }
    if (rnd() < 0.4) {
      f.person = {
        personIds: new Set(rnd() < 0.8 ? [pick(people)] : []),
        identifiers: new Set(rnd() < 0.6 ? [pick(idents)] : ['nobody@example.com']),
      };
    }
    return f;
  };
  return { docs, query, filter, rnd };
}

/** What the index must return, computed the obvious way. */
function reference(docs: IndexedDocument[], query: QueryLexeme[], f: IndexFilter, limit: number, personLimit: number) {
  const w = PARAMS.titleWeight;
  const passages = docs.flatMap((d) => {
    const titleLen = [...d.title.values()].reduce((a, b) => a + b, 0);
    return d.passages.map((p) => {
      const tf = new Map(p.terms);
      for (const [t, n] of d.title) tf.set(t, (tf.get(t) ?? 0) + w * n);
      const len = [...p.terms.values()].reduce((a, b) => a + b, 0) + w * titleLen;
      return { doc: d, chunkId: p.chunkId, tf, len };
    });
  });
  const N = passages.length;
  const avgdl = passages.reduce((a, p) => a + p.len, 0) / N;
  const passes = (d: IndexedDocument) =>
    (f.sourceType === undefined || d.sourceType === f.sourceType) &&
    (f.hasAttachments === undefined || d.hasAttachments === f.hasAttachments) &&
    (f.threadId === undefined || d.threadId === f.threadId) &&
    (f.startMicros === undefined || d.tsMicros >= f.startMicros) &&
    (f.endMicros === undefined || (f.endExclusive ? d.tsMicros < f.endMicros : d.tsMicros <= f.endMicros)) &&
    (!f.person ||
      d.personIds.some((p) => f.person!.personIds.has(p)) ||
      d.identifiers.some((v) => f.person!.identifiers.has(v)));
  const best = new Map<string, { score: number; chunkId: string; doc: IndexedDocument }>();
  for (const p of passages) {
    if (!passes(p.doc)) continue;
    let s = 0;
    for (const q of query) {
      const tf = p.tf.get(q.term);
      if (!tf) continue;
      const df = passages.filter((x) => x.tf.has(q.term)).length;
      const idf = Math.log(1 + (N - df + 0.5) / (df + 0.5));
      // The index keeps the per-posting weight as a 32-bit float.
      s += idf * q.qtf * Math.fround((tf * (PARAMS.k1 + 1)) / (tf + PARAMS.k1 * (1 - PARAMS.b + (PARAMS.b * p.len) / avgdl)));
    }
    if (s === 0) continue;
    const cur = best.get(p.doc.docId);
    if (!cur || s > cur.score || (s === cur.score && p.chunkId < cur.chunkId)) best.set(p.doc.docId, { score: s, chunkId: p.chunkId, doc: p.doc });
  }
  const ranked = [...best.entries()].sort((a, b) => b[1].score - a[1].score || (a[0] < b[0] ? -1 : 1));
  const set = ranked.map(([, v]) => v.doc);
  const count = <K>(keys: K[]) => {
    const m = new Map<K, number>();
    for (const k of keys) m.set(k, (m.get(k) ?? 0) + 1);
    return m;
  };
  const sourceTypes = [...count(set.map((d) => d.sourceType))]
    .map(([value, n]) => ({ value, count: n }))
    .sort((x, y) => y.count - x.count || (x.value < y.value ? -1 : 1));
  const hasAttachments = [...count(set.map((d) => d.hasAttachments))]
    .map(([value, n]) => ({ value, count: n }))
    .sort((x, y) => y.count - x.count || (x.value ? 1 : -1));
  const people = count(set.flatMap((d) => [...new Set(d.personIds)]));
  const counts = [...people.values()].sort((x, y) => y - x);
  const floor = counts.length > personLimit ? counts[personLimit - 1] : 0;
  return {
    candidates: ranked.slice(0, limit).map(([docId, v]) => ({ doc_id: docId, chunk_id: v.chunkId, score: v.score })),
    total: set.length,
    sourceTypes,
    hasAttachments,
    people: [...people].filter(([, n]) => n >= floor).map(([personId, n]) => ({ personId, count: n })),
  };
}

const byPerson = (a: { personId: string }, b: { personId: string }) => (a.personId < b.personId ? -1 : 1);

function expectSame(got: ReturnType<LexicalIndex['search']>, want: ReturnType<typeof reference>) {
  expect(got.candidates.map((c) => [c.doc_id, c.chunk_id])).toEqual(want.candidates.map((c) => [c.doc_id, c.chunk_id]));
  got.candidates.forEach((c, i) => expect(c.score).toBeCloseTo(want.candidates[i].score, 9));
  expect(got.total).toBe(want.total);
  expect(got.sourceTypes).toEqual(want.sourceTypes);
  // Equal counts have no defined order here.
  expect([...got.hasAttachments].sort((a, b) => b.count - a.count || (a.value ? 1 : -1))).toEqual(want.hasAttachments);
  expect([...got.people].sort(byPerson)).toEqual([...want.people].sort(byPerson));
}

describe('LexicalIndex agrees with a plain BM25F reference', () => {
  it('on random corpora, queries and filter combinations (ties included)', () => {
    let filtered = 0;
    for (const seed of [1, 2, 3]) {
      const { docs, query, filter } = makeCorpus(seed, 400);
      const index = new LexicalIndex(PARAMS);
      for (const d of docs) index.upsert(d);
      for (let i = 0; i < 150; i++) {
        const q = query();
        const f = filter();
        if (f.person || f.threadId) filtered++;
        const limit = [1, 5, 20, 1000][i % 4];
        expectSame(index.search(q, f, limit, [], 3), reference(docs, q, f, limit, 3));
      }
    }
    // The selective-filter paths were taken, not only the plain walk.
    expect(filtered).toBeGreaterThan(100);
  });

  it('after removals and new versions, like an index built from the final documents', () => {
    const { docs, query, filter, rnd } = makeCorpus(9, 300);
    const index = new LexicalIndex(PARAMS);
    for (const d of docs) index.upsert(d);
    const live = new Map(docs.map((d) => [d.docId, d]));
    for (const d of docs) {
      const r = rnd();
      if (r < 0.2) {
        index.remove(d.docId);
        live.delete(d.docId);
      } else if (r < 0.4) {
        // A new version: another source, thread, people and text under the same id.
        const next = { ...d, sourceType: 'note', threadId: null, personIds: [], passages: [{ chunkId: `${d.docId}-v2`, terms: new Map([['w1', 2]]) }] };
        index.upsert(next);
        live.delete(d.docId);
        live.set(d.docId, next);
      }
    }
    const final = [...live.values()];
    for (let i = 0; i < 100; i++) {
      const q = query();
      const f = filter();
      expectSame(index.search(q, f, 10, [], 3), reference(final, q, f, 10, 3));
    }
  });
});
