import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appleTimeToIso, ChatDb, ChatDbError } from '../../src/agent/collectors/chatapp/chatdb.ts';
import { SqliteSnapshot } from '../../src/sqlite/engine.ts';
import { ChatDbBuilder, openWritable } from '../helpers/chatdb-builder.ts';
import { at, buildFixture, tempDir, type Fixture } from './fixture.ts';

describe('appleTimeToIso', () => {
  it('detects seconds, milliseconds, microseconds and nanoseconds by magnitude', () => {
    expect(appleTimeToIso(60)).toBe('2001-01-01T00:01:00.000Z');
    expect(appleTimeToIso(120)).toBe('2001-01-01T00:02:00.000Z');
    // 2015-06-01T12:00:00Z in seconds (old databases).
    expect(appleTimeToIso(454_852_800)).toBe('2015-06-01T12:00:00.000Z');
    // 2024-03-10T09:00:00.123Z in nanoseconds (High Sierra and later), as a bigint and as a float.
    expect(appleTimeToIso(731_754_000_123_000_000n)).toBe('2024-03-10T09:00:00.123Z');
    expect(appleTimeToIso(731_754_000_123_000_000)).toBe('2024-03-10T09:00:00.123Z');
    expect(appleTimeToIso(731_754_000_123_000)).toBe('2024-03-10T09:00:00.123Z'); // µs
    expect(appleTimeToIso(731_754_000_123)).toBe('2024-03-10T09:00:00.123Z'); // ms
  });

  it('gives null for 0, null, negative and non-numbers', () => {
    expect(appleTimeToIso(0)).toBeNull();
    expect(appleTimeToIso(null)).toBeNull();
    expect(appleTimeToIso(undefined)).toBeNull();
    expect(appleTimeToIso(-5)).toBeNull();
    expect(appleTimeToIso('abc')).toBeNull();
    expect(appleTimeToIso(Number.NaN)).toBeNull();
  });
});

describe('ChatDb reader', () => {
  let dir: string;
  let fx: Fixture;
  beforeEach(() => {
    dir = tempDir();
  });
  afterEach(() => {
    fx?.builder.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('reads messages after a cursor with handle, chat and attachments (Ventura, ns dates)', () => {
    fx = buildFixture(dir, 'ventura');
    const db = ChatDb.open(fx.file);
    try {
      expect(db.minRowId()).toBe(1);
      expect(db.headRowId()).toBe(fx.rows.threaded);
      const all = db.messagesAfter(0, 100);
      expect(all.map((m) => m.rowId)).toEqual([...all.map((m) => m.rowId)].sort((a, b) => a - b));
      const page = db.messagesAfter(fx.rows.reply, 2);
      expect(page.map((m) => m.guid)).toEqual([fx.guids.emoji, fx.guids.cjk]);

      const hello = all.find((m) => m.guid === fx.guids.hello)!;
      expect(hello.date).toBe(at(0).toISOString());
      expect(hello.handle?.id).toBe('+15551234567');
      expect(hello.chatId).toBe(fx.chats.alice);
      expect(hello.isFromMe).toBe(false);

      const emoji = all.find((m) => m.guid === fx.guids.emoji)!;
      expect(emoji.text).toBeNull();
      expect(emoji.attributedBody).not.toBeNull();

      const photo = all.find((m) => m.guid === fx.guids.photo)!;
      expect(photo.attachments).toHaveLength(1);
      expect(photo.attachments[0]).toMatchObject({ mimeType: 'image/heic', totalBytes: 2_345_678 });

      const tap = all.find((m) => m.guid === fx.guids.tapback)!;
      expect(tap.associatedMessageType).toBe(2000);
      expect(db.reactionsFor([{ guid: fx.guids.reply, parts: 1 }], 0).map((r) => r.guid)).toEqual([fx.guids.tapback]);
      expect(db.reactionsFor([{ guid: fx.guids.hello, parts: 1 }], 0)).toEqual([]);

      const chats = db.chats([fx.chats.group, fx.chats.bob]);
      expect(chats.get(fx.chats.group)).toMatchObject({ displayName: 'Weekend trip', style: 43 });
      expect(chats.get(fx.chats.group)!.participants.map((p) => p.id)).toEqual(['+15551234567', 'bob@example.com', '+447700900123']);
      expect(chats.get(fx.chats.bob)!.style).toBe(45);
    } finally {
      db.close();
    }
  });

  it('reads an old database without attributedBody/tapback/edit columns, with dates in seconds', () => {
    fx = buildFixture(dir, 'legacy');
    const db = ChatDb.open(fx.file);
    try {
      expect(db.has('message', 'attributedBody')).toBe(false);
      expect(db.has('message', 'date_edited')).toBe(false);
      const all = db.messagesAfter(0, 100);
      expect(all.length).toBe(5);
      const hello = all.find((m) => m.guid === fx.guids.hello)!;
      expect(hello.date).toBe(at(0).toISOString());
      expect(hello.attributedBody).toBeNull();
      expect(hello.associatedMessageType).toBe(0);
      expect(db.editedSince(0, 1e9, 10)).toEqual([]);
      expect(db.reactionsFor([{ guid: fx.guids.hello, parts: 1 }], 0)).toEqual([]);
      expect(db.maxDateEdited()).toBe(0);
    } finally {
      db.close();
    }
  });

  it('never writes, and does not lock the Messages app out while it reads', () => {
    fx = buildFixture(dir, 'ventura');
    const before = fs.readFileSync(fx.file);
    const filesBefore = fs.readdirSync(dir).sort();
    const db = ChatDb.open(fx.file);
    try {
      expect(db.messagesAfter(0, 3)).toHaveLength(3);
      // The "app" writes while our connection is open: no SQLITE_BUSY, and the reader sees the new row.
      const r = fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'new while reading', date: at(30) });
      expect(db.headRowId()).toBe(r.rowId);
      expect(db.messagesAfter(r.rowId - 1, 10)[0].text).toBe('new while reading');
      // A long write transaction by the app does not stop us from reading (WAL).
      fx.builder.db.exec('BEGIN IMMEDIATE');
      fx.builder.db.prepare("UPDATE message SET text = 'x' WHERE ROWID = 1").run();
      expect(db.messagesAfter(0, 1)[0].text).toBe('Hi! Are we still on for lunch?');
      fx.builder.db.exec('ROLLBACK');
    } finally {
      db.close();
    }
    // The app's commits are still only in its -wal; the reader created nothing (no -shm, no lock files).
    expect(fs.readFileSync(fx.file).equals(before)).toBe(true);
    expect(fs.readdirSync(dir).sort()).toEqual(filesBefore);
  });

  it('repeats a read that a checkpoint overtook, on a fresh snapshot', () => {
    fx = buildFixture(dir, 'ventura');
    const snapshot = SqliteSnapshot.open(fx.file);
    try {
      let attempts = 0;
      const texts = snapshot.read((c) => {
        attempts++;
        const rows = c.all<{ text: string | null }>('SELECT text FROM message ORDER BY ROWID');
        if (attempts === 1) {
          // The app commits and checkpoints while our read is under way: what we read may mix two states.
          fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'written during the read', date: at(40) });
          fx.builder.db.pragma('wal_checkpoint(TRUNCATE)');
        }
        return rows.map((r) => r.text);
      });
      expect(attempts).toBe(2);
      expect(texts).toContain('written during the read');
    } finally {
      snapshot.close();
    }
  });

  it('reads a WAL database while the app is closed (no -wal/-shm) without changing the file', () => {
    fx = buildFixture(dir, 'ventura');
    fx.builder.close(); // last connection: SQLite checkpoints and removes -wal/-shm
    expect(fs.existsSync(`${fx.file}-wal`)).toBe(false);
    const before = fs.readFileSync(fx.file);
    const db = ChatDb.open(fx.file);
    expect(db.messagesAfter(0, 100).length).toBe(fx.rows.threaded);
    db.close();
    expect(fs.readFileSync(fx.file).equals(before)).toBe(true);
    fx = { ...fx, builder: ChatDbBuilder.open(fx.file, 'ventura') };
  });

  it('refuses a missing file and a database that is not a Messages database', () => {
    expect(() => ChatDb.open(path.join(dir, 'nope.db'))).toThrow(ChatDbError);
    const other = path.join(dir, 'other.db');
    const o = openWritable(other);
    o.exec('CREATE TABLE t (x)');
    o.close();
    expect(() => ChatDb.open(other)).toThrow(/not a Messages database/);
    // And it did not create the missing file.
    expect(fs.existsSync(path.join(dir, 'nope.db'))).toBe(false);
  });

  it('finds edited rows by date_edited and reports the new text', () => {
    fx = buildFixture(dir, 'ventura');
    fx.builder.editMessage(fx.rows.hello, 'Hi! Are we still on for dinner?', at(20));
    const db = ChatDb.open(fx.file);
    try {
      const edited = db.editedSince(0, 1_000, 10);
      expect(edited.map((m) => m.guid)).toEqual([fx.guids.hello]);
      expect(edited[0].text).toBe('Hi! Are we still on for dinner?');
      expect(edited[0].dateEdited).toBe(at(20).toISOString());
      expect(db.editedSince(db.maxDateEdited(), 1_000, 10)).toEqual([]);
    } finally {
      db.close();
    }
  });
});

describe('ChatDbBuilder profiles', () => {
  it('writes seconds in legacy and nanoseconds in newer schemas', () => {
    const dir = tempDir();
    try {
      for (const profile of ['legacy', 'high_sierra', 'ventura'] as const) {
        const b = ChatDbBuilder.create(path.join(dir, `${profile}.db`), profile);
        b.addMessage({ text: 'x', date: at(0) });
        const raw = b.db.prepare('SELECT date FROM message').safeIntegers(true).get() as { date: bigint };
        expect(raw.date).toBe(profile === 'legacy' ? 731_754_000n : 731_754_000_000_000_000n);
        b.close();
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
