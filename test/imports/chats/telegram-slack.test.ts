/**
 * Telegram Desktop result.json and Slack export folders read as chats: entities flattened, replies and threads
 * linked, edits marked, system lines skipped, user ids as identifiers with their names.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openBundle } from '../../../src/imports/chats/bundle.ts';
import { detectChatFormat } from '../../../src/imports/chats/import.ts';
import { buildDocument } from '../../../src/imports/chats/model.ts';
import { flattenText, looksLikeTelegram, readTelegram } from '../../../src/imports/chats/telegram.ts';
import { readSlack, slackText } from '../../../src/imports/chats/slack.ts';
import { buildZip } from '../../../src/imports/chats/zip.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const TG_DIR = path.join(FIX, 'telegram', 'ChatExport_2023-03-20');
const SLACK_DIR = path.join(FIX, 'slack');
const opts = { region: 'GB', timeZone: 'Europe/Lisbon' };
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-tg-slack-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const readWith = <T>(p: string, fn: (b: ReturnType<typeof openBundle>) => T): T => {
  const b = openBundle(p);
  try {
    return fn(b);
  } finally {
    b.close();
  }
};

describe('Telegram Desktop export', () => {
  it('is recognised by content, as the file or its folder', () => {
    const head = fs.readFileSync(path.join(TG_DIR, 'result.json'));
    expect(looksLikeTelegram(head.toString())).toBe(true);
    expect(detectChatFormat(path.join(TG_DIR, 'result.json'), 'file', head, [])).toBe('telegram');
    expect(detectChatFormat(TG_DIR, 'directory', Buffer.alloc(0), fs.readdirSync(TG_DIR))).toBe('telegram');
    expect(looksLikeTelegram('{"name": "x", "items": []}')).toBe(false);
  });

  it('reads a group: messages with flattened entities, replies linked, edits marked, service lines skipped, media found', () => {
    const [chat] = readWith(TG_DIR, (b) => readTelegram(b, opts));
    expect(chat).toMatchObject({ title: 'Lisbon Trip', kind: 'group', provider: 'telegram' });
    expect(chat.messages.map((m) => m.sourceId)).toEqual(['telegram:1786543210:2', 'telegram:1786543210:3', 'telegram:1786543210:4']);
    const [q, reply, photo] = chat.messages;
    expect(q.at).toBe('2023-03-12T14:05:33.000Z');
    expect(q.sender).toEqual({ identifier: 'telegram:user5012345678', identifier_type: 'social', display_name: 'Priya Shah' });
    expect(reply.text).toBe('Yes! Booked the train, details here (https://www.cp.pt/) @priya_s');
    expect(reply).toMatchObject({ replyTo: 'telegram:1786543210:2', edited: true, editedAt: '2023-03-12T14:09:00.000Z' });
    expect(photo.media).toEqual([{ name: 'photo_1@12-03-2023_14-07-00.jpg', entry: 'photos/photo_1@12-03-2023_14-07-00.jpg' }]);
    expect(chat.skipped.map((s) => s.detail)).toEqual(['system line', 'voice_message left out of the export', 'system line']);
    const doc = buildDocument(chat, reply);
    expect(doc.metadata.reply_to_guid).toBe('telegram:1786543210:2');
    expect(doc.people.map((p) => [p.identifier, p.role])).toEqual([
      ['telegram:user6098765432', 'sender'],
      ['telegram:user5012345678', 'recipient'],
    ]);
  });

  it('reads a full export (chats.list) and marks the exporter as self', () => {
    const one = JSON.parse(fs.readFileSync(path.join(TG_DIR, 'result.json'), 'utf8'));
    const full = {
      about: 'Here is the data you requested. Remember: Telegram is ad free, it doesn\'t use your data for ad targeting and doesn\'t sell it to others.',
      personal_information: { user_id: 6098765432, first_name: 'Sam', last_name: 'Taylor', phone_number: '+44 7911 123456' },
      chats: { about: 'This page lists all chats from this export.', list: [one, { name: 'Priya Shah', type: 'personal_chat', id: 5012345678, messages: [one.messages[1]] }] },
    };
    const f = path.join(tmp, 'result.json');
    fs.writeFileSync(f, JSON.stringify(full));
    const chats = readWith(f, (b) => readTelegram(b, opts));
    expect(chats.map((c) => [c.title, c.kind])).toEqual([['Lisbon Trip', 'group'], ['Priya Shah', 'direct']]);
    expect(chats[0].messages[1].sender?.self).toBe(true);
    // A single result.json has no media beside it.
    expect(chats[0].messages[2].media[0].entry).toBeNull();
  });

  it('reads a channel export: a channel chat whose posts are from the channel, its id the identifier', () => {
    const channel = {
      name: 'Lisbon Transit News',
      type: 'public_channel',
      id: 1398765432,
      messages: [
        { id: 1, type: 'service', date: '2023-03-01T09:00:00', date_unixtime: '1677661200', actor: 'Lisbon Transit News', actor_id: 'channel1398765432', action: 'create_channel', title: 'Lisbon Transit News', text: '' },
        { id: 2, type: 'message', date: '2023-03-01T09:05:00', date_unixtime: '1677661500', from: 'Lisbon Transit News', from_id: 'channel1398765432', text: ['Tram ', { type: 'bold', text: '28' }, ' runs again from Monday'] },
      ],
    };
    const f = path.join(tmp, 'channel', 'result.json');
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(f, JSON.stringify(channel));
    const [chat] = readWith(f, (b) => readTelegram(b, opts));
    expect([chat.title, chat.kind]).toEqual(['Lisbon Transit News', 'channel']);
    expect(chat.messages.map((m) => [m.sourceId, m.text])).toEqual([['telegram:1398765432:2', 'Tram 28 runs again from Monday']]);
    expect(chat.messages[0].sender).toEqual({ identifier: 'telegram:channel1398765432', identifier_type: 'social', display_name: 'Lisbon Transit News' });
  });

  it('refuses a truncated result.json with what is wrong', () => {
    const f = path.join(tmp, 'cut', 'result.json');
    fs.mkdirSync(path.dirname(f));
    const text = fs.readFileSync(path.join(TG_DIR, 'result.json'), 'utf8');
    fs.writeFileSync(f, text.slice(0, text.length / 2));
    expect(() => readWith(f, (b) => readTelegram(b, opts))).toThrow(/result\.json is not readable JSON \(truncated\?\)/);
  });

  it('flattens every entity shape to its text', () => {
    expect(flattenText('plain')).toBe('plain');
    expect(flattenText([{ type: 'code', text: 'x = 1' }, '\n', { type: 'spoiler', text: 'secret' }])).toBe('x = 1\nsecret');
    expect(flattenText(null)).toBe('');
  });
});

describe('Slack export', () => {
  it('is recognised as a folder and as a zip', () => {
    expect(detectChatFormat(SLACK_DIR, 'directory', Buffer.alloc(0), fs.readdirSync(SLACK_DIR))).toBe('slack');
    const files = ['users.json', 'channels.json', 'general/2023-03-12.json', 'trips/2023-03-12.json', 'trips/2023-03-13.json'];
    const zip = path.join(tmp, 'Memex Slack export Mar 12 2023 - Mar 13 2023.zip');
    fs.writeFileSync(zip, buildZip(files.map((f) => ({ name: `export/${f}`, data: fs.readFileSync(path.join(SLACK_DIR, f)) }))));
    expect(detectChatFormat(zip, 'file', fs.readFileSync(zip).subarray(0, 64), [])).toBe('slack');
    const chats = readWith(zip, (b) => readSlack(b, opts));
    expect(chats.map((c) => c.messages.length)).toEqual([1, 3]);
  });

  it('reads channels: users named from users.json, markup as text, threads linked, joins skipped', () => {
    const chats = readWith(SLACK_DIR, (b) => readSlack(b, opts));
    expect(chats.map((c) => [c.title, c.kind])).toEqual([['#general', 'channel'], ['#trips', 'channel']]);
    const [general, trips] = chats;
    expect(general.messages[0].text).toBe('Welcome @Sam Taylor! The offsite budget is in the sheet (https://docs.example.com/budget) & due Friday');
    expect(general.messages[0].sender).toEqual({ identifier: 'slack:T0MEMEX:U01PRIYA', identifier_type: 'social', display_name: 'Priya Shah' });
    expect(general.skipped).toEqual([{ ref: 'C01GENERAL/1678629000.000100', reason: 'excluded', detail: 'system line' }]);
    const [root, reply, file] = trips.messages;
    expect(root).toMatchObject({ sourceId: 'slack:C02TRIPS:1678630000.000100', replyTo: null, at: '2023-03-12T14:06:40.000Z' });
    expect(reply).toMatchObject({ replyTo: 'slack:C02TRIPS:1678630000.000100', threadRoot: 'slack:C02TRIPS:1678630000.000100', edited: true });
    expect(file.media).toEqual([{ name: 'tickets.pdf', entry: null }]);
    expect(buildDocument(trips, file).content.data).toBe('[Attachment: tickets.pdf]');
  });

  it('refuses an export without users.json, and a damaged day file, naming the file', () => {
    const d = path.join(tmp, 'slack-bad');
    fs.mkdirSync(path.join(d, 'general'), { recursive: true });
    fs.writeFileSync(path.join(d, 'channels.json'), fs.readFileSync(path.join(SLACK_DIR, 'channels.json')));
    expect(() => readWith(d, (b) => readSlack(b, opts))).toThrow(/no users\.json/);
    fs.writeFileSync(path.join(d, 'users.json'), fs.readFileSync(path.join(SLACK_DIR, 'users.json')));
    fs.writeFileSync(path.join(d, 'general', '2023-03-12.json'), '[{"type": "message", "ts": "16786');
    expect(() => readWith(d, (b) => readSlack(b, opts))).toThrow(/general\/2023-03-12\.json is not readable JSON/);
  });

  it('reads Slack markup', () => {
    const name = (id: string) => (id === 'U1' ? 'Ann' : null);
    expect(slackText('<@U1> <@U9> <#C1|random> <!here> <mailto:a@b.c|a@b.c> &lt;3', name)).toBe('@Ann @U9 #random @here mailto:a@b.c|a@b.c <3'.replace('mailto:a@b.c|a@b.c', 'a@b.c (mailto:a@b.c)'));
  });
});
