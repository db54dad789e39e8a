/**
 * WhatsApp "Export chat" files as Android and iOS write them: date orders, clocks, brackets, multi-line
 * messages, system lines, media markers, direction marks; stable ids across a longer export.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openBundle } from '../../../src/imports/chats/bundle.ts';
import { readWhatsApp } from '../../../src/imports/chats/whatsapp-export.ts';
import { chatNameFromFileName, looksLikeWhatsApp, parseWhatsApp } from '../../../src/imports/chats/whatsapp.ts';
import { buildZip } from '../../../src/imports/chats/zip.ts';
import { detectChatFormat } from '../../../src/imports/chats/import.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const ANDROID = path.join(FIX, 'WhatsApp Chat with Priya Shah.txt');
const US = path.join(FIX, 'WhatsApp Chat with Trail running club.txt');
const IOS = path.join(FIX, '_chat.txt');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-wa-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const opts = { region: 'GB', timeZone: 'Europe/Lisbon' };
function read(file: string, o: Partial<typeof opts> & { me?: string; chatName?: string } = {}) {
  const b = openBundle(file);
  try {
    return readWhatsApp(b, { ...opts, ...o });
  } finally {
    b.close();
  }
}

describe('WhatsApp export parsing', () => {
  it('reads an Android export: D/M/Y, 24 hours, multi-line messages, system lines and media markers', () => {
    const p = parseWhatsApp(fs.readFileSync(ANDROID, 'utf8'));
    expect(p).toMatchObject({ platform: 'android', dateOrder: 'DMY', clock: '24h' });
    expect(p.messages.map((m) => m.kind)).toEqual([
      'system', 'message', 'message', 'media_omitted', 'message', 'message', 'deleted', 'message', 'message', 'message', 'message',
    ]);
    const train = p.messages[2];
    expect(train.sender).toBe('Sam Taylor');
    expect(train.text).toBe('Yes! Booked the train for the 12th.\nIt leaves at 08:15 from Santa Apolónia\n\nBring the passports');
    expect(p.messages[4]).toMatchObject({ attachments: ['IMG-20230312-WA0001.jpg'], text: 'The hotel from the street' });
    expect(p.messages[9]).toMatchObject({ edited: true, text: 'Typo in the booking, fixed now' });
    // A colon inside the text is not a sender.
    expect(p.messages[10]).toMatchObject({ sender: 'Priya Shah', text: 'Missed you at the station: meet at the café instead?' });
    expect(p.messages[10].at).toMatchObject({ y: 2023, mo: 3, d: 25, h: 18, mi: 30 });
  });

  it('reads a US Android export: M/D/YY and a 12-hour clock with a narrow no-break space', () => {
    const p = parseWhatsApp(fs.readFileSync(US, 'utf8'));
    expect(p).toMatchObject({ platform: 'android', dateOrder: 'MDY', clock: '12h' });
    const [, created, added, run, late, midnight] = p.messages;
    expect(created.kind).toBe('system'); // "created group "Trail: running club"" holds a colon but no sender
    expect(added.kind).toBe('system');
    expect(run.at).toMatchObject({ y: 2023, mo: 3, d: 12, h: 14, mi: 6 });
    expect(late.at).toMatchObject({ h: 23, mi: 58 });
    expect(midnight.at).toMatchObject({ d: 13, h: 0, mi: 1 });
  });

  it('reads an iOS export: bracketed times with seconds, LRM marks, the group name on system lines', () => {
    const chat = read(IOS);
    expect(chat.title).toBe('Lisbon Trip');
    expect(chat.kind).toBe('group');
    expect(chat.parse).toMatchObject({ platform: 'ios', dateOrder: 'DMY', clock: '24h' });
    expect(chat.messages.map((m) => m.text)).toEqual([
      'Are we still on for Lisbon?',
      '',
      'Pastéis de nata at Manteigaria first,\nthen the tram 28',
      'Olá! I added the museum tickets',
      'Hi, this is Marta, your tour guide for Friday',
    ]);
    expect(chat.messages[1].media.map((m) => m.name)).toEqual(['00000004-PHOTO-2023-03-12-14-06-01.jpg']);
    expect(chat.messages[3].media.map((m) => m.name)).toEqual(['00000007-Tickets.pdf']);
    // Lisbon is on UTC in March before the change: 14:05:33 local is 14:05:33Z.
    expect(chat.messages[0].at).toBe('2023-03-12T14:05:33.000Z');
    const reasons = chat.skipped.map((s) => s.detail);
    expect(reasons.filter((r) => r === 'system line')).toHaveLength(3);
    expect(reasons).toContain('deleted message');
    expect(reasons).toContain('media left out of the export');
    expect(chat.participants.map((p) => p.display_name ?? p.identifier)).toEqual(['Priya Shah', 'Sam Taylor', 'Ana Costa', '+447911123456']);
  });

  it('reads the times in the zone given, and phone numbers in E.164 through the region', () => {
    const chat = read(ANDROID, { timeZone: 'Asia/Kolkata' });
    expect(chat.title).toBe('Priya Shah');
    expect(chat.messages[0].at).toBe('2023-03-12T08:35:00.000Z');
    expect(chat.kind).toBe('direct');
    const guide = read(IOS).messages.find((m) => m.text.startsWith('Hi, this is Marta'))!;
    expect(guide.sender).toEqual({ identifier: '+447911123456', identifier_type: 'phone' });
    const us = read(US, { region: 'US', timeZone: 'America/New_York' });
    const tabs = us.messages.find((m) => m.text.includes('electrolyte'))!;
    expect(tabs.sender?.identifier).toBe('+14155550132');
    // 11:58 PM on 12 March 2023 in New York (EDT since that morning) is 03:58 the next day in UTC.
    expect(tabs.at).toBe('2023-03-13T03:58:00.000Z');
    expect(us.kind).toBe('group');
  });

  it('marks the exporter given with --me as the self person', () => {
    const chat = read(ANDROID, { me: 'sam taylor' });
    expect(chat.messages.find((m) => m.sender?.display_name === 'Sam Taylor')!.sender!.self).toBe(true);
  });

  it('decides an ambiguous date order by which order runs forward in time', () => {
    const lines = ['01/02/2023, 10:00 - A: one', '01/03/2023, 10:00 - B: two', '02/03/2023, 10:00 - A: three', '01/04/2023, 10:00 - B: four'];
    // As D/M: 1 Feb, 1 Mar, 2 Mar, 1 Apr (forward). As M/D: 2 Jan, 3 Jan, 3 Feb, 4 Jan (backward once).
    expect(parseWhatsApp(lines.join('\n')).dateOrder).toBe('DMY');
    const us = ['02/01/2023, 10:00 - A: one', '03/01/2023, 10:00 - B: two', '03/02/2023, 10:00 - A: three', '04/01/2023, 10:00 - B: four'];
    expect(parseWhatsApp(us.join('\n')).dateOrder).toBe('MDY');
  });

  it('gives every message a stable id: a longer export keeps the ids of the shorter one, twins differ', () => {
    const text = fs.readFileSync(ANDROID, 'utf8');
    const short = path.join(tmp, 'WhatsApp Chat with Priya Shah.txt');
    fs.writeFileSync(short, text.split('\n').slice(0, 10).join('\n') + '\n');
    const a = read(short).messages.map((m) => m.sourceId);
    const b = read(ANDROID).messages.map((m) => m.sourceId);
    expect(b.slice(0, a.length)).toEqual(a);
    expect(b.length).toBeGreaterThan(a.length);
    expect(new Set(b).size).toBe(b.length); // the two "ok" of one minute are two messages
    // The zone read in does not move the ids.
    expect(read(ANDROID, { timeZone: 'UTC' }).messages.map((m) => m.sourceId)).toEqual(b);
  });

  it('reads a zip with media: the chat text and the files its messages name', () => {
    const zip = path.join(tmp, 'WhatsApp Chat - Lisbon Trip.zip');
    fs.writeFileSync(
      zip,
      buildZip([
        { name: '_chat.txt', data: fs.readFileSync(IOS) },
        { name: '00000004-PHOTO-2023-03-12-14-06-01.jpg', data: Buffer.from('not really a jpeg'), store: true },
        { name: '00000007-Tickets.pdf', data: Buffer.from('%PDF-1.4 tickets') },
        { name: '00000099-AUDIO-unused.opus', data: Buffer.from('x') },
      ]),
    );
    expect(detectChatFormat(zip, 'file', fs.readFileSync(zip).subarray(0, 64), [])).toBe('whatsapp');
    const chat = read(zip);
    expect(chat.title).toBe('Lisbon Trip');
    expect(chat.messages[1].media[0]).toEqual({ name: '00000004-PHOTO-2023-03-12-14-06-01.jpg', entry: '00000004-PHOTO-2023-03-12-14-06-01.jpg' });
    expect(chat.unreferencedMedia).toEqual(['00000099-AUDIO-unused.opus']);
  });

  it('refuses what is not an export, and a truncated zip, with what it looked for', () => {
    expect(() => parseWhatsApp('eggs, milk\nbread\n')).toThrow(/no WhatsApp message line found .*dd\/mm\/yyyy/);
    expect(looksLikeWhatsApp('Dear diary,\n12/03/2023, 14:05 - A: b\n')).toBe(false);
    expect(looksLikeWhatsApp(fs.readFileSync(IOS, 'utf8'))).toBe(true);
    const zip = path.join(tmp, 'WhatsApp Chat - cut.zip');
    const whole = buildZip([{ name: '_chat.txt', data: fs.readFileSync(IOS) }]);
    fs.writeFileSync(zip, whole.subarray(0, whole.length - 30));
    expect(() => openBundle(zip)).toThrow(/truncated/);
  });

  it('names the chat from the export file name in its usual spellings', () => {
    expect(chatNameFromFileName('WhatsApp Chat with Priya Shah.txt')).toBe('Priya Shah');
    expect(chatNameFromFileName('WhatsApp Chat - Lisbon Trip (1).zip')).toBe('Lisbon Trip');
    expect(chatNameFromFileName('WhatsApp-Chat mit Oma.txt')).toBe('Oma');
    expect(chatNameFromFileName('_chat.txt')).toBeNull();
  });
});
