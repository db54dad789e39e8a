/**
 * Meaning search sooner (issue 34 item 4), through the real ingest path and worker: the queue is
 * embedded newest first (by the documents' time, not the import's order); text with no meaning of
 * its own (quotes of a stored message, signatures, encoded leftovers) is not given to the model; and
 * GET /v1/status and `memex status` say how much of the last 30 / 365 days is searchable by meaning.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { formatStatus } from '../../src/cli/operator.ts';
import { reindexFailed, reindexModel } from '../../src/embedding/ops.ts';
import { createHashEmbedder } from '../../src/embedding/providers/hash.ts';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import type { Embedder } from '../../src/embedding/types.ts';
import { claimChunks, startEmbeddingWorker } from '../../src/embedding/worker.ts';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { NO_REDACTIONS } from '../../src/privacy/policy.ts';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from './fixtures.ts';

const DAY = 86_400_000;
const daysAgo = (n: number) => new Date(Date.now() - n * DAY).toISOString();

let g: TestGateway;
beforeAll(async () => {
  g = await startTestGateway();
});
afterAll(async () => g.close());
beforeEach(async () => {
  await g.db.exec('TRUNCATE chunk_embeddings, chunk_documents, ingest_submissions, chunks, document_people, documents, threads, embedding_models CASCADE');
});

/** Ingests documents in the given order, returning doc ids by label. */
async function ingest(docs: { label: string; body: Record<string, unknown> }[]): Promise<Map<string, string>> {
  const ids = new Map<string, string>();
  for (const d of docs) {
    const res = await g.request('POST', '/v1/ingest', d.body);
    expect(res.statusCode, res.body).toBe(202);
    ids.set(d.label, res.json().doc_id);
  }
  return ids;
}

/** The document of each chunk the worker's claim takes, one claim at a time, until the queue is empty. */
async function claimOrder(ids: Map<string, string>): Promise<string[]> {
  const label = new Map([...ids].map(([l, id]) => [id, l]));
  const order: string[] = [];
  for (;;) {
    const [claimed] = await claimChunks(g.db, 1, 300);
    if (!claimed) return order;
    const r = await g.db.query<{ doc_id: string }>('SELECT doc_id FROM chunk_documents WHERE chunk_id = $1', [claimed.chunk_id]);
    order.push(label.get(r.rows[0].doc_id)!);
  }
}

const note = (text: string, at: string) => noteBody({ content: { mime_type: 'text/plain', data: text }, content_timestamp: at });

describe(`newest first (${backend})`, () => {
  it('an import stored oldest first is embedded newest first; a date after the import counts as its time', async () => {
    const ids = await ingest([
      { label: '2009', body: note('Minutes of the 2009 allotment society meeting', '2009-05-01T10:00:00Z') },
      { label: 'last year', body: note('Receipt for the winter tyres', daysAgo(300)) },
      { label: 'last week', body: note('Dentist moved the appointment to Thursday', daysAgo(7)) },
      { label: 'yesterday', body: note('Parcel tracking number for the new kettle', daysAgo(1)) },
      { label: 'next year', body: note('Conference in Porto, keynote at nine', new Date(Date.now() + 300 * DAY).toISOString()) },
    ]);
    expect(await claimOrder(ids)).toEqual(['next year', 'yesterday', 'last week', 'last year', '2009']);
  });

  it('a chunk shared with an older message takes the newest date of the documents it serves (issue 48)', async () => {
    const shared = 'The quarterly allotment report is attached; comments welcome before the committee meets.';
    const ids = await ingest([
      { label: 'old', body: note(shared, '2012-03-01T10:00:00Z') },
      { label: 'mid', body: note('Warranty card for the dishwasher', '2020-06-01T00:00:00Z') },
      // The same text again in this week's mail: one chunk, serving both.
      { label: 'new', body: note(shared, daysAgo(3)) },
    ]);
    const r = await g.db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunks');
    expect(r.rows[0].n).toBe(2);
    // The shared chunk is claimed first (it serves this week's mail), not after the 2020 one.
    const [first] = await claimChunks(g.db, 1, 300);
    const docs = await g.db.query<{ doc_id: string }>('SELECT doc_id FROM chunk_documents WHERE chunk_id = $1 ORDER BY doc_id', [first.chunk_id]);
    expect(docs.rows.map((x) => x.doc_id).sort()).toEqual([ids.get('old'), ids.get('new')].sort());
    // An older document sharing it later does not move it back.
    await ingest([{ label: 'older', body: note(shared, '2001-01-01T00:00:00Z') }]);
    const at = await g.db.query<{ at: Date }>('SELECT newest_at AS at FROM chunks WHERE chunk_id = $1', [first.chunk_id]);
    expect(Date.now() - new Date(at.rows[0].at).getTime()).toBeLessThan(4 * DAY);
  });

  it('chunks queued again (reindex --failed, reindex --model) keep the order', async () => {
    const ids = await ingest([
      { label: 'old', body: note('A letter from the bank about the old account', '2015-01-01T00:00:00Z') },
      { label: 'new', body: note('Invitation to the street party on Saturday', daysAgo(2)) },
      { label: 'mid', body: note('Warranty card for the dishwasher', '2022-06-01T00:00:00Z') },
    ]);
    await g.db.query("UPDATE chunks SET embedding_status = 'failed', newest_at = NULL");
    expect(await reindexFailed(g.db)).toBe(3);
    expect(await claimOrder(ids)).toEqual(['new', 'mid', 'old']);
    await g.db.query("UPDATE chunks SET embedding_status = 'embedded', newest_at = NULL");
    await reindexModel(g.db, 'hash-64');
    expect(await claimOrder(ids)).toEqual(['new', 'mid', 'old']);
  });
});

/** The hash embedder, recording every text the model is given. */
function recording(): Embedder & { texts: string[] } {
  const inner = createHashEmbedder(64);
  const texts: string[] = [];
  return {
    name: inner.name,
    dimensions: inner.dimensions,
    texts,
    async embed(batch, kind) {
      texts.push(...batch);
      return inner.embed(batch, kind);
    },
  };
}

async function embedAll(embedder: Embedder) {
  const worker = startEmbeddingWorker({ db: g.db, embedder, pollMs: 20, batchSize: 8 });
  await waitFor(async () => {
    const r = await g.db.query<{ n: number }>("SELECT count(*)::int AS n FROM chunks WHERE embedding_status IN ('pending', 'processing')");
    return r.rows[0].n === 0;
  });
  await worker.stop();
  return worker.stats;
}

const email = (id: string, text: string, at: string, thread?: string) =>
  noteBody({
    source_type: 'email',
    source_id: id,
    title: 'Budget meeting',
    content: { mime_type: 'text/plain', data: text },
    content_timestamp: at,
    ...(thread ? { thread: { external_id: thread, title: 'Budget meeting' } } : {}),
  });

describe(`what the model is given (${backend})`, () => {
  it('a reply is embedded without the quote of a stored message; a quote of nothing stored is kept; signature and PGP block never', async () => {
    const ids = await ingest([
      { label: 'asked', body: email('m1', 'Can we move the budget meeting to Friday afternoon?', daysAgo(3), 't1') },
      {
        label: 'reply',
        body: email(
          'm2',
          'Friday works for me, the room is booked.\n\nOn Mon, 3 Mar 2026, Ann Lee wrote:\n> Can we move the budget meeting to Friday afternoon?\n\n-- \nBob Stone\nHead of Finance, +1 617 555 0100',
          daysAgo(2),
          't1',
        ),
      },
      { label: 'only quote', body: email('m3', '> Can we move the budget meeting to Friday afternoon?', daysAgo(1), 't1') },
      { label: 'forward of the unknown', body: email('m4', 'See what the landlord said:\n> The rent goes up in May.', daysAgo(1)) },
      {
        label: 'signed',
        body: email(
          'm5',
          'The contract draft is attached.\n-----BEGIN PGP SIGNATURE-----\n\niQEzBAEBCAAdFiEEk1Xq9Zb2o7Lr4ZrQ0x1mB5tU8ZkFAmX0aBcACgkQ0x1mB5tU\n=Ab12\n-----END PGP SIGNATURE-----',
          daysAgo(1),
        ),
      },
    ]);
    const model = recording();
    const stats = await embedAll(model);
    expect(model.texts).toContain('Friday works for me, the room is booked.');
    expect(model.texts).toContain('See what the landlord said:\n> The rent goes up in May.');
    expect(model.texts).toContain('The contract draft is attached.');
    expect(model.texts.filter((t) => t.includes('Can we move')).length).toBe(1); // the stored message itself
    expect(model.texts.join('\n')).not.toMatch(/Head of Finance|BEGIN PGP|iQEzBAEB/);
    // The chunk that is all quote has no vector, and its document is as searchable as the rest.
    expect(stats.skipped).toBe(1);
    const onlyQuote = await g.db.query<{ status: string; vectors: number }>(
      `SELECT d.status, (SELECT count(*)::int FROM chunk_embeddings e JOIN chunk_documents cd ON cd.chunk_id = e.chunk_id
                          WHERE cd.doc_id = d.doc_id) AS vectors FROM documents d WHERE d.doc_id = $1`,
      [ids.get('only quote')],
    );
    expect(onlyQuote.rows[0]).toEqual({ status: 'indexed', vectors: 0 });
    // Every chunk keeps its whole text for the lexical leg.
    const reply = (await g.request('GET', `/v1/search?q=${encodeURIComponent('Head of Finance')}`)).json();
    expect(reply.hits.map((h: any) => h.document_id)).toEqual([ids.get('reply')]);
  });
});

describe(`a message stored whole: its parts decide what the model is given (${backend})`, () => {
  const raw = (id: string, date: string, body: string, reply?: string) =>
    Buffer.from(
      [
        'From: Ann Lee <ann@example.com>',
        'To: team@lists.example.org',
        'Subject: Budget meeting',
        `Date: ${date}`,
        `Message-ID: <${id}>`,
        ...(reply ? [`In-Reply-To: <${reply}>`, `References: <${reply}>`] : []),
        'Content-Type: text/plain; charset=utf-8',
        '',
        body,
      ].join('\r\n'),
    );
  const footer = '_______________________________________________\nTeam mailing list\nteam@lists.example.org\nhttps://lists.example.org/mailman/listinfo/team';
  const post = async (bytes: Buffer) => {
    const built = buildEmailDocument(await parseCollectedMessage(bytes), { sourceType: 'email_local', prefix: 'email', redaction: NO_REDACTIONS });
    const res = await g.request('POST', '/v1/ingest', built.document);
    expect(res.statusCode, res.body).toBe(202);
    return res.json().doc_id as string;
  };

  it('an Outlook reply leaves out the unquoted original (stored) and the list footer; every word stays searchable', async () => {
    await post(raw('m1@example.com', 'Mon, 2 Mar 2026 09:00:00 +0000', `Can we move the budget meeting to Friday afternoon?\n\n${footer}`));
    const reply = await post(
      raw(
        'm2@example.com',
        'Tue, 3 Mar 2026 09:00:00 +0000',
        `Friday works for me, the room is booked.\n\n________________________________\nFrom: Ann Lee\nSent: Monday, March 2, 2026 9:00 AM\nSubject: Budget meeting\n\nCan we move the budget meeting to Friday afternoon?\n\n${footer}`,
        'm1@example.com',
      ),
    );
    const model = recording();
    await embedAll(model);
    expect(model.texts).toContain('Friday works for me, the room is booked.');
    expect(model.texts).toContain('Can we move the budget meeting to Friday afternoon?'); // the stored original's own vector
    expect(model.texts.join('\n')).not.toMatch(/mailing list|listinfo|Sent: Monday/);
    const hits = (await g.request('GET', `/v1/search?q=${encodeURIComponent('"Sent: Monday" listinfo')}`)).json().hits;
    expect(hits.map((h: any) => h.document_id)).toEqual([reply]);
  });
});

describe(`how much of the recent past is searchable by meaning (${backend})`, () => {
  it('GET /v1/status and memex status give the share of the last 30 and 365 days', async () => {
    await ingest([
      { label: 'a', body: note('Plumber comes on Tuesday morning', daysAgo(2)) },
      { label: 'b', body: note('School trip form signed and returned', daysAgo(10)) },
      { label: 'c', body: note('Car insurance renewal quote', daysAgo(200)) },
      { label: 'd', body: note('Old diary entry about the summer', daysAgo(800)) },
    ]);
    const before = (await g.request('GET', '/v1/status')).json();
    expect(before.meaning_searchable).toEqual({
      last_30_days: { documents: 2, searchable: 0, share: 0 },
      last_365_days: { documents: 3, searchable: 0, share: 0 },
    });
    // Two chunks embedded: newest first, so those are the last 30 days.
    const hash = createHashEmbedder(64);
    const two = await claimChunks(g.db, 2, 300);
    const vectors = await hash.embed(two.map((c) => c.text));
    await storeEmbeddings(g.db, two.map((c, i) => ({ chunk_id: c.chunk_id, model: hash.name, vector: vectors[i] })));
    const after = (await g.request('GET', '/v1/status')).json();
    expect(after.meaning_searchable).toEqual({
      last_30_days: { documents: 2, searchable: 2, share: 1 },
      last_365_days: { documents: 3, searchable: 2, share: 0.667 },
    });
    expect(formatStatus(after).join('\n')).toMatch(/meaning +last 30 days: 100 % \(2 of 2 documents\); last 365 days: 66 % \(2 of 3 documents\)/);
  });
});
