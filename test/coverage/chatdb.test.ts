/**
 * Coverage of the Messages collector against a live gateway, with a generated chat.db (test/chatapp/fixture.ts):
 * every message row counts in the source — the tapback folded into its message, a system row with nothing to
 * store, an edited message and one unsent whole (its tombstone stored) — and the counts add up. A recount after
 * a later edit reports the change without importing it; a blocked person's messages are skipped, not missing.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { auth, testConfig } from '../agent/helpers.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startLiveGateway, type LiveGateway } from '../email-collectors/helpers.ts';
import { at, buildFixture, tempDir, type Fixture } from '../chatapp/fixture.ts';

describe('coverage of the Messages (chat.db) collector', () => {
  let live: LiveGateway;
  let agent: AgentServer;
  let fx: Fixture;

  beforeAll(async () => {
    live = await startLiveGateway();
    const dir = tempDir('memex-cov-chat-');
    fx = buildFixture(dir, 'ventura');
    // Before the first run: one message edited, one unsent whole.
    fx.builder.editMessage(fx.rows.hello, 'Hi! Are we still on for dinner?', at(20));
    fx.builder.unsendMessage(fx.rows.reply, at(21));
    const config = testConfig({
      gateway: { base_url: live.url, auth_token: TEST_TOKEN, timeout: 10 },
      modules: { chatapp: { enabled: true, chat_db_path: fx.file, state_path: path.join(dir, 'state', 'chatapp_state.json'), ocr_enabled: false, batch_size: 200 } },
    });
    agent = await createAgentServer(config, { logger: false });
  });
  afterAll(async () => {
    await agent?.close();
    await live?.close();
  });

  const run = async (mode: 'backfill' | 'tail') => {
    const res = await agent.inject({ method: 'POST', url: '/v1/collectors/chatapp:run', headers: auth, payload: { mode } });
    expect(res.statusCode).toBe(200);
    return res.json();
  };
  const coverage = async () => {
    const sources = (await live.gw.request('GET', '/v1/coverage?source=chatapp')).json().sources;
    expect(sources).toHaveLength(1);
    return sources[0];
  };

  it('counts every row: the edited and the unsent message stored, a tapback folded, a system row empty', async () => {
    const stats = await run('backfill');
    // 11 rows: 9 messages stored (the edited one with its new text, the unsent one as its tombstone), the
    // tapback folded into its message, an empty system row.
    expect(stats.coverage).toEqual({ in_source: 11, stored: { new: 9, unchanged: 0, updated: 0 }, skipped: { folded: 1, empty: 1 }, failed: 0, pending: 0 });
    const cov = await coverage();
    expect(cov).toMatchObject({
      collector: 'chatapp',
      source_type: 'chatapp',
      source_ref: fx.file,
      in_source: 11,
      stored: 9,
      skipped_by_reason: { folded: 1, empty: 1 },
      failed: 0,
      pending: 0,
      missing_total: 0,
      cursor: { edited: 1, unsent: 1, head_rowid: 11 },
      reconcile: { in_source: 11, drift: 0, changed: 0, in_sync: true, facts: { messages: 10, tapbacks: 1, edited: 1, unsent: 1 } },
    });
  });

  it('a recount finds a message edited since the run without importing it; the next run stores it as updated', async () => {
    fx.builder.editMessage(fx.rows.emoji, 'Perfect, see you there', at(40));
    const submissions = async () => (await live.gw.db.query(`SELECT count(*)::int AS n FROM ingest_submissions`)).rows[0];
    const before = await submissions();
    const res = await agent.inject({ method: 'POST', url: '/v1/coverage:reconcile', headers: auth, payload: { collector: 'chatapp' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().sources).toEqual([
      expect.objectContaining({ source_ref: fx.file, error: null, reconcile: expect.objectContaining({ in_source: 11, drift: 0, added: 0, changed: 1, in_sync: false }) }),
    ]);
    expect((await coverage()).reconcile).toMatchObject({ changed: 1, facts: { edited: 2, unsent: 1 } });
    expect(await submissions()).toEqual(before);

    const stats = await run('tail');
    expect(stats.coverage).toEqual({ in_source: 11, stored: { new: 0, unchanged: 8, updated: 1 }, skipped: { folded: 1, empty: 1 }, failed: 0, pending: 0 });
    expect(await coverage()).toMatchObject({ in_source: 11, stored: 9, stored_detail: { updated: 1 }, reconcile: { in_sync: true } });
  });

  it("a blocked person's messages are skipped as blocked, not missing", async () => {
    const forgot = await live.gw.request('POST', '/v1/forget', { identifier: 'bob@example.com', block: true });
    expect(forgot.statusCode).toBe(200);
    // Bob writes again after the block.
    fx.builder.addMessage({ chatId: fx.chats.bob, handleId: fx.handles.bob, text: 'Did you get the invoice?', date: at(50) });
    fx.builder.addMessage({ chatId: fx.chats.bob, handleId: fx.handles.bob, text: 'Ping', date: at(51) });
    const stats = await run('tail');
    expect(stats.coverage).toMatchObject({ in_source: 13, skipped: { blocked: 2, folded: 1, empty: 1 }, failed: 0, pending: 0 });
    const cov = await coverage();
    expect(cov).toMatchObject({ in_source: 13, failed: 0, pending: 0, missing_total: 0, missing: [] });
    expect(cov.skipped_by_reason.blocked).toBe(2);
    // Counted the same way by the next run.
    expect((await run('tail')).coverage).toMatchObject({ in_source: 13, skipped: { blocked: 2 } });
  });
});
