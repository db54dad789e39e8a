/**
 * The query language through GET /v1/search (what the CLI, the web UI and MCP send as `q`):
 * phrases (adjacent and in order), exclusions, OR, the operators mapped onto the filters, prefix
 * matching of the last word (exact above prefix), an unbalanced quote, and a 10,000-character query.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConceptEmbedder, doc, indexVectors, q, startSearchGateway, type SearchGateway } from './helpers.ts';

const ids = (res: any) => res.json().hits.filter((h: any) => !h.context).map((h: any) => h.document_id);
const sorted = (a: string[]) => [...a].sort();

describe('GET /v1/search: the query language', () => {
  let g: SearchGateway;
  const D: Record<string, string> = {};
  let threadId = '';

  beforeAll(async () => {
    g = await startSearchGateway();
    const add = async (key: string, text: string, over: Record<string, unknown> = {}) => {
      const r = await g.ingest(doc(text, over));
      D[key] = r.doc_id;
      return r;
    };
    const alice = { identifier: 'alice@example.com', identifier_type: 'email', display_name: 'Alice Liddell' };
    const bob = { identifier: 'bob@example.com', identifier_type: 'email', display_name: 'Bob Builder' };
    await add('panic', 'The kernel panic happened at boot on the laptop', {
      source_type: 'email',
      title: 'Crash report',
      content_timestamp: '2026-10-05T09:00:00Z',
      people: [{ ...alice, role: 'sender' }, { ...bob, role: 'recipient' }],
      metadata: { attachments: [{ index: 0, kind: 'file', role: 'attachment', mime_type: 'text/plain', filename: 'dmesg.txt', size_bytes: 10 }] },
    });
    await add('apart', 'Panic in the office: the kernel team found a bug', {
      source_type: 'email',
      title: 'Office news',
      content_timestamp: '2026-09-20T09:00:00Z',
      people: [{ ...bob, role: 'sender' }, { ...alice, role: 'recipient' }],
    });
    await add('reversed', 'panic kernel', { source_type: 'note', content_timestamp: '2026-11-02T09:00:00Z' });
    await add('gap', 'warning: implicit declaration of function foo', {
      source_type: 'email',
      title: 'Build log',
      content_timestamp: '2026-10-20T09:00:00Z',
      people: [{ ...bob, role: 'sender' }],
    });
    await add('subject', 'nothing about computers here', { source_type: 'email', title: 'Kernel panic again', content_timestamp: '2026-08-01T09:00:00Z' });
    // Prefix: 'listen' is typed as 'lis'; 'list' and 'listening' are other words.
    await add('list', 'a shopping list for the weekend', { content_timestamp: '2025-01-01T09:00:00Z' });
    await add('listening', 'listening to music while cooking', { content_timestamp: '2025-01-02T09:00:00Z' });
    const t = await add('thread1', 'lunch on friday', {
      source_type: 'chatapp',
      content_timestamp: '2026-10-10T09:00:00Z',
      thread: { external_id: 'thread-q', thread_type: 'group', is_group: true },
    });
    threadId = t.thread_id;
    await add('thread2', 'lunch on monday instead', { source_type: 'chatapp', content_timestamp: '2026-10-11T09:00:00Z' });
    // A message with a crash dump attached, and the dump itself stored as a file (its own one attachment).
    const dump = { index: 0, kind: 'file', role: 'attachment', mime_type: 'text/plain', filename: 'crashdump.txt', size_bytes: 10 };
    await add('dumpMail', 'the crashdump from last night is attached', { source_type: 'email', metadata: { attachments: [dump] } });
    await add('treeDoc', 'The tree in the garden fell over. Please update the device tree bindings today.', { source_type: 'note' });
    await add('dumpFile', 'crashdump: oops at 0xdeadbeef', { source_type: 'localfs', metadata: { attachments: [dump] } });
  });
  afterAll(async () => g.close());

  it('a phrase matches its words adjacent and in order, not the same words apart or reversed', async () => {
    const res = await g.get(q({ q: '"kernel panic"' }));
    expect(res.statusCode).toBe(200);
    expect(sorted(ids(res))).toEqual(sorted([D.panic, D.subject]));
    expect(res.json().total).toBe(2);
    // Without quotes every document with either word is found, as before.
    expect(ids(await g.get(q({ q: 'kernel panic' })))).toEqual(expect.arrayContaining([D.panic, D.apart, D.reversed, D.subject]));
  });

  it('a phrase keeps the gap of a stop word ("declaration of function")', async () => {
    expect(ids(await g.get(q({ q: '"implicit declaration of function"' })))).toEqual([D.gap]);
    expect(ids(await g.get(q({ q: '"declaration function"' })))).toEqual([]);
  });

  it('exclusion: -word and -"phrase"', async () => {
    expect(sorted(ids(await g.get(q({ q: 'kernel -bug' }))))).toEqual(sorted([D.panic, D.reversed, D.subject]));
    expect(sorted(ids(await g.get(q({ q: 'kernel -"kernel panic"' }))))).toEqual(sorted([D.apart, D.reversed]));
    expect(sorted(ids(await g.get(q({ q: 'kernel NOT bug' }))))).toEqual(sorted([D.panic, D.reversed, D.subject]));
  });

  it('OR between a phrase and a word: documents with either', async () => {
    expect(sorted(ids(await g.get(q({ q: '"kernel panic" OR implicit' }))))).toEqual(sorted([D.panic, D.subject, D.gap]));
  });

  it('from:, to: and with: select a person by role, by address or by name', async () => {
    expect(sorted(ids(await g.get(q({ q: 'kernel from:alice@example.com' }))))).toEqual([D.panic]);
    expect(sorted(ids(await g.get(q({ q: 'kernel to:alice@example.com' }))))).toEqual([D.apart]);
    expect(sorted(ids(await g.get(q({ q: 'kernel with:alice@example.com' }))))).toEqual(sorted([D.panic, D.apart]));
    expect(sorted(ids(await g.get(q({ q: 'from:alice' }))))).toEqual([D.panic]);
    expect(sorted(ids(await g.get(q({ q: 'from:"Bob Builder"' }))))).toEqual(sorted([D.apart, D.gap]));
    expect(sorted(ids(await g.get(q({ q: 'kernel -from:bob' }))))).toEqual(sorted([D.panic, D.reversed, D.subject]));
  });

  it('subject: looks in the title only', async () => {
    expect(ids(await g.get(q({ q: 'subject:kernel' })))).toEqual([D.subject]);
    expect(ids(await g.get(q({ q: 'subject:"crash report"' })))).toEqual([D.panic]);
  });

  it('type:, has:attachment and in:thread/ID are the filters', async () => {
    expect(ids(await g.get(q({ q: 'panic type:note' })))).toEqual([D.reversed]);
    expect(ids(await g.get(q({ q: 'kernel has:attachment' })))).toEqual([D.panic]);
    expect(sorted(ids(await g.get(q({ q: 'kernel -has:attachment' }))))).toEqual(sorted([D.apart, D.reversed, D.subject]));
    expect(ids(await g.get(q({ q: `lunch in:thread/${threadId}` })))).toEqual([D.thread1]);
  });

  it("a phrase's words are marked in the snippet where the phrase is, not where one of them stands alone", async () => {
    const hit = (await g.get(q({ q: '"device tree"' }))).json().hits.find((h: any) => h.document_id === D.treeDoc);
    expect(hit.snippet).toContain('«device» «tree» bindings');
    expect(hit.snippet).toContain('The tree in the garden');
  });

  it('has:attachment finds messages with attachments, not stored files (a file is not its own attachment)', async () => {
    expect(sorted(ids(await g.get(q({ q: 'crashdump' }))))).toEqual(sorted([D.dumpMail, D.dumpFile]));
    expect(ids(await g.get(q({ q: 'crashdump has:attachment' })))).toEqual([D.dumpMail]);
  });

  it('before:, after: and on: take ISO dates and months (UTC; before is exclusive, after inclusive)', async () => {
    expect(sorted(ids(await g.get(q({ q: 'kernel on:2026-10' }))))).toEqual([D.panic]);
    expect(sorted(ids(await g.get(q({ q: 'kernel after:2026-10-05' }))))).toEqual(sorted([D.panic, D.reversed]));
    expect(sorted(ids(await g.get(q({ q: 'kernel before:2026-10-05' }))))).toEqual(sorted([D.apart, D.subject]));
    expect(sorted(ids(await g.get(q({ q: 'kernel on:2026-10-05' }))))).toEqual([D.panic]);
    expect(sorted(ids(await g.get(q({ q: 'kernel after:2026-09 before:2026-11' }))))).toEqual(sorted([D.panic, D.apart]));
  });

  it('query operators and query-parameter filters combine (AND); a contradiction matches nothing', async () => {
    expect(ids(await g.get(q({ q: 'kernel type:email', has_attachments: true })))).toEqual([D.panic]);
    expect(ids(await g.get(q({ q: 'kernel after:2026-10-01', end_date: '2026-10-31' })))).toEqual([D.panic]);
    const none = await g.get(q({ q: 'kernel type:note', source_type: 'email' }));
    expect(none.statusCode).toBe(200);
    expect(none.json().total).toBe(0);
  });

  it('operators alone list what they select, newest first', async () => {
    expect(ids(await g.get(q({ q: 'type:email from:bob' })))).toEqual([D.gap, D.apart]);
  });

  it('an unknown name: stays a word, and an unusable operator value too', async () => {
    const res = await g.get(q({ q: 'foo:kernel' }));
    expect(res.statusCode).toBe(200);
    expect(ids(res)).toEqual(expect.arrayContaining([D.panic, D.apart]));
    expect((await g.get(q({ q: 'before:yesterday kernel' }))).statusCode).toBe(200);
  });

  it('an unbalanced quote is closed at the end, never a 500', async () => {
    const res = await g.get(q({ q: '"kernel panic' }));
    expect(res.statusCode).toBe(200);
    expect(sorted(ids(res))).toEqual(sorted([D.panic, D.subject]));
    for (const odd of ['"', '-', '-"', 'OR', 'from:', '" OR "', 'NOT', '(((', 'in:thread/x', 'on:2026-13']) {
      expect((await g.get(q({ q: odd }))).statusCode).toBe(200);
    }
  });

  it('the last word is a prefix (search as you type); an exact match ranks above prefix matches', async () => {
    // 'lis' is no word, yet typing it finds the words that begin with it.
    expect(sorted(ids(await g.get(q({ q: 'lis' }))))).toEqual(sorted([D.list, D.listening]));
    // 'list' is a word: its document first, then the one with a longer word.
    expect(ids(await g.get(q({ q: 'list' })))).toEqual([D.list, D.listening]);
    // A space after the word: the word is complete, no prefix.
    expect(ids(await g.get(q({ q: 'list ' })))).toEqual([D.list]);
    // One letter expands to nothing.
    expect(ids(await g.get(q({ q: 'l' })))).toEqual([]);
  });

  it('a 10,000-character query is answered; beyond the term budget the most common words are left out, and legs says so', async () => {
    const words = Array.from({ length: 3000 }, (_, i) => `w${i.toString(36)}x`);
    let long = `kernel ${words.join(' ')}`;
    long = long.slice(0, 10_000);
    expect(long.length).toBe(10_000);
    const res = await g.get(q({ q: long }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.legs.lexical_terms_dropped).toBeGreaterThan(0);
    expect(body.legs.lexical_note).toMatch(/left out/);
    // 'kernel' is the one word the store has: it is kept.
    expect(ids(res)).toEqual(expect.arrayContaining([D.panic, D.apart]));
    expect((await g.get(q({ q: 'x'.repeat(10_001) }))).statusCode).toBe(422);
  });
});

describe('the query language with the vector leg', () => {
  let g: SearchGateway;
  const D: Record<string, string> = {};
  beforeAll(async () => {
    const embedder = new ConceptEmbedder();
    g = await startSearchGateway({ embedder, config: { vectorMinSimilarity: 0.3, vectorWeight: 0.5, vectorLeg: 'always' } });
    D.phrase = (await g.ingest(doc('the car repair took a week'))).doc_id;
    D.near = (await g.ingest(doc('automobile sedan vehicle repair'))).doc_id;
    await indexVectors(g.db, embedder);
  });
  afterAll(async () => g.close());

  it('a document only the vector leg finds must hold the phrase and exclusions too', async () => {
    // Without quotes the semantically near document is found (it has 'repair', and 'automobile' is near 'car').
    expect(ids(await g.get(q({ q: 'car repair' })))).toEqual(expect.arrayContaining([D.phrase, D.near]));
    const phrase = (await g.get(q({ q: '"car repair"' }))).json();
    expect(phrase.legs.vector).toBe(true);
    expect(phrase.hits.map((h: any) => h.document_id)).toEqual([D.phrase]);
    expect(ids(await g.get(q({ q: 'car repair -sedan' })))).toEqual([D.phrase]);
  });
});
