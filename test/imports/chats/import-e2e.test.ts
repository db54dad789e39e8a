/**
 * `memex import` of chat exports end to end, over real HTTP to a test gateway on the active backend: the
 * registry picks the importer by content, messages become searchable chat documents with their sender as a
 * person, media become files of their message, a longer export adds only its new messages, a damaged export
 * is refused whole and loses nothing already stored, and each import leaves a coverage run.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImportCommand } from '../../../src/imports/registry.ts';
import { buildZip } from '../../../src/imports/chats/zip.ts';
import { backend } from '../../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../../helpers/gateway.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const ANDROID = fs.readFileSync(path.join(FIX, 'WhatsApp Chat with Priya Shah.txt'), 'utf8');
const IOS = fs.readFileSync(path.join(FIX, '_chat.txt'));
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-chat-e2e-'));
let gw: TestGateway;
let url: string;

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await gw?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function memexImport(file: string, ...extra: string[]) {
  let text = '';
  const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  const code = await runImportCommand([file, '--url', url, '--token', TEST_TOKEN, '--timezone', 'Europe/London', '--region', 'GB', '--state', path.join(tmp, 'state.json'), ...extra], out);
  return { code, text };
}

async function chatDocs(provider: string): Promise<{ source_id: string; text: string; version: number }[]> {
  const r = await gw.db.query<{ source_id: string; text: string; version: number }>(
    `SELECT external_id AS source_id, text, version_number AS version FROM documents WHERE source_type = 'chatapp' AND source_provider = $1 AND is_active_version ORDER BY content_timestamp, external_id`,
    [provider],
  );
  return r.rows;
}

async function searchHits(q: string): Promise<any[]> {
  for (let i = 0; i < 60; i++) {
    const res = await gw.request('GET', `/v1/search?q=${encodeURIComponent(q)}&k=10`);
    expect(res.statusCode).toBe(200);
    const hits = res.json().hits as any[];
    if (hits.length) return hits;
    await new Promise((r) => setTimeout(r, 500));
  }
  return [];
}

describe(`memex import of chat exports on ${backend}`, () => {
  it('imports an Android export: says what it found, stores the messages with their senders, adds only new ones later', async () => {
    const short = path.join(tmp, 'WhatsApp Chat with Priya Shah.txt');
    fs.writeFileSync(short, ANDROID.split('\n').slice(0, 10).join('\n') + '\n');
    const first = await memexImport(short);
    expect(first.text).toContain('WhatsApp chat with Priya Shah: 4 messages, 0 media files');
    expect(first.code).toBe(0);
    const before = await chatDocs('whatsapp');
    expect(before.map((d) => d.text)).toEqual([
      'Are we still on for Lisbon?',
      'Yes! Booked the train for the 12th.\nIt leaves at 08:15 from Santa Apolónia\n\nBring the passports',
      'The hotel from the street',
      'Marta the tour guide says Friday 10:00 at the Sé',
    ]);

    const hits = await searchHits('Santa Apolónia');
    expect(hits[0].source_type).toBe('chatapp');
    // The query language's people filter finds the message by its sender's name.
    const bySender = await searchHits('from:"Sam Taylor" passports');
    expect(bySender.map((h) => h.title ?? h.snippet)).toHaveLength(1);
    const people = await gw.request('GET', `/search/people?q=${encodeURIComponent('Sam Taylor')}`);
    expect(people.json().results.map((p: any) => p.display_name)).toContain('Sam Taylor');

    // The same chat exported later, longer: only the new messages are added, nothing is doubled.
    const longer = path.join(tmp, 'later', 'WhatsApp Chat with Priya Shah.txt');
    fs.mkdirSync(path.dirname(longer));
    fs.writeFileSync(longer, ANDROID);
    const second = await memexImport(longer);
    expect(second.code).toBe(0);
    expect(second.text).toContain('WhatsApp chat with Priya Shah: 8 messages');
    expect(second.text).toContain('4 new, 4 already stored');
    const after = await chatDocs('whatsapp');
    expect(after).toHaveLength(8);
    expect(after.map((d) => d.source_id).slice(0, 4)).toEqual(before.map((d) => d.source_id));
    expect(after.filter((d) => d.text === 'ok')).toHaveLength(2);
    expect(after.every((d) => d.version === 1)).toBe(true);
    // Without the import state the server itself answers duplicates: still nothing doubled.
    const rescan = await memexImport(longer, '--rescan');
    expect(rescan.text).toContain('0 new, 8 already stored');
    expect(await chatDocs('whatsapp')).toEqual(after);

    // The import's coverage: every line of the export in one state, system lines and left-out media skipped.
    const cov = await gw.db.query<{ counts: any }>(
      `SELECT r.counts FROM coverage_runs r JOIN coverage_sources s ON s.source_id = r.source_id
        WHERE s.collector = 'import_chat' AND s.source_ref = $1 ORDER BY r.finished_at ASC LIMIT 1`,
      [path.resolve(longer)],
    );
    expect(cov.rows[0].counts).toMatchObject({ in_source: 11, stored: { new: 4, unchanged: 4 }, skipped: { excluded: 1, empty: 2 }, failed: 0 });
  }, 180_000);

  it('imports an iOS zip with its media as files of their message', async () => {
    const zip = path.join(tmp, 'WhatsApp Chat - Lisbon Trip.zip');
    fs.writeFileSync(
      zip,
      buildZip([
        { name: '_chat.txt', data: IOS },
        { name: '00000004-PHOTO-2023-03-12-14-06-01.jpg', data: await sharp({ create: { width: 64, height: 48, channels: 3, background: '#c0392b' } }).jpeg().toBuffer(), store: true },
        { name: '00000007-Tickets.pdf', data: Buffer.from('Museum tickets for two, Friday 10:00, gate B\n') },
      ]),
    );
    const r = await memexImport(zip);
    expect(r.text).toContain('WhatsApp group chat Lisbon Trip: 5 messages, 2 media files');
    // The guide wrote from a number: a person by that number in E.164, found by any spelling of it.
    const guide = await gw.request('GET', `/search/people?q=${encodeURIComponent('07911 123456')}`);
    expect(guide.json().results).toHaveLength(1);
    expect(r.code).toBe(0);
    expect(r.text).toContain('2 media stored');
    const files = await gw.db.query<{ title: string; text: string }>(
      `SELECT title, text FROM documents WHERE source_type = 'chatapp' AND metadata->'file' IS NOT NULL AND is_active_version ORDER BY title`,
    );
    expect(files.rows.map((f) => f.title)).toEqual(['00000004-PHOTO-2023-03-12-14-06-01.jpg', '00000007-Tickets.pdf']);
    expect(files.rows[1].text).toContain('Museum tickets');
    const msg = await gw.db.query<{ metadata: any }>(
      `SELECT metadata FROM documents WHERE source_provider = 'whatsapp' AND text = 'Olá! I added the museum tickets' AND is_active_version`,
    );
    expect(msg.rows[0].metadata.attachments[0]).toMatchObject({ filename: '00000007-Tickets.pdf', mime_type: 'application/pdf' });
    expect(msg.rows[0].metadata.attachments[0].sha256).toMatch(/^[0-9a-f]{64}$/);

    // The message's view names the file's own document (its text), and the file's view names its message.
    const ids = await gw.db.query<{ doc_id: string; title: string }>(
      `SELECT doc_id::text AS doc_id, coalesce(title, text) AS title FROM documents
        WHERE is_active_version AND (text = 'Olá! I added the museum tickets' OR title = '00000007-Tickets.pdf') ORDER BY title`,
    );
    const [pdf, message] = [ids.rows.find((r) => r.title === '00000007-Tickets.pdf')!, ids.rows.find((r) => r.title !== '00000007-Tickets.pdf')!];
    const viewed = await gw.request('GET', `/v1/doc/${message.doc_id}/view`);
    expect(viewed.statusCode, viewed.body).toBe(200);
    const view = viewed.json();
    expect(view.attachments.map((a: any) => [a.filename, a.doc_id, a.stored])).toEqual([['00000007-Tickets.pdf', pdf.doc_id, true]]);
    const fileView = (await gw.request('GET', `/v1/doc/${pdf.doc_id}/view`)).json();
    expect(fileView.attached_to?.doc_id).toBe(message.doc_id);
  }, 180_000);

  it('imports a Telegram export, and a later one with an edited message as a new version of it', async () => {
    const dir = path.join(tmp, 'tg', 'ChatExport_2023-03-20');
    fs.cpSync(path.join(FIX, 'telegram', 'ChatExport_2023-03-20'), dir, { recursive: true });
    const first = await memexImport(dir);
    expect(first.text).toContain('Telegram group chat Lisbon Trip: 3 messages, 1 media file');
    expect(first.code).toBe(0);
    const result = JSON.parse(fs.readFileSync(path.join(dir, 'result.json'), 'utf8'));
    result.messages[1].text = 'Are we still on for Lisbon and Sintra?';
    result.messages[1].edited_unixtime = '1678631000';
    result.messages.push({ id: 7, type: 'message', date_unixtime: '1678700000', from: 'Sam Taylor', from_id: 'user6098765432', text: 'Sintra on Sunday then' });
    fs.writeFileSync(path.join(dir, 'result.json'), JSON.stringify(result));
    const second = await memexImport(dir);
    expect(second.text).toContain('1 new, 2 already stored, 1 updated');
    const docs = await chatDocs('telegram');
    expect(docs.find((d) => d.source_id === 'telegram:1786543210:2')).toMatchObject({ text: 'Are we still on for Lisbon and Sintra?', version: 2 });
    const sender = await gw.request('GET', `/search/people?q=${encodeURIComponent('Sam Taylor')}`);
    expect(sender.json().results.length).toBeGreaterThan(0);
  }, 180_000);

  it('imports a Slack export folder: each channel a chat, threads kept', async () => {
    const r = await memexImport(path.join(FIX, 'slack'));
    expect(r.text).toContain('Slack channel #general: 1 message, 0 media files');
    expect(r.text).toContain('Slack channel #trips: 3 messages, 0 media files');
    expect(r.code).toBe(0);
    const hits = await searchHits('offsite budget');
    expect(hits[0].source_type).toBe('chatapp');
    const reply = await gw.db.query<{ metadata: any }>(`SELECT metadata FROM documents WHERE external_id = 'slack:C02TRIPS:1678630100.000200' AND is_active_version`);
    expect(reply.rows[0].metadata.reply_to_guid).toBe('slack:C02TRIPS:1678630000.000100');
  }, 180_000);

  it('refuses a truncated zip and a file that is no export, naming what it looked for, and loses nothing', async () => {
    const before = await chatDocs('whatsapp');
    const whole = buildZip([{ name: '_chat.txt', data: IOS }]);
    const cut = path.join(tmp, 'WhatsApp Chat - Lisbon Trip (2).zip');
    fs.writeFileSync(cut, whole.subarray(0, whole.length - 40));
    const r = await memexImport(cut);
    expect(r.code).toBe(1);
    expect(r.text).toMatch(/not imported, nothing was sent: WhatsApp export unreadable: the archive is truncated/);
    const other = path.join(tmp, 'notes.txt');
    fs.writeFileSync(other, 'eggs, milk, bread\n');
    const o = await memexImport(other);
    expect(o.code).toBe(2);
    expect(o.text).toMatch(/none of the formats .*WhatsApp/);
    expect(await chatDocs('whatsapp')).toEqual(before);
  }, 120_000);
});
