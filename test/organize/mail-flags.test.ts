/**
 * Issue 44 item 5 through the real gateway: a message's flags at its source (POST /v1/documents/source-state, as
 * the IMAP collector sends them) are the tags unread, flagged and replied, origin `source`; a flag change there
 * adds or takes off the tag; a tag of the same name given by hand stays; other kinds of document get no flag tags.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
const ids: Record<string, string> = {};

async function ingestMail(sourceId: string, text: string, metadata: Record<string, unknown> = {}): Promise<string> {
  const r = await gw.request('POST', '/v1/ingest', noteBody({ source_type: 'email', source_id: sourceId, title: text, content: { mime_type: 'text/plain', data: text }, metadata }));
  expect(r.statusCode, r.body).toBeLessThan(300);
  return r.json().doc_id;
}
async function flags(sourceId: string, f: string[], sourceType = 'email'): Promise<void> {
  const r = await gw.request('POST', '/v1/documents/source-state', { updates: [{ source_type: sourceType, source_id: sourceId, folder: 'INBOX', flags: f }] });
  expect(r.statusCode, r.body).toBe(200);
}
async function tagsOf(docId: string): Promise<Array<{ name: string; origin: string }>> {
  const r = await gw.request('GET', `/v1/tags/on?doc_id=${docId}`);
  expect(r.statusCode, r.body).toBe(200);
  return r.json().document;
}
async function found(q: string): Promise<string[]> {
  const r = await gw.request('GET', `/v1/search?${new URLSearchParams({ q, k: '50' })}`);
  expect(r.statusCode, r.body).toBe(200);
  return r.json().hits.filter((h: any) => !h.context).map((h: any) => h.document_id).sort();
}

beforeAll(async () => {
  gw = await startTestGateway();
  ids.lease = await ingestMail('imap/dana:lease@example.org', 'The lease renewal is due in March.');
  ids.boiler = await ingestMail('imap/dana:boiler@example.org', 'The boiler service is booked for Tuesday.');
  const note = await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'note-flags', title: 'Shopping', content: { mime_type: 'text/plain', data: 'Milk and bread.' } }));
  ids.note = note.json().doc_id;
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

describe('mail flags as tags', () => {
  it('an unseen message is unread; flagged and answered ones are flagged and replied; tag: finds them', async () => {
    await flags('imap/dana:lease@example.org', []);
    await flags('imap/dana:boiler@example.org', ['\\Answered', '\\Flagged', '\\Seen']);
    expect(await tagsOf(ids.lease)).toEqual([{ name: 'unread', origin: 'source' }]);
    expect(await tagsOf(ids.boiler)).toEqual([
      { name: 'flagged', origin: 'source' },
      { name: 'replied', origin: 'source' },
    ]);
    expect(await found('tag:unread')).toEqual([ids.lease]);
    expect(await found('tag:flagged')).toEqual([ids.boiler]);
    expect(await found('-tag:unread boiler')).toEqual([ids.boiler]);
  });

  it('a flag change at the source takes the tag off or gives it, without a new version', async () => {
    await flags('imap/dana:lease@example.org', ['\\Seen']);
    await flags('imap/dana:boiler@example.org', ['\\Answered']);
    expect(await tagsOf(ids.lease)).toEqual([]);
    expect(await tagsOf(ids.boiler)).toEqual([
      { name: 'replied', origin: 'source' },
      { name: 'unread', origin: 'source' },
    ]);
    expect(await found('tag:unread')).toEqual([ids.boiler]);
    expect(await found('tag:flagged')).toEqual([]);
    const versions = await gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id = 'imap/dana:boiler@example.org'`);
    expect(versions.rows[0].n).toBe(1);
  });

  it('a tag given by hand is the person’s: marking the message read at the source keeps it', async () => {
    const r = await gw.request('POST', '/v1/tags/add', { tag: 'unread', doc_ids: [ids.boiler] });
    expect(r.statusCode, r.body).toBe(200);
    await flags('imap/dana:boiler@example.org', ['\\Answered', '\\Seen']);
    expect(await tagsOf(ids.boiler)).toEqual([
      { name: 'replied', origin: 'source' },
      { name: 'unread', origin: 'manual' },
    ]);
  });

  it('flags on a document that is not mail give no tags; a bad update is a 422 that changes nothing', async () => {
    await flags('note-flags', []);
    expect(await tagsOf(ids.note)).toEqual([]);
    const before = await tagsOf(ids.lease);
    const bad = await gw.request('POST', '/v1/documents/source-state', {
      updates: [{ source_type: 'email', source_id: 'imap/dana:lease@example.org', flags: Array.from({ length: 21 }, (_, i) => `\\F${i}`) }],
    });
    expect(bad.statusCode).toBe(422);
    expect(await tagsOf(ids.lease)).toEqual(before);
  });

  it("a new version of a message keeps what its source said of it (folder, flags, labels), unless it says otherwise", async () => {
    const sid = 'imap/dana:permit@example.org';
    await ingestMail(sid, 'The parking permit expires in May.');
    const state = await gw.request('POST', '/v1/documents/source-state', {
      updates: [{ source_type: 'email', source_id: sid, folder: 'Archive', flags: ['\\Flagged'], labels: ['Home/Car'] }],
    });
    expect(state.statusCode, state.body).toBe(200);
    // The message again with other text (an edit, or the same message re-parsed from its original): a new version.
    const v2 = await ingestMail(sid, 'The parking permit expires in May; renew it online.');
    const meta = async (id: string) =>
      (await gw.db.query<{ metadata: Record<string, unknown> }>('SELECT metadata FROM documents WHERE doc_id = $1', [id])).rows[0].metadata;
    const kept = await meta(v2);
    expect(kept.folder).toBe('Archive');
    expect(kept.flags).toEqual(['\\Flagged']);
    expect(kept.source_labels).toEqual(['home/car']);
    expect((await tagsOf(v2)).map((t) => t.name)).toEqual(['flagged', 'home/car', 'unread']);
    // A version that says its own folder keeps that one.
    const own = await meta(await ingestMail(sid, 'Permit renewed.', { folder: 'INBOX' }));
    expect(own.folder).toBe('INBOX');
    expect(own.flags).toEqual(['\\Flagged']);
  });
});
