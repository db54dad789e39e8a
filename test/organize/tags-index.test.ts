/**
 * Issue 44 at 1M documents: a tag change reaches `tag:` search without the index reloading the documents it
 * changed (migration 270, src/search/index-sync.ts applyTags, index/update.ts setDocumentTags). What a user sees
 * stays the same as a reload: tag:, -tag:, tag:a/*, a conversation's tag, removal, and the tag facet; and a
 * change of the document's own words in the same transaction as a tag change is not lost.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addTag, removeTag } from '../../src/organize/tags.ts';
import { IndexSync } from '../../src/search/index-sync.ts';
import { doc, q, startSearchGateway, type SearchGateway } from '../search/helpers.ts';

const BM25 = { k1: 1.2, b: 0.4, titleWeight: 2 };
let g: SearchGateway;
let sync: IndexSync;
const docs: string[] = [];
let threadDocs: string[] = [];
let threadId = '';
let crates = '';

const found = async (query: string): Promise<string[]> => {
  const res = await g.get(q({ q: query, k: 50 }));
  expect(res.statusCode, res.body).toBe(200);
  return res.json().hits.filter((h: any) => !h.context).map((h: any) => h.document_id).sort();
};
const sorted = (a: string[]) => [...a].sort();

beforeAll(async () => {
  g = await startSearchGateway({ config: { indexPollMs: 0 } });
  for (let i = 0; i < 12; i++) docs.push((await g.ingest(doc(`Ledger page ${i} about the orchard accounts`))).doc_id);
  const thread = { external_id: 'harvest-thread', title: 'Harvest' };
  for (const text of ['Harvest starts Monday', 'Bring the crates for the harvest']) {
    const d = await g.ingest(doc(text, { source_type: 'email', thread }));
    threadDocs.push(d.doc_id);
    if (text.includes('crates')) crates = d.doc_id;
  }
  threadDocs = sorted(threadDocs);
  threadId = (await g.db.query<{ t: string }>('SELECT thread_id::text AS t FROM documents WHERE doc_id = $1', [threadDocs[0]])).rows[0].t;
  // An index of its own, following the same change log, whose counters say what it read.
  sync = new IndexSync(g.db, BM25, { pollIntervalMs: 0 });
  await sync.current();
}, 120_000);

afterAll(async () => {
  await sync?.close();
  await g?.close();
});

describe('tag changes in the lexical index (issue 44, 1M documents)', () => {
  it('tags given and taken reach tag:, -tag: and tag:a/* without reloading the documents', async () => {
    // Caught up first: on a shared PostgreSQL server another session's open transaction holds the horizon back,
    // and the ingests above are read from the log once more by the first poll.
    const dead = (await sync.current()).size.deadPassages;
    const reloaded = sync.counters.applied;
    const even = docs.filter((_, i) => i % 2 === 0);
    expect(await addTag(g.db, 'finance/orchard', { docIds: even })).toBe(6);
    expect(await addTag(g.db, 'harvest', { threadIds: [threadId] })).toBe(1);

    const index = await sync.current();
    expect(sync.counters.applied).toBe(reloaded);
    expect(sync.counters.tagsApplied).toBeGreaterThanOrEqual(8);
    expect(index.size.deadPassages).toBe(dead);

    expect(await found('tag:finance/orchard')).toEqual(sorted(even));
    expect(await found('tag:finance/*')).toEqual(sorted(even));
    expect(await found('orchard -tag:finance/orchard')).toEqual(sorted(docs.filter((_, i) => i % 2 === 1)));
    expect(await found('tag:harvest')).toEqual(threadDocs);
    expect(await found('tag:harvest crates')).toEqual([crates]);
    const facets = (await g.get(q({ q: 'orchard', k: 5 }))).json().facets;
    expect(facets.tag).toEqual(expect.arrayContaining([expect.objectContaining({ value: 'finance/orchard', count: 6 })]));

    // Taken off some, moved to another name on one: the old lists lose them, nothing else changes.
    expect(await removeTag(g.db, 'finance/orchard', { docIds: even.slice(0, 3) })).toBe(3);
    await g.db.query(`UPDATE document_tags SET tag = 'finance/pears' WHERE doc_id = $1 AND tag = 'finance/orchard'`, [even[4]]);
    await removeTag(g.db, 'harvest', { threadIds: [threadId] });
    await sync.current();
    expect(sync.counters.applied).toBe(reloaded);
    expect(await found('tag:finance/orchard')).toEqual(sorted([even[3], even[5]]));
    expect(await found('tag:finance/pears')).toEqual([even[4]]);
    expect(await found('tag:finance/*')).toEqual(sorted(even.slice(3)));
    expect(await found('tag:harvest')).toEqual([]);
    // The words are what they were.
    expect(await found('orchard accounts')).toEqual(sorted(docs));
  });

  it('a fresh build of the index answers the same', async () => {
    const fresh = new IndexSync(g.db, BM25, { pollIntervalMs: 0 });
    try {
      const built = await fresh.current();
      const kept = await sync.current();
      expect(kept.size.documents).toBe(built.size.documents);
      expect(kept.size.passages).toBe(built.size.passages);
    } finally {
      await fresh.close();
    }
  });

  it('a change of the words in the same transaction as a tag change is found too', async () => {
    await sync.current();
    const reloaded = sync.counters.applied;
    await g.db.transaction(async (tx) => {
      await addTag(tx, 'zeppelins', { docIds: [docs[1]] });
      await tx.query(`UPDATE documents SET title = 'Zeppelin hangar inventory' WHERE doc_id = $1`, [docs[1]]);
    });
    await sync.current();
    expect(sync.counters.applied).toBe(reloaded + 1);
    expect(await found('tag:zeppelins')).toEqual([docs[1]]);
    expect(await found('hangar')).toEqual([docs[1]]);
    expect(await found('tag:zeppelins hangar')).toEqual([docs[1]]);
  });
});
