import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChatDb, type RawChat, type RawMessage } from '../../src/agent/collectors/chatapp/chatdb.ts';
import {
  buildMessageDocument,
  foldReactions,
  identifierType,
  isReactionRow,
  reactionTargetGuid,
  selfIdentifier,
  VersionTracker,
} from '../../src/agent/collectors/chatapp/document.ts';
import { at, buildFixture, tempDir, type Fixture } from './fixture.ts';

let dir: string;
let fx: Fixture;
let msgs: Map<string, RawMessage>;
let chats: Map<number, RawChat>;

function load(): void {
  const db = ChatDb.open(fx.file);
  try {
    const all = db.messagesAfter(0, 1000);
    msgs = new Map(all.map((m) => [m.guid, m]));
    chats = db.chats(all.map((m) => m.chatId).filter((c): c is number => c !== null));
  } finally {
    db.close();
  }
}
const doc = (name: string, reactions = foldReactions([...msgs.values()])) => {
  const m = msgs.get(fx.guids[name])!;
  return buildMessageDocument(m, m.chatId ? chats.get(m.chatId)! : null, { reactions: reactions.get(m.guid) ?? [], homeDir: '/Users/me' });
};

beforeAll(() => {
  dir = tempDir();
  fx = buildFixture(dir, 'ventura');
  load();
});
afterAll(() => {
  fx.builder.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('buildMessageDocument', () => {
  it('builds a received direct message: identity, title, timestamps, sender = the handle', () => {
    const d = doc('hello')!;
    expect(d).toMatchObject({
      source_type: 'chatapp',
      source_provider: 'apple_messages',
      source_id: `chatapp:${fx.guids.hello}`,
      external_id: `chatapp:${fx.guids.hello}`,
      title: '+15551234567',
      content: { mime_type: 'text/plain', data: 'Hi! Are we still on for lunch?' },
      content_timestamp: at(0).toISOString(),
      content_timestamp_type: 'received',
    });
    expect(d.people).toEqual([
      { identifier: '+15551234567', identifier_type: 'phone', role: 'sender' },
      { identifier: 'me@icloud.com', identifier_type: 'email', role: 'recipient', metadata: { self: true } },
    ]);
    expect(d.thread).toMatchObject({
      external_id: `chatapp:${msgs.get(fx.guids.hello)!.chatId && chats.get(fx.chats.alice)!.guid}`,
      source_type: 'chatapp',
      thread_type: 'direct',
      is_group: false,
      participant_count: 1,
      metadata: { chat_guid: chats.get(fx.chats.alice)!.guid },
    });
    expect(d.metadata.message).toMatchObject({ guid: fx.guids.hello, row_id: fx.rows.hello, sent_at: at(0).toISOString(), is_from_me: false, service: 'iMessage', read: true });
    expect(d.metadata.timestamps).toEqual({ primary: { value: at(0).toISOString(), type: 'received' }, source_specific: { sent_at: at(0).toISOString() } });
  });

  it('builds a sent message: sender is my account without its E: prefix, the chat members are recipients', () => {
    const d = doc('reply')!;
    expect(d.content_timestamp_type).toBe('sent');
    expect(d.people).toEqual([
      { identifier: 'me@icloud.com', identifier_type: 'email', role: 'sender', metadata: { self: true } },
      { identifier: '+15551234567', identifier_type: 'phone', role: 'recipient' },
    ]);
    expect(d.metadata.message).toMatchObject({ is_from_me: true, direction: 'outgoing', received_at: at(1.1).toISOString() });
  });

  it('takes text from attributedBody when text is NULL (emoji, CJK, Cyrillic, keyed archive)', () => {
    expect(doc('emoji')!.content.data).toBe('Perfect 👌😄 see you');
    expect(doc('emoji')!.metadata.extraction).toEqual({ status: 'ok', method: 'typedstream' });
    expect(doc('cjk')!.content.data).toBe('我们周六出发吗？');
    expect(doc('cyrillic')!.content.data).toBe('Да, в субботу утром');
    expect(doc('keyed')!.content.data).toBe('Sent the invoice over');
    expect(doc('keyed')!.metadata.extraction).toEqual({ status: 'ok', method: 'keyed_archiver' });
  });

  it('builds a group message: named title, sender = the message handle (not the first participant)', () => {
    const d = doc('cyrillic')!; // from Bob, who is the SECOND participant
    expect(d.title).toBe('Weekend trip');
    expect(d.people.filter((p) => p.role === 'sender')).toEqual([{ identifier: 'bob@example.com', identifier_type: 'email', role: 'sender' }]);
    expect(d.people.filter((p) => p.role === 'recipient').map((p) => p.identifier)).toEqual(['+15551234567', '+447700900123', 'me@icloud.com']);
    expect(d.thread).toMatchObject({ thread_type: 'group', is_group: true, participant_count: 3, title: 'Weekend trip' });
    expect(d.thread!.participants).toEqual([
      { identifier: '+15551234567', identifier_type: 'phone', role: 'participant' },
      { identifier: 'bob@example.com', identifier_type: 'email', role: 'participant' },
      { identifier: '+447700900123', identifier_type: 'phone', role: 'participant' },
    ]);
  });

  it('lists attachments in metadata with kind, mime, size and an expanded path', () => {
    const d = doc('photo')!;
    expect(d.metadata.attachments).toEqual([
      {
        index: 0,
        id: expect.stringMatching(/^at_0_/),
        kind: 'image',
        role: 'attachment',
        mime_type: 'image/heic',
        size_bytes: 2_345_678,
        filename: 'IMG_0042.HEIC',
        source_ref: { path: '/Users/me/Library/Messages/Attachments/ab/11/IMG_0042.HEIC', message_attachment_id: expect.any(Number) },
      },
    ]);
    expect(d.metadata.has_attachments).toBe(true);
    expect(d.metadata.attachment_count).toBe(1);
    expect(d.content.data).toBe('Look at this view');
  });

  it('keeps an attachment-only message (text is just U+FFFC) with a placeholder text; mime from the UTI', () => {
    const d = doc('pdfOnly')!;
    expect(d.metadata.attachments[0]).toMatchObject({ kind: 'pdf', mime_type: 'application/pdf', filename: 'Invoice-2024-03.pdf' });
    expect(d.content.data).toBe('[Attachment: Invoice-2024-03.pdf]');
    expect(d.metadata.extraction).toMatchObject({ status: 'attachments_only' });
  });

  it('skips rows with no text, no attributedBody and no attachments, and tapback rows', () => {
    expect(doc('unsent')).toBeNull();
    expect(doc('tapback')).toBeNull();
  });

  it('attaches a tapback to its target instead of making a document', () => {
    const d = doc('reply')!;
    expect(d.metadata.reactions).toEqual([{ type: 'love', from: '+15551234567', is_from_me: false, at: at(9).toISOString() }]);
    expect(doc('hello')!.metadata.reactions).toEqual([]);
  });

  it('records reply and thread originator guids', () => {
    const d = doc('threaded')!;
    expect(d.metadata.reply_to_guid).toBe(fx.guids.cyrillic);
    expect(d.metadata.thread_originator_guid).toBe(fx.guids.cjk);
  });
});

describe('reactions', () => {
  const row = (over: Partial<RawMessage>): RawMessage => ({
    rowId: 1, guid: 'R', text: null, attributedBody: null, handle: { rowId: 1, id: '+15550001111', service: 'iMessage', country: 'us' },
    service: 'iMessage', account: 'E:me@icloud.com', isFromMe: false, isRead: true, date: '2024-01-01T00:00:00.000Z', dateRead: null,
    dateDelivered: null, dateEdited: null, dateRetracted: null, dateEditedRaw: 0, associatedMessageGuid: 'p:0/T', associatedMessageType: 2001,
    replyToGuid: null, threadOriginatorGuid: null, expressiveSendStyleId: null, isAudioMessage: false, expireState: null,
    messageSummaryInfo: null, chatId: 1, attachments: [], ...over,
  });

  it('parses target guids in both forms', () => {
    expect(reactionTargetGuid('p:0/ABC-1')).toBe('ABC-1');
    expect(reactionTargetGuid('p:2/ABC-1')).toBe('ABC-1');
    expect(reactionTargetGuid('bp:ABC-1')).toBe('ABC-1');
    expect(reactionTargetGuid(null)).toBeNull();
    expect(isReactionRow(row({ associatedMessageType: 1000 }))).toBe(false); // sticker, a real message
    expect(isReactionRow(row({ associatedMessageType: 3005 }))).toBe(true);
  });

  it('maps the six tapback types, replaces a person’s tapback and honours removals', () => {
    const out = foldReactions([
      row({ rowId: 1, associatedMessageType: 2001 }), // like
      row({ rowId: 2, associatedMessageType: 2003 }), // same person now laughs: replaces like
      row({ rowId: 3, associatedMessageType: 2004, isFromMe: true, associatedMessageGuid: 'bp:T' }),
      row({ rowId: 4, associatedMessageType: 2005, handle: { rowId: 2, id: 'x@y.z', service: 'iMessage', country: null } }),
      row({ rowId: 5, associatedMessageType: 3005, handle: { rowId: 2, id: 'x@y.z', service: 'iMessage', country: null } }), // removed
      row({ rowId: 6, associatedMessageType: 2002, associatedMessageGuid: 'p:0/U' }),
    ]);
    expect(out.get('T')!.map((r) => [r.type, r.from])).toEqual([
      ['laugh', '+15550001111'],
      ['emphasize', 'me@icloud.com'],
    ]);
    expect(out.get('U')!.map((r) => r.type)).toEqual(['dislike']);
  });
});

describe('identifiers', () => {
  it('infers phone, email and chatapp identifier types and strips account prefixes', () => {
    expect(identifierType('+1 (555) 123-4567')).toBe('phone');
    expect(identifierType('+447700900123')).toBe('phone');
    expect(identifierType('5551234567')).toBe('phone');
    expect(identifierType('bob@example.com')).toBe('email');
    expect(identifierType('urn:biz:5f3a')).toBe('chatapp');
    expect(identifierType('chat493817263540912')).toBe('chatapp');
    expect(selfIdentifier('E:me@icloud.com')).toBe('me@icloud.com');
    expect(selfIdentifier('P:+15550000000')).toBe('+15550000000');
    expect(selfIdentifier(null)).toBeNull();
  });
});

describe('edited message and VersionTracker', () => {
  it('says changed after an in-place edit, and the document carries the new text and edited_at', () => {
    const tracker = new VersionTracker();
    const before = doc('hello')!;
    expect(tracker.changed(fx.guids.hello, before)).toBe(true); // never sent
    tracker.record(fx.guids.hello, before);
    expect(tracker.changed(fx.guids.hello, doc('hello')!)).toBe(false);

    fx.builder.editMessage(fx.rows.hello, 'Hi! Are we still on for dinner instead?', at(25));
    load();
    const after = doc('hello')!;
    expect(after.content.data).toBe('Hi! Are we still on for dinner instead?');
    expect(after.external_id).toBe(before.external_id);
    expect(after.metadata.message).toMatchObject({ edited: true, edited_at: at(25).toISOString(), edit_count: 1 });
    expect(tracker.changed(fx.guids.hello, after)).toBe(true);

    // A new tapback changes the target too; the same reactions again do not.
    tracker.record(fx.guids.reply, doc('reply', new Map())!);
    expect(tracker.changed(fx.guids.reply, doc('reply')!)).toBe(true);
  });

  it('persists across instances', () => {
    const file = `${dir}/versions.json`;
    const t = new VersionTracker();
    t.record(fx.guids.hello, doc('hello')!);
    t.save(file);
    const t2 = VersionTracker.load(file);
    expect(t2.size).toBe(1);
    expect(t2.changed(fx.guids.hello, doc('hello')!)).toBe(false);
    fs.writeFileSync(file, '{not json');
    expect(VersionTracker.load(file).size).toBe(0);
  });
});
