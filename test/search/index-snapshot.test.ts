/**
 * The lexical index on disk (src/search/index-snapshot.ts, index/format.ts serialise/deserialise):
 * a snapshot read back answers every query exactly as the index it was written from (same
 * documents, order, scores, totals and facets), also after removals and new versions, and keeps
 * working as documents change afterwards; a file that was damaged in any way is refused, never used.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { IndexSnapshotFile, type SnapshotIdentity } from '../../src/search/index-snapshot.ts';
import {
  LexicalIndex,
  type DocCondition,
  type IndexedDocument,
  type IndexFilter,
  type QueryConstraints,
  type QueryLexeme,
} from '../../src/search/index/lexical-index.ts';

const PARAMS = { k1: 1.2, b: 0.4, titleWeight: 2 };
const IDENTITY: SnapshotIdentity = { instance: '00000000-0000-4000-8000-000000000001', migrations: { count: 3, latest: 147 }, database: '16384' };
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-snapshot-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

function rng(seed: number) {
  return () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0) / 2 ** 32);
}

function corpus(seed: number, size: number) {
  const rnd = rng(seed);
  const pick = <T>(a: T[]) => a[Math.floor(rnd() * a.length)];
  const hex = (n: number) => Array.from({ length: n }, () => Math.floor(rnd() * 16).toString(16)).join('');
  const uuid = () => `${hex(8)}-${hex(4)}-4${hex(3)}-8${hex(3)}-${hex(12)}`;
  // Non-Latin-1 words too: their list is stored as UTF-16.
  const vocab = [...Array.from({ length: 40 }, (_, i) => `w${i}`), 'café', 'naïve', '東京', 'straße'];
  // Words at positions 1, 2, ... (phrases), as the stored tsvectors give them.
  const text = (n: number) => {
    const terms = new Map<string, number>();
    const positions = new Map<string, number[]>();
    for (let i = 0; i < n; i++) {
      const w = vocab[Math.floor(rnd() ** 2 * vocab.length)];
      terms.set(w, (terms.get(w) ?? 0) + 1);
      positions.set(w, [...(positions.get(w) ?? []), i + 1]);
    }
    return { terms, positions };
  };
  const people = Array.from({ length: 10 }, () => uuid());
  const idents = Array.from({ length: 10 }, (_, i) => `p${i}@example.com`);
  const threads = Array.from({ length: 8 }, () => uuid());
  const sources = ['email', 'chatapp', 'sms', 'note'];
  const make = (docId = uuid()): IndexedDocument => {
    const title = rnd() < 0.4 ? text(1 + Math.floor(rnd() * 3)) : null;
    return {
    docId,
    sourceType: pick(sources),
    hasAttachments: rnd() < 0.3,
    tsMicros: Math.floor(rnd() * 1000) * 1_000_000,
    threadId: rnd() < 0.6 ? pick(threads) : null,
    personIds: rnd() < 0.8 ? Array.from({ length: 1 + Math.floor(rnd() * 5) }, () => pick(people)) : [],
    identifiers: rnd() < 0.5 ? [pick(idents)] : [],
    title: title?.terms ?? new Map(),
    titlePositions: title?.positions,
    // Some passages without positions (stored before positions were read).
    passages: Array.from({ length: rnd() < 0.3 ? 3 : 1 }, () => {
      const t = text(1 + Math.floor(rnd() * 12));
      return { chunkId: uuid(), terms: t.terms, positions: rnd() < 0.9 ? t.positions : undefined };
    }),
    senders: rnd() < 0.5 ? [pick(people), pick(idents)] : [],
    recipients: rnd() < 0.5 ? [pick(people)] : [],
    };
  };
  const docs = Array.from({ length: size }, () => make());
  const query = (): QueryLexeme[] => Array.from({ length: 1 + Math.floor(rnd() * 3) }, () => ({ term: pick([...vocab, 'absent']), qtf: 1 }));
  const filter = (): IndexFilter => {
    const f: IndexFilter = {};
    if (rnd() < 0.3) f.sourceType = pick(sources);
    if (rnd() < 0.2) f.hasAttachments = rnd() < 0.5;
    if (rnd() < 0.3) f.threadId = pick(threads);
    if (rnd() < 0.3) {
      f.startMicros = Math.floor(rnd() * 500) * 1_000_000;
      f.endMicros = f.startMicros + Math.floor(rnd() * 600) * 1_000_000;
    }
    if (rnd() < 0.3) f.person = { personIds: new Set([pick(people)]), identifiers: new Set(rnd() < 0.5 ? [pick(idents)] : []) };
    return f;
  };
  /** Operators: a phrase of two words, a title-only word, a person in a role, an exclusion. */
  const constraints = (): QueryConstraints => {
    const all: DocCondition[][] = [];
    const none: DocCondition[] = [];
    if (rnd() < 0.5) all.push([{ kind: 'phrase', terms: [{ term: pick(vocab.slice(0, 8)), at: 0 }, { term: pick(vocab.slice(0, 8)), at: 1 }] }]);
    if (rnd() < 0.3) all.push([{ kind: 'terms', terms: [pick(vocab.slice(0, 10))], title: true }]);
    if (rnd() < 0.4) all.push([{ kind: 'person', personIds: [pick(people)], identifiers: [pick(idents)], role: rnd() < 0.5 ? 'sender' : 'recipient' }]);
    if (rnd() < 0.3) none.push({ kind: 'terms', terms: [pick(vocab.slice(0, 5))] });
    return { all, none };
  };
  return { docs, make, query, filter, constraints, rnd, threads };
}

/** Facet entries with equal counts have no defined order. */
const normal = (r: ReturnType<LexicalIndex['search']>) => ({
  ...r,
  people: [...r.people].sort((x, y) => (x.personId < y.personId ? -1 : 1)),
  hasAttachments: [...r.hasAttachments].sort((x, y) => Number(x.value) - Number(y.value)),
});

/** Everything a search answers, from both indexes, for many queries and filters. */
let matched = 0;
function expectSameAnswers(a: LexicalIndex, b: LexicalIndex, c: ReturnType<typeof corpus>, n = 200) {
  for (let i = 0; i < n; i++) {
    const q = c.query();
    const f = c.filter();
    const limit = [1, 5, 20, 1000][i % 4];
    expect(normal(b.search(q, f, limit, [], 3))).toEqual(normal(a.search(q, f, limit, [], 3)));
    expect(b.allowedPassages(f, 10_000)).toEqual(a.allowedPassages(f, 10_000));
    // Phrases, title-only words, people in a role (positions and roles come back too).
    const cons = c.constraints();
    const m = (ix: LexicalIndex) => {
      const r = ix.match(q, f, limit, { constraints: cons });
      return { candidates: r.candidates, docs: r.docs.length, terms: r.terms };
    };
    expect(m(b)).toEqual(m(a));
    const browse = (ix: LexicalIndex) => ix.match([], f, limit, { constraints: cons, browse: true }).candidates;
    expect(browse(b)).toEqual(browse(a));
    matched += a.match(q, f, limit, { constraints: cons }).candidates.length > 0 && cons.all.some((g) => g[0].kind === 'phrase') ? 1 : 0;
  }
  expect(b.expand(['w1', 'ca'], 10)).toEqual(a.expand(['w1', 'ca'], 10));
  for (const t of c.threads) expect(b.threadOrder(t)).toEqual(a.threadOrder(t));
  expect(b.size.documents).toBe(a.size.documents);
  expect(b.size.passages).toBe(a.size.passages);
}

/** A changed index: 15 % removed, 15 % new versions (new passages, people, thread) under the same id. */
function churn(index: LexicalIndex, c: ReturnType<typeof corpus>) {
  for (const d of c.docs) {
    const r = c.rnd();
    if (r < 0.15) index.remove(d.docId);
    else if (r < 0.3) index.upsert(c.make(d.docId));
  }
}

const position = { horizon: 1234n, applied: new Map([[77, 1240n]]), logSeq: '80' };

describe('a snapshot answers exactly as the index it was written from', () => {
  it('in memory: serialise then deserialise, after removals and new versions, and after further changes', () => {
    const c = corpus(5, 600);
    const index = new LexicalIndex(PARAMS);
    for (const d of c.docs) index.upsert(d);
    churn(index, c);
    const loaded = LexicalIndex.deserialise(index.serialise());
    // Removed documents and their passages are not carried over.
    expect(index.size.deadPassages).toBeGreaterThan(0);
    expect(loaded.size.deadPassages).toBe(0);
    expectSameAnswers(index, loaded, c);
    // Both keep working as documents change: the loaded one grows its arrays out of the snapshot's.
    const more = Array.from({ length: 100 }, () => c.make());
    for (const ix of [index, loaded]) {
      for (const d of more) ix.upsert(d);
      for (const d of c.docs.slice(0, 50)) ix.remove(d.docId);
      for (const d of c.docs.slice(50, 80)) ix.upsert({ ...d, passages: [{ chunkId: `${d.docId}-v3`, terms: new Map([['w2', 1]]) }] });
    }
    expectSameAnswers(index, loaded, c);
    // Phrase conditions matched something (the positions were exercised, not only their absence).
    expect(matched).toBeGreaterThan(10);
  });

  it('on disk: written, read back, the same answers; the position and identity come back', async () => {
    const c = corpus(6, 500);
    const index = new LexicalIndex(PARAMS);
    for (const d of c.docs) index.upsert(d);
    churn(index, c);
    const file = new IndexSnapshotFile(path.join(dir, 'a', 'search-index.snapshot'));
    const bytes = await file.save(index.serialise(), position, IDENTITY);
    expect(fs.statSync(file.file).size).toBe(bytes);
    // Written atomically: no temporary file left beside it.
    expect(fs.readdirSync(path.dirname(file.file))).toEqual(['search-index.snapshot']);
    const r = await file.load(PARAMS);
    if (!r.ok) throw new Error(r.reason);
    expect(r.position).toEqual(position);
    expect(r.header.identity).toEqual(IDENTITY);
    expectSameAnswers(index, r.index, c);
    // Read in place (its lookup tables from the file): it keeps working as documents change, and a
    // snapshot of it reads back the same again.
    const more = Array.from({ length: 80 }, () => c.make());
    for (const ix of [index, r.index]) {
      for (const d of more) ix.upsert(d);
      for (const d of c.docs.slice(0, 40)) ix.remove(d.docId);
      for (const d of c.docs.slice(40, 70)) ix.upsert({ ...d, passages: [{ chunkId: `${d.docId}-v4`, terms: new Map([['w3', 2]]) }] });
    }
    expectSameAnswers(index, r.index, c);
    await file.save(r.index.serialise(), position, IDENTITY);
    const again = await file.load(PARAMS);
    if (!again.ok) throw new Error(again.reason);
    expectSameAnswers(index, again.index, c);
  });

  it('an empty index round-trips', async () => {
    const file = new IndexSnapshotFile(path.join(dir, 'empty.snapshot'));
    await file.save(new LexicalIndex(PARAMS).serialise(), position, IDENTITY);
    const r = await file.load(PARAMS);
    if (!r.ok) throw new Error(r.reason);
    expect(r.index.size.documents).toBe(0);
    expect(r.index.search([{ term: 'w1', qtf: 1 }], {}, 10).candidates).toEqual([]);
  });
});

describe('a damaged or foreign snapshot is refused', () => {
  const c = corpus(7, 300);
  const index = new LexicalIndex(PARAMS);
  for (const d of c.docs) index.upsert(d);
  const good = path.join(dir, 'good.snapshot');
  const variant = async (name: string, damage: (b: Buffer) => Buffer) => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, damage(fs.readFileSync(good)));
    return new IndexSnapshotFile(f).load(PARAMS);
  };

  it('every single flipped byte (header, body, checksum) is detected', async () => {
    await new IndexSnapshotFile(good).save(index.serialise(), position, IDENTITY);
    const size = fs.statSync(good).size;
    const rnd = rng(3);
    const offsets = [0, 8, 12, 20, 100, size - 33, size - 1, ...Array.from({ length: 30 }, () => Math.floor(rnd() * size))];
    for (const at of offsets) {
      const r = await variant('flipped.snapshot', (b) => {
        b[at] ^= 0x10;
        return b;
      });
      expect(r.ok, `byte ${at} of ${size}`).toBe(false);
    }
  });

  it('a truncated or extended file, a missing file, another format, other BM25 parameters', async () => {
    const size = fs.statSync(good).size;
    for (const keep of [0, 10, 40, Math.floor(size / 2), size - 32, size - 1]) {
      const r = await variant('short.snapshot', (b) => b.subarray(0, keep));
      expect(r.ok, `kept ${keep} of ${size}`).toBe(false);
    }
    expect((await variant('long.snapshot', (b) => Buffer.concat([b, Buffer.alloc(8)]))).ok).toBe(false);
    expect(await new IndexSnapshotFile(path.join(dir, 'none.snapshot')).load(PARAMS)).toEqual({ ok: false, reason: 'no snapshot' });
    const other = await variant('format.snapshot', (b) => {
      b.writeUInt32LE(99, 8);
      return b;
    });
    expect(other).toMatchObject({ ok: false, reason: expect.stringContaining('format 99') });
    expect(await new IndexSnapshotFile(good).load({ ...PARAMS, k1: 1.5 })).toMatchObject({ ok: false, reason: 'other BM25 parameters' });
    expect((await new IndexSnapshotFile(good).load(PARAMS)).ok).toBe(true);
  });
});
