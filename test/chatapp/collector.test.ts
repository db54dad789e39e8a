import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatDocument } from '../../src/agent/collectors/chatapp/document.ts';
import {
  CollectorBusyError,
  loadState,
  readCollectorState,
  runChatCollector,
  type SubmitFn,
  type SubmitResult,
} from '../../src/agent/collectors/chatapp/cursor.ts';
import { ChatDbError } from '../../src/agent/collectors/chatapp/chatdb.ts';
import { at, buildFixture, tempDir, type Fixture } from './fixture.ts';

/**
 * Stands in for the gateway client the daemon will inject: it keeps every accepted document (like the
 * gateway's document table, latest version per external_id plus the version history) and can be told
 * to go down, which is the one fault we cannot cause for real without the gateway.
 */
class GatewaySink {
  calls: (ChatDocument | ChatDocument[])[] = [];
  versions = new Map<string, ChatDocument[]>();
  down = false;
  reject = new Set<string>();

  submit: SubmitFn = async (docs) => {
    this.calls.push(docs);
    if (this.down) throw new Error('connect ECONNREFUSED 127.0.0.1:8085');
    const one = (d: ChatDocument): SubmitResult => {
      if (this.reject.has(d.external_id)) return { ok: false, retryable: false, error: '422 content.data must not be empty' };
      const list = this.versions.get(d.external_id) ?? [];
      list.push(d);
      this.versions.set(d.external_id, list);
      return { ok: true };
    };
    return Array.isArray(docs) ? docs.map(one) : one(docs);
  };

  latest(guid: string): ChatDocument | undefined {
    const l = this.versions.get(`chatapp:${guid}`);
    return l?.[l.length - 1];
  }

  get accepted(): number {
    return [...this.versions.values()].reduce((n, l) => n + l.length, 0);
  }
}

let dir: string;
let fx: Fixture;
let statePath: string;
let sink: GatewaySink;
const run = (over: Partial<Parameters<typeof runChatCollector>[0]> = {}) =>
  runChatCollector({ dbPath: fx.file, statePath, mode: 'backfill', submit: sink.submit, homeDir: '/Users/me', ...over });

beforeEach(() => {
  dir = tempDir();
  fx = buildFixture(dir, 'ventura');
  statePath = path.join(dir, 'state', 'chatapp_state.json');
  sink = new GatewaySink();
});
afterEach(() => {
  fx.builder.close();
  fs.rmSync(dir, { recursive: true, force: true });
});

describe('runChatCollector', () => {
  it('backfills every ingestible message once, folds the tapback, skips the empty row', async () => {
    const stats = await run({ batchSize: 4 });
    expect(stats).toMatchObject({ status: 'ok', mode: 'backfill', processed: 11, reactions: 1, cursor_rowid: 11, head_rowid: 11, floor_rowid: 0 });
    // 11 rows: 9 documents, 1 unsent row skipped, 1 tapback folded into its target.
    expect(sink.versions.size).toBe(9);
    expect(sink.latest(fx.guids.tapback)).toBeUndefined();
    expect(sink.latest(fx.guids.unsent)).toBeUndefined();
    expect(sink.latest(fx.guids.reply)!.metadata.reactions).toEqual([
      { type: 'love', from: '+15551234567', is_from_me: false, at: at(9).toISOString() },
    ]);
    // The target was in an earlier batch than its tapback: it was sent once before the reaction was
    // known and (the reactions are already folded in at first sight) is NOT resent unchanged.
    expect(sink.versions.get(`chatapp:${fx.guids.reply}`)).toHaveLength(1);
    expect(stats.submitted).toBe(9);
    expect(stats.attachments).toBe(2);
    expect(sink.calls.every((c) => !Array.isArray(c))).toBe(true);

    const state = readCollectorState(statePath);
    expect(state).toMatchObject({ cursor_rowid: 11, head_rowid: 11, floor_rowid: 0, last_error: null });
    expect(typeof state.last_run).toBe('string');
  });

  it('backfill then tail picks up only the new rows', async () => {
    await run();
    const first = sink.accepted;
    const again = await run({ mode: 'tail' });
    expect(again).toMatchObject({ status: 'ok', processed: 0, submitted: 0 });
    const a = fx.builder.addMessage({ chatId: fx.chats.bob, handleId: fx.handles.bob, text: 'Invoice paid, thanks', date: at(40) });
    const b = fx.builder.addMessage({ chatId: fx.chats.group, handleId: fx.handles.carol, bodyOnly: 'Увидимся 🚗', date: at(41) });
    const tail = await run({ mode: 'tail' });
    expect(tail).toMatchObject({ processed: 2, submitted: 2, cursor_rowid: b.rowId, head_rowid: b.rowId });
    expect(sink.accepted).toBe(first + 2);
    expect(sink.latest(a.guid)!.content.data).toBe('Invoice paid, thanks');
    expect(sink.latest(b.guid)!.content.data).toBe('Увидимся 🚗');
  });

  it('tail on a fresh state skips history; a later backfill covers it without resending', async () => {
    const tail = await run({ mode: 'tail' });
    expect(tail).toMatchObject({ processed: 0, cursor_rowid: 11, floor_rowid: 11 });
    expect(sink.accepted).toBe(0);
    const n = fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'new after tail start', date: at(50) });
    await run({ mode: 'tail' });
    expect(sink.accepted).toBe(1);
    const back = await run({ mode: 'backfill' });
    expect(back).toMatchObject({ floor_rowid: 0, cursor_rowid: n.rowId });
    expect(sink.versions.size).toBe(10);
    expect(sink.versions.get(`chatapp:${n.guid}`)).toHaveLength(1); // not resent
  });

  it('respects max_rows and resumes from the persisted cursor after a restart', async () => {
    const s1 = await run({ maxRows: 5, batchSize: 2 });
    expect(s1).toMatchObject({ processed: 5, cursor_rowid: 5, batches: 3 });
    expect(loadState(statePath).cursor_rowid).toBe(5);
    // "Restart": a new run call reads only the state file.
    const s2 = await run({ maxRows: 100, batchSize: 2 });
    expect(s2).toMatchObject({ processed: 6, cursor_rowid: 11 });
    expect(sink.versions.size).toBe(9);
    for (const l of sink.versions.values()) expect(l).toHaveLength(1); // nothing delivered twice
  });

  it('a failing gateway does not advance the cursor and records last_error; the next run delivers', async () => {
    await run({ maxRows: 3 });
    sink.down = true;
    const failed = await run();
    expect(failed.status).toBe('error');
    expect(failed.cursor_rowid).toBe(3);
    expect(failed.errors[0].error).toMatch(/ECONNREFUSED/);
    expect(readCollectorState(statePath)).toMatchObject({ cursor_rowid: 3, last_error: expect.stringMatching(/ECONNREFUSED/) });

    sink.down = false;
    const ok = await run();
    expect(ok).toMatchObject({ status: 'ok', cursor_rowid: 11 });
    expect(readCollectorState(statePath).last_error).toBeNull();
    expect(sink.versions.size).toBe(9);
  });

  it('a permanently rejected document is reported but does not block the cursor', async () => {
    sink.reject.add(`chatapp:${fx.guids.keyed}`);
    const stats = await run({ batch: true, batchSize: 5 });
    expect(stats.status).toBe('partial');
    expect(stats.rejected).toBe(1);
    expect(stats.errors).toEqual([{ row_id: fx.rows.keyed, guid: fx.guids.keyed, error: '422 content.data must not be empty' }]);
    expect(stats.cursor_rowid).toBe(11);
  });

  it('batch=true sends arrays of at most batch_size documents', async () => {
    await run({ batch: true, batchSize: 3 });
    expect(sink.calls.length).toBeGreaterThan(1);
    for (const c of sink.calls) {
      expect(Array.isArray(c)).toBe(true);
      expect((c as ChatDocument[]).length).toBeLessThanOrEqual(3);
    }
    expect(sink.versions.size).toBe(9);
  });

  it('resubmits an edited message (new version, same identity) and only that one', async () => {
    await run();
    const before = sink.accepted;
    fx.builder.editMessage(fx.rows.hello, 'Hi! Are we still on for dinner?', at(30));
    const stats = await run({ mode: 'tail' });
    expect(stats).toMatchObject({ edits: 1, submitted: 1, processed: 0 });
    expect(sink.accepted).toBe(before + 1);
    const versions = sink.versions.get(`chatapp:${fx.guids.hello}`)!;
    expect(versions.map((v) => v.content.data)).toEqual(['Hi! Are we still on for lunch?', 'Hi! Are we still on for dinner?']);
    expect(versions[1].metadata.message.edited_at).toBe(at(30).toISOString());
    // Nothing changed since: the next run sends nothing.
    expect(await run({ mode: 'tail' })).toMatchObject({ submitted: 0, edits: 0 });
  });

  it('a new tapback resubmits its (already sent) target with the reaction; a removal resubmits again', async () => {
    await run();
    const like = fx.builder.addMessage({
      chatId: fx.chats.group, handleId: fx.handles.carol, text: 'Liked “I can drive”',
      associatedMessageGuid: `p:0/${fx.guids.threaded}`, associatedMessageType: 2001, date: at(60),
    });
    const s1 = await run({ mode: 'tail' });
    expect(s1).toMatchObject({ processed: 1, reactions: 1, submitted: 1 });
    expect(sink.latest(like.guid)).toBeUndefined();
    expect(sink.latest(fx.guids.threaded)!.metadata.reactions).toEqual([
      { type: 'like', from: '+447700900123', is_from_me: false, at: at(60).toISOString() },
    ]);
    fx.builder.addMessage({
      chatId: fx.chats.group, handleId: fx.handles.carol, text: 'Removed a like from “I can drive”',
      associatedMessageGuid: `p:0/${fx.guids.threaded}`, associatedMessageType: 3001, date: at(61),
    });
    await run({ mode: 'tail' });
    expect(sink.versions.get(`chatapp:${fx.guids.threaded}`)).toHaveLength(3);
    expect(sink.latest(fx.guids.threaded)!.metadata.reactions).toEqual([]);
  });

  it('reports metrics through the hooks', async () => {
    const counts: Record<string, number> = {};
    let attachments = 0;
    await run({ metrics: { messages: (s, n) => (counts[s] = (counts[s] ?? 0) + n), attachments: (n) => (attachments += n) } });
    expect(counts).toEqual({ submitted: 9, skipped: 1 });
    expect(attachments).toBe(2);
  });

  it('refuses a second concurrent run on the same state and reports a missing database', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow: SubmitFn = async (d) => {
      await gate;
      return sink.submit(d);
    };
    const first = run({ submit: slow });
    await expect(run()).rejects.toBeInstanceOf(CollectorBusyError);
    release();
    await first;

    await expect(run({ dbPath: path.join(dir, 'missing.db'), statePath: path.join(dir, 's2.json') })).rejects.toBeInstanceOf(ChatDbError);
    expect(readCollectorState(path.join(dir, 's2.json')).last_error).toMatch(/cannot open/);
  });

  it('works on an old database (seconds, no attributedBody)', async () => {
    fx.builder.close();
    fx = buildFixture(tempDir(), 'legacy');
    const stats = await run();
    expect(stats).toMatchObject({ status: 'ok', processed: 5, submitted: 4 });
    expect(sink.latest(fx.guids.hello)!.content_timestamp).toBe(at(0).toISOString());
    fs.rmSync(path.dirname(fx.file), { recursive: true, force: true });
  });

  it('works on a High Sierra-era database (nanoseconds, attributedBody, no edit columns)', async () => {
    fx.builder.close();
    fx = buildFixture(tempDir(), 'high_sierra');
    const stats = await run();
    expect(stats).toMatchObject({ status: 'ok', processed: 11, submitted: 9, reactions: 1, edits: 0 });
    expect(sink.latest(fx.guids.cjk)!.content.data).toBe('我们周六出发吗？');
    expect(sink.latest(fx.guids.reply)!.metadata.reactions).toHaveLength(1);
    fs.rmSync(path.dirname(fx.file), { recursive: true, force: true });
  });
});

describe('unsent messages (issue 21 item 7)', () => {
  it('a message unsent whole becomes a tombstone version: same identity, unsent metadata, no text left', async () => {
    await run();
    const before = sink.accepted;
    fx.builder.unsendMessage(fx.rows.hello, at(31));
    const stats = await run({ mode: 'tail' });
    expect(stats).toMatchObject({ edits: 1, submitted: 1, processed: 0 });
    expect(sink.accepted).toBe(before + 1);
    const versions = sink.versions.get(`chatapp:${fx.guids.hello}`)!;
    expect(versions.map((v) => v.content.data)).toEqual(['Hi! Are we still on for lunch?', '[Message unsent]']);
    expect(versions[1].metadata.message).toMatchObject({ unsent: true, unsent_whole: true, unsent_at: at(31).toISOString(), unsent_parts: [0] });
    expect(versions[1].metadata.message).not.toHaveProperty('edited');
    expect(versions[1].metadata.extraction).toMatchObject({ status: 'unsent' });
    expect(await run({ mode: 'tail' })).toMatchObject({ submitted: 0, edits: 0 });
  });

  it('a message with one unsent part is recorded as such, not as if intact', async () => {
    await run();
    fx.builder.unsendMessage(fx.rows.photo, at(32), [1], false);
    expect(await run({ mode: 'tail' })).toMatchObject({ edits: 1, submitted: 1 });
    const latest = sink.latest(fx.guids.photo)!;
    expect(latest.content.data).toBe('Look at this view');
    expect(latest.metadata.message).toMatchObject({ unsent: true, unsent_whole: false, unsent_parts: [1] });
  });

  it('a backfill of a message unsent before the first run still records it', async () => {
    fx.builder.unsendMessage(fx.rows.reply, at(33));
    await run();
    const doc = sink.latest(fx.guids.reply)!;
    expect(doc.content.data).toBe('[Message unsent]');
    expect(doc.metadata.message).toMatchObject({ unsent: true, unsent_whole: true, is_from_me: true });
  });
});
