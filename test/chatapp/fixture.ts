/** A realistic chat.db shared by the chatapp tests (Ventura schema unless told otherwise). */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ChatDbBuilder, encodeKeyedArchiverAttributedString, type ChatSchemaProfile } from '../helpers/chatdb-builder.ts';

export function tempDir(prefix = 'memex-chat-'): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), prefix));
}

export interface Fixture {
  builder: ChatDbBuilder;
  file: string;
  handles: { alice: number; bob: number; carol: number };
  chats: { alice: number; bob: number; group: number };
  guids: Record<string, string>;
  rows: Record<string, number>;
}

export const T0 = new Date('2024-03-10T09:00:00.000Z');
export const at = (minutes: number) => new Date(T0.getTime() + minutes * 60_000);

/**
 * Alice (+1 phone), Bob (email handle), Carol (UK phone); direct chats with Alice and Bob, and a named
 * group with all three. Rows cover: plain text, text only in attributedBody (emoji, CJK, Cyrillic), a
 * keyed-archiver body, image and PDF attachments, an attachment-only row, an empty (unsent) row, a reply,
 * and a tapback from Alice on one of my messages.
 */
export function buildFixture(dir: string, profile: ChatSchemaProfile = 'ventura'): Fixture {
  const file = path.join(dir, 'chat.db');
  const b = ChatDbBuilder.create(file, profile);
  const alice = b.addHandle('+15551234567', 'iMessage');
  const bob = b.addHandle('bob@example.com', 'iMessage');
  const carol = b.addHandle('+447700900123', 'SMS', 'gb');
  const chatAlice = b.addChat({ chatIdentifier: '+15551234567', handles: [alice] });
  const chatBob = b.addChat({ chatIdentifier: 'bob@example.com', handles: [bob] });
  const group = b.addChat({ chatIdentifier: 'chat493817263540912', displayName: 'Weekend trip', handles: [alice, bob, carol], group: true });
  const guids: Record<string, string> = {};
  const rows: Record<string, number> = {};
  const put = (name: string, r: { rowId: number; guid: string }) => {
    guids[name] = r.guid;
    rows[name] = r.rowId;
  };
  const modern = profile !== 'legacy';
  put('hello', b.addMessage({ chatId: chatAlice, handleId: alice, text: 'Hi! Are we still on for lunch?', date: at(0) }));
  put('reply', b.addMessage({ chatId: chatAlice, handleId: alice, isFromMe: true, text: 'Yes, 12:30 at the usual place', date: at(1), dateDelivered: at(1.1) }));
  if (modern) {
    put('emoji', b.addMessage({ chatId: chatAlice, handleId: alice, bodyOnly: 'Perfect 👌😄 see you', date: at(2) }));
    put('cjk', b.addMessage({ chatId: group, handleId: carol, bodyOnly: '我们周六出发吗？', date: at(3) }));
    put('cyrillic', b.addMessage({ chatId: group, handleId: bob, bodyOnly: 'Да, в субботу утром', date: at(4) }));
    put('keyed', b.addMessage({ chatId: chatBob, handleId: bob, attributedBody: encodeKeyedArchiverAttributedString('Sent the invoice over'), text: null, date: at(5) }));
  }
  put('photo', b.addMessage({
    chatId: group,
    handleId: alice,
    text: 'Look at this view',
    date: at(6),
    attachments: [{ filename: '~/Library/Messages/Attachments/ab/11/IMG_0042.HEIC', mimeType: 'image/heic', uti: 'public.heic', totalBytes: 2_345_678 }],
  }));
  put('pdfOnly', b.addMessage({
    chatId: chatBob,
    handleId: bob,
    text: '\ufffc',
    date: at(7),
    attachments: [{ filename: '~/Library/Messages/Attachments/cd/22/Invoice-2024-03.pdf', mimeType: null, uti: 'com.adobe.pdf', totalBytes: 81_234 }],
  }));
  put('unsent', b.addMessage({ chatId: chatAlice, handleId: alice, isFromMe: true, text: null, date: at(8) }));
  if (modern) {
    put('tapback', b.addMessage({
      chatId: chatAlice,
      handleId: alice,
      text: 'Loved “Yes, 12:30 at the usual place”',
      associatedMessageGuid: `p:0/${guids.reply}`,
      associatedMessageType: 2000,
      date: at(9),
    }));
    put('threaded', b.addMessage({ chatId: group, handleId: bob, isFromMe: false, text: 'I can drive', replyToGuid: guids.cyrillic, threadOriginatorGuid: guids.cjk, date: at(10) }));
  }
  return { builder: b, file, handles: { alice, bob, carol }, chats: { alice: chatAlice, bob: chatBob, group }, guids, rows };
}
