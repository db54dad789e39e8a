/**
 * Email attachments and their message (issue 33 item 1), the way the email collectors send them: the
 * message through POST /v1/ingest (metadata.message_id), each attachment through POST /v1/ingest/file
 * with meta.source "email" and the message's message_id. Whichever arrives first, the attachment gets
 * the message's people, the message's view lists it, and forget, block and the identifier rule reach it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUpload } from '../files/multipart.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const ME = 'me@home.example';
const NIA = 'nia@quill.example';
const OMAR = 'omar@quill.example';

let gw: TestGateway;

async function message(id: string, messageId: string, text: string, people: Record<string, unknown>[], title = 'Mail') {
  const res = await gw.request('POST', '/v1/ingest', {
    source_type: 'email',
    source_id: id,
    title,
    content: { data: text },
    content_timestamp: '2026-10-01T10:00:00Z',
    people,
    metadata: { message_id: messageId, subject: title },
  });
  expect([200, 202]).toContain(res.statusCode);
  return res.json();
}

async function attach(messageId: string, filename: string, text: string, source = 'email') {
  const upload = fileUpload(
    { source, path: `${source}/${messageId}/${filename}`, filename, message_id: messageId },
    Buffer.from(text),
    filename,
    'text/plain',
  );
  const res = await gw.app.inject({
    method: 'POST',
    url: '/v1/ingest/file',
    payload: upload.payload,
    headers: { ...upload.headers, authorization: `Bearer ${TEST_TOKEN}` },
  });
  expect([200, 202]).toContain(res.statusCode);
  return res.json() as { doc_id: string; file_sha256: string; status: string; skipped?: string };
}

const view = async (docId: string) => {
  const res = await gw.request('GET', `/v1/doc/${docId}/view`);
  expect(res.statusCode).toBe(200);
  return res.json();
};
const peopleOf = async (docId: string) =>
  ((await gw.request('GET', `/v1/doc/${docId}`)).json().people as { identifier: string; role: string }[]).map((p) => `${p.role}:${p.identifier}`).sort();

async function search(q: string): Promise<string[]> {
  const res = await gw.request('GET', `/v1/search?q=${encodeURIComponent(q)}`);
  expect(res.statusCode).toBe(200);
  return (res.json().hits as { document_id: string }[]).map((h) => h.document_id);
}

async function personId(q: string): Promise<string> {
  const res = await gw.request('GET', `/search/people?q=${encodeURIComponent(q)}`);
  return (res.json().results as { person_id: string }[])[0]?.person_id;
}

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
  await message('self-1', 'self-1@home.example', 'A note to myself', [{ identifier: ME, role: 'sender' }]);
  expect((await gw.request('PUT', '/v1/admin/self-person', { identifier: ME })).statusCode).toBe(200);
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

describe('an attachment and its message', () => {
  it('message first: the attachment takes its people, the view lists it both ways', async () => {
    const msg = await message('m-1', '<first@quill.example>', 'Please find the lease attached.', [
      { identifier: NIA, role: 'sender', display_name: 'Nia Quill' },
      { identifier: ME, role: 'recipient' },
    ], 'Lease');
    const att = await attach('first@quill.example', 'lease.txt', 'Lease of the marmoset cottage, signed.');
    expect(att.status).not.toBe('skipped');

    expect(await peopleOf(att.doc_id)).toEqual([`recipient:${ME}`, `sender:${NIA}`]);
    const nia = await personId('Nia Quill');
    const listed = await gw.request('GET', `/v1/documents?person_id=${nia}`);
    expect(listed.json().documents.map((d: { doc_id: string }) => d.doc_id)).toContain(att.doc_id);

    const v = await view(msg.doc_id);
    expect(v.has_attachments).toBe(true);
    expect(v.document.has_attachments).toBe(true);
    expect(v.attachments).toEqual([
      expect.objectContaining({ filename: 'lease.txt', doc_id: att.doc_id, sha256: att.file_sha256, stored: true, index: null, role: 'attachment' }),
    ]);
    const own = await view(att.doc_id);
    expect(own.attached_to).toMatchObject({ doc_id: msg.doc_id, title: 'Lease' });
    expect(own.attachments[0]).toMatchObject({ doc_id: att.doc_id, sha256: att.file_sha256, stored: true });
  });

  it('attachment first: it is linked when the message arrives, matched to the entry the message lists', async () => {
    const att = await attach('second@quill.example', 'plan.txt', 'The capybara garden plan.');
    expect(await peopleOf(att.doc_id)).toEqual([]);
    expect((await view(att.doc_id)).attached_to).toBeNull();

    const msg = await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'm-2',
      title: 'Garden',
      content: { data: 'Here is the plan for the garden.' },
      content_timestamp: '2026-10-02T10:00:00Z',
      people: [{ identifier: NIA, role: 'sender' }, { identifier: ME, role: 'recipient' }],
      metadata: {
        message_id: 'second@quill.example',
        attachments: [
          { index: 0, kind: 'file', mime_type: 'text/plain', size_bytes: 25, filename: 'plan.txt', sha256: att.file_sha256 },
          { index: 1, kind: 'image', mime_type: 'image/png', size_bytes: 10, filename: 'never-uploaded.png', sha256: 'f'.repeat(64) },
        ],
      },
    });
    expect(msg.statusCode).toBe(202);
    const msgId = msg.json().doc_id;
    expect(await peopleOf(att.doc_id)).toEqual([`recipient:${ME}`, `sender:${NIA}`]);
    const v = await view(msgId);
    expect(v.attachments).toEqual([
      expect.objectContaining({ index: 0, filename: 'plan.txt', doc_id: att.doc_id, stored: true }),
      expect.objectContaining({ index: 1, filename: 'never-uploaded.png', doc_id: null, stored: false }),
    ]);
    expect((await view(att.doc_id)).attached_to).toMatchObject({ doc_id: msgId });
  });
});

describe('forget reaches attachments', () => {
  it('forgetting a person erases the attachments of their mail; a later upload with its Message-ID is skipped', async () => {
    const msg = await message('m-3', 'third@quill.example', 'The ocelot invoice.', [
      { identifier: OMAR, role: 'sender', display_name: 'Omar Quill' },
      { identifier: ME, role: 'recipient' },
    ], 'Invoice');
    const att = await attach('third@quill.example', 'invoice.txt', 'Invoice for the ocelot enclosure, Omar Quill, +1 415 555 0199.');
    expect(await search('enclosure')).toEqual([att.doc_id]);
    const omar = await personId('Omar Quill');

    const dry = await gw.request('POST', '/v1/forget', { person_id: omar, dry_run: true });
    expect(dry.json().removed).toMatchObject({ documents: 2, files: 1 });
    const res = await gw.request('POST', '/v1/forget', { person_id: omar, block: true });
    expect(res.json().removed).toMatchObject(dry.json().removed);
    expect((await gw.request('GET', `/v1/doc/${msg.doc_id}`)).statusCode).toBe(404);
    expect((await gw.request('GET', `/v1/doc/${att.doc_id}`)).statusCode).toBe(404);
    expect(await gw.files!.store.has(att.file_sha256)).toBe(false);
    expect(await search('enclosure')).toEqual([]);
    const exported = await gw.request('GET', '/v1/export');
    expect(exported.body).not.toContain('ocelot');

    // The collector runs again: the attachment comes back with the forgotten message's Message-ID.
    const again = await attach('<third@quill.example>', 'invoice.txt', 'Invoice for the ocelot enclosure, Omar Quill, +1 415 555 0199.');
    expect(again).toMatchObject({ status: 'skipped', skipped: 'blocked_message', doc_id: '' });
    expect(await gw.files!.store.has(att.file_sha256)).toBe(false);
    // A new mail of his, its attachment uploaded before the message: when the message is kept out,
    // the attachment goes too, and so does any later upload with that Message-ID.
    const early = await attach('fourth@quill.example', 'more.txt', 'Another ocelot bill.');
    expect(early.status).not.toBe('skipped');
    const laterMsg = await message('m-4', 'fourth@quill.example', 'Another bill', [{ identifier: OMAR, role: 'sender' }, { identifier: ME, role: 'recipient' }]);
    expect(laterMsg).toMatchObject({ status: 'skipped', skipped: 'blocked_identifier' });
    expect((await gw.request('GET', `/v1/doc/${early.doc_id}`)).statusCode).toBe(404);
    expect(await gw.files!.store.has(early.file_sha256)).toBe(false);
    expect(await attach('fourth@quill.example', 'more-2.txt', 'Yet another bill.')).toMatchObject({ skipped: 'blocked_message' });
    // The way the collectors send it: the message (kept out), then its attachment.
    await message('m-8', 'eighth@quill.example', 'Third bill', [{ identifier: OMAR, role: 'sender' }, { identifier: ME, role: 'recipient' }]);
    expect(await attach('eighth@quill.example', 'bill.txt', 'The third ocelot bill.')).toMatchObject({ skipped: 'blocked_message' });
    expect(await search('ocelot')).toEqual([]);
    // The block list holds hashes, not Message-IDs.
    const rows = await gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM forget_blocks WHERE identifier_sha256 LIKE '%quill%'`);
    expect(rows.rows[0].n).toBe(0);
  });

  it('forgetting an identifier erases what it sent with the attachments; a group mail keeps its attachment without them', async () => {
    const sent = await message('m-5', 'fifth@quill.example', 'Tapir photos.', [
      { identifier: 'tess@tapir.example', role: 'sender' },
      { identifier: ME, role: 'recipient' },
    ]);
    const sentAtt = await attach('fifth@quill.example', 'tapir.txt', 'Tapir photo captions.');
    const group = await message('m-6', 'sixth@quill.example', 'Team lunch menu.', [
      { identifier: NIA, role: 'sender' },
      { identifier: ME, role: 'recipient' },
      { identifier: 'tess@tapir.example', role: 'recipient' },
    ]);
    const groupAtt = await attach('sixth@quill.example', 'menu.txt', 'Menu: gnocchi and tiramisu.');
    expect(await peopleOf(groupAtt.doc_id)).toContain('recipient:tess@tapir.example');

    const res = await gw.request('POST', '/v1/forget', { identifier: 'tess@tapir.example' });
    expect(res.statusCode).toBe(200);
    for (const id of [sent.doc_id, sentAtt.doc_id]) expect((await gw.request('GET', `/v1/doc/${id}`)).statusCode).toBe(404);
    expect((await gw.request('GET', `/v1/doc/${group.doc_id}`)).statusCode).toBe(200);
    expect(await peopleOf(groupAtt.doc_id)).toEqual([`recipient:${ME}`, `sender:${NIA}`]);
    expect((await view(group.doc_id)).attachments.map((a: { doc_id: string }) => a.doc_id)).toEqual([groupAtt.doc_id]);
  });

  it('forgetting a message erases its attachments; forgetting an attachment leaves the message, which stops counting it', async () => {
    const msg = await message('m-7', 'seventh@quill.example', 'Two files for you.', [{ identifier: NIA, role: 'sender' }, { identifier: ME, role: 'recipient' }]);
    const a = await attach('seventh@quill.example', 'a.txt', 'File a about the narwhal.');
    const b = await attach('seventh@quill.example', 'b.txt', 'File b about the axolotl.');
    expect((await gw.request('GET', `/v1/doc/${msg.doc_id}`)).json()).toMatchObject({ has_attachments: true, attachment_count: 2 });

    await gw.request('POST', '/v1/forget', { doc_id: a.doc_id });
    expect((await gw.request('GET', `/v1/doc/${msg.doc_id}`)).json()).toMatchObject({ has_attachments: true, attachment_count: 1 });
    const out = await gw.request('POST', '/v1/forget', { doc_id: msg.doc_id });
    expect(out.json().removed).toMatchObject({ documents: 2, files: 1 });
    expect((await gw.request('GET', `/v1/doc/${b.doc_id}`)).statusCode).toBe(404);
    expect(await search('axolotl')).toEqual([]);
  });
});
