/**
 * Word positions in the in-memory index: a phrase matches its words adjacent and in order (not the
 * same words apart or reversed), `subject:` sees only the title, and the sender / recipient roles
 * narrow a person (`from:`, `to:`). Constraints combine: groups must all hold, `none` excludes.
 */
import { describe, expect, it } from 'vitest';
import { LexicalIndex, type IndexedDocument, type QueryConstraints } from '../../src/search/index/lexical-index.ts';

const PARAMS = { k1: 1.2, b: 0.4, titleWeight: 2 };
let n = 0;
const uuid = () => `00000000-0000-4000-8000-${(++n).toString(16).padStart(12, '0')}`;

/** A document whose words (already lexemes) are at positions 1, 2, ... as PostgreSQL numbers them. */
function doc(text: string, title = '', over: Partial<IndexedDocument> = {}): IndexedDocument {
  const analyse = (s: string) => {
    const terms = new Map<string, number>();
    const positions = new Map<string, number[]>();
    s.split(' ')
      .filter(Boolean)
      .forEach((w, i) => {
        terms.set(w, (terms.get(w) ?? 0) + 1);
        positions.set(w, [...(positions.get(w) ?? []), i + 1]);
      });
    return { terms, positions };
  };
  const t = analyse(title);
  const p = analyse(text);
  return {
    docId: uuid(),
    sourceType: 'email',
    hasAttachments: false,
    tsMicros: ++n * 1_000_000,
    threadId: null,
    personIds: [],
    identifiers: [],
    title: t.terms,
    titlePositions: t.positions,
    passages: [{ chunkId: uuid(), terms: p.terms, positions: p.positions }],
    ...over,
  };
}

function build(docs: IndexedDocument[]) {
  const index = new LexicalIndex(PARAMS);
  for (const d of docs) index.upsert(d);
  return index;
}

const found = (index: LexicalIndex, words: string[], constraints: QueryConstraints) =>
  index
    .match(
      words.map((term) => ({ term, qtf: 1 })),
      {},
      50,
      { constraints, browse: true },
    )
    .candidates.map((c) => c.doc_id)
    .sort();

const phrase = (...ws: string[]) => ({ kind: 'phrase' as const, terms: ws.map((term, i) => ({ term, at: i + 1 })) });

describe('lexical index: positions', () => {
  const adjacent = doc('the kernel panic happen at boot');
  const apart = doc('panic in the kernel not a kernel bug panic');
  const reversed = doc('panic kernel');
  const titled = doc('nothing here', 'kernel panic report');
  const gap = doc('implicit declar of function foo');
  const index = build([adjacent, apart, reversed, titled, gap]);

  it('a phrase matches its words adjacent and in order only', () => {
    expect(found(index, ['kernel', 'panic'], { all: [[phrase('kernel', 'panic')]], none: [] })).toEqual(
      [adjacent.docId, titled.docId].sort(),
    );
  });

  it('a phrase keeps the gap a stop word left (positions as PostgreSQL gives them)', () => {
    const withGap = { kind: 'phrase' as const, terms: [{ term: 'declar', at: 1 }, { term: 'function', at: 3 }] };
    expect(found(index, ['declar', 'function'], { all: [[withGap]], none: [] })).toEqual([gap.docId]);
    const noGap = { kind: 'phrase' as const, terms: [{ term: 'declar', at: 1 }, { term: 'function', at: 2 }] };
    expect(found(index, ['declar', 'function'], { all: [[noGap]], none: [] })).toEqual([]);
  });

  it('a title-only condition ignores the text, and a phrase never spans title and text', () => {
    expect(found(index, ['kernel'], { all: [[{ kind: 'terms', terms: ['kernel'], title: true }]], none: [] })).toEqual([titled.docId]);
    const spans = build([doc('panic now', 'the kernel')]);
    expect(found(spans, ['kernel', 'panic'], { all: [[phrase('kernel', 'panic')]], none: [] })).toEqual([]);
  });

  it('exclusion drops documents with the word or the phrase; OR groups accept either', () => {
    expect(found(index, ['kernel'], { all: [], none: [phrase('kernel', 'panic')] })).toEqual([apart.docId, reversed.docId].sort());
    expect(found(index, ['kernel'], { all: [], none: [{ kind: 'terms', terms: ['bug'] }] })).toEqual(
      [adjacent.docId, reversed.docId, titled.docId].sort(),
    );
    expect(
      found(index, ['kernel', 'function'], { all: [[phrase('kernel', 'panic'), { kind: 'terms', terms: ['function'] }]], none: [] }),
    ).toEqual([adjacent.docId, titled.docId, gap.docId].sort());
  });

  it('a person in a role: sender for from:, recipient for to:, either without a role', () => {
    const a = doc('hello', '', { personIds: ['p-alice', 'p-bob'], senders: ['p-alice'], recipients: ['p-bob', 'bob@example.com'] });
    const b = doc('hello', '', { personIds: ['p-alice', 'p-bob'], senders: ['p-bob'], recipients: ['p-alice'] });
    const people = build([a, b]);
    const who = (role: 'sender' | 'recipient' | undefined, id: string) =>
      found(people, ['hello'], { all: [[{ kind: 'person', personIds: [id], identifiers: [], role }]], none: [] });
    expect(who('sender', 'p-alice')).toEqual([a.docId]);
    expect(who('recipient', 'p-alice')).toEqual([b.docId]);
    expect(who(undefined, 'p-alice')).toEqual([a.docId, b.docId].sort());
    expect(found(people, ['hello'], { all: [[{ kind: 'person', personIds: [], identifiers: ['bob@example.com'], role: 'recipient' }]], none: [] })).toEqual([a.docId]);
  });

  it('only operators (no word): every document that holds them, newest first', () => {
    const res = index.match([], {}, 10, { constraints: { all: [], none: [{ kind: 'terms', terms: ['kernel'] }] }, browse: true });
    expect(res.candidates.map((c) => c.doc_id)).toEqual([gap.docId]);
  });

  it('positions survive removal of other documents and replacement of a document', () => {
    const idx = build([adjacent, apart]);
    idx.remove(apart.docId);
    idx.upsert({ ...reversed, docId: apart.docId });
    expect(found(idx, ['kernel', 'panic'], { all: [[phrase('kernel', 'panic')]], none: [] })).toEqual([adjacent.docId]);
  });
});
