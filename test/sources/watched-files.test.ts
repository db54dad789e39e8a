/**
 * Watched Mail.app `.emlx` trees and Messages' chat.db (issue 41, item 2): the agent's source runner watches them
 * with real file-system events and a change starts a tail run by itself; nobody POSTs anything. Against a LIVE
 * gateway on the test backend: what is written is found by GET /v1/search, stored once, and the source's state is
 * what GET /v1/coverage shows. Every wait is for a condition, never a fixed time.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayClient } from '../../src/agent/gateway-client.ts';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { auth, testConfig } from '../agent/helpers.ts';
import { backend } from '../helpers/db.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';
import { at, buildFixture, tempDir } from '../chatapp/fixture.ts';
import { ChatDbBuilder } from '../helpers/chatdb-builder.ts';
import { emlx, simpleMessage, writeTree } from '../email-collectors/fixtures.ts';
import { mailConfig, startLiveGateway, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';

let live: LiveGateway;
const agents: AgentServer[] = [];
beforeAll(async () => {
  live = await startLiveGateway();
});
afterEach(async () => {
  while (agents.length) await agents.pop()!.close();
});
afterAll(async () => {
  await live?.close();
});

async function agentFor(config: ReturnType<typeof testConfig>): Promise<AgentServer> {
  const agent = await createAgentServer(config, { logger: false, runSources: true, gateway: createGatewayClient({ baseUrl: live.url, authToken: TEST_TOKEN }), sourcesReportMs: 1000 });
  agents.push(agent);
  await agent.ready();
  return agent;
}

const found = async (word: string) => {
  const res = await live.gw.request('GET', `/v1/search?q=${encodeURIComponent(word)}&k=5`);
  return res.statusCode === 200 && res.json().hits.length > 0;
};
const count = async (sql: string, params: unknown[]) => Number((await live.gw.db.query<{ n: string }>(sql, params)).rows[0].n);
const emailVersions = (domain: string) => count(`SELECT count(*) AS n FROM documents WHERE source_type = 'email_local' AND external_id LIKE $1`, [`%@${domain}`]);

/** The agent's own view of its one source (GET /v1/sources). */
async function source(agent: AgentServer, collector: string) {
  const res = await agent.inject({ method: 'GET', url: '/v1/sources', headers: auth });
  return (res.json().sources as Array<{ collector: string; state: string; mode: string; last_error: string | null; detail?: { runs?: number } }>).find((s) => s.collector === collector);
}

/** The gateway's coverage entry of a collector's source, once an agent reported its status. */
async function coverageEntry(collector: string) {
  const res = await live.gw.request('GET', '/v1/coverage');
  const all = (res.json().sources ?? []) as Array<{ collector: string; state: string | null; last_success_at: string | null; last_error: string | null }>;
  return all.find((s) => s.collector === collector && s.state !== null);
}

describe(`watched Mail.app .emlx tree (${backend})`, () => {
  it('an .emlx written into Mailboxes/…/Messages is stored with no POST; the same burst again stores nothing twice', async () => {
    const domain = 'watch-emlx.example';
    const root = path.join(tmpDir('memex-watch-emlx-'), 'Mail', 'V10');
    const inbox = 'ACCOUNT-1/INBOX.mbox/UUID-A/Data/Messages';
    writeTree(root, [1, 2].map((n) => ({ rel: `${inbox}/${n}.emlx`, bytes: emlx(simpleMessage(n, { domain })) })));
    const config = mailConfig(tmpDir('memex-watch-emlx-state-'), { sources: [{ id: 'mailapp', type: 'local', source_path: root }] }, live.url);
    const agent = await agentFor(config);
    await waitFor('the tree is caught up by the first run', async () => (await emailVersions(domain)) === 2);
    await waitFor('the source is watching', async () => (await source(agent, 'email_local'))?.state === 'watching');

    // Mail.app delivers a message: a new N.emlx in the mailbox's Messages folder.
    const file = path.join(root, inbox, '3.emlx');
    const bytes = emlx(simpleMessage(3, { domain, body: 'Minutes of the xylocarp committee.' }));
    fs.writeFileSync(file, bytes);
    await waitFor('the written message is found', () => found('xylocarp'));
    expect(await emailVersions(domain)).toBe(3);

    // The same burst again (the file written anew with the same bytes): a run follows, and stores nothing.
    const runs = (await source(agent, 'email_local'))!.detail!.runs!;
    for (let i = 0; i < 3; i++) fs.writeFileSync(file, bytes);
    await waitFor('a run after the second burst', async () => {
      const s = await source(agent, 'email_local');
      return s!.detail!.runs! > runs && s!.state === 'watching';
    });
    expect(await emailVersions(domain)).toBe(3);
    expect(await count(`SELECT count(*) AS n FROM documents WHERE source_type = 'email_local' AND external_id LIKE $1`, [`%msg-3@${domain}%`])).toBe(1);

    // A mailbox made after the watch began is watched too.
    writeTree(root, [{ rel: 'ACCOUNT-1/Work.mbox/UUID-B/Data/1/Messages/10.emlx', bytes: emlx(simpleMessage(10, { domain, body: 'The quillwort budget.' })) }]);
    await waitFor('a message of a new mailbox is found', () => found('quillwort'));

    // Freshness as the gateway shows it for every source; POST …:run still works beside the watch.
    const entry = await waitFor('the gateway shows the source watching', async () => {
      const e = await coverageEntry('email_local');
      return e?.state === 'watching' && e.last_success_at ? e : undefined;
    });
    expect(entry.last_error).toBeNull();
    const post = await agent.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: { mode: 'simulate', simulate_path: root, limit: 100 } });
    expect([200, 409]).toContain(post.statusCode);
    expect(await emailVersions(domain)).toBe(4);
  }, 120_000);
});

describe(`watched Messages chat.db (${backend})`, () => {
  const chatConfig = (dbPath: string, dir: string) =>
    testConfig({
      gateway: { base_url: live.url, auth_token: TEST_TOKEN, timeout: 10 },
      modules: { chatapp: { enabled: true, chat_db_path: dbPath, state_path: path.join(dir, 'state', 'chatapp_state.json'), ocr_enabled: false } },
    });
  const chatStored = (guid: string) => count(`SELECT count(*) AS n FROM documents WHERE source_type = 'chatapp' AND external_id = $1`, [`chatapp:${guid}`]);

  it('a message committed into chat.db-wal only (the app still open) is stored with no POST', async () => {
    const dir = tempDir();
    const fx = buildFixture(dir, 'ventura');
    const agent = await agentFor(chatConfig(fx.file, dir));
    await waitFor('the source is watching', async () => (await source(agent, 'chatapp'))?.state === 'watching');
    const before = crypto.createHash('sha256').update(fs.readFileSync(fx.file)).digest('hex');
    const r = fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'Bring the tamarillo chutney', date: at(60) });
    // Only the -wal was written: chat.db itself is byte for byte what it was.
    expect(crypto.createHash('sha256').update(fs.readFileSync(fx.file)).digest('hex')).toBe(before);
    await waitFor('the new message is stored', async () => (await chatStored(r.guid)) === 1);
    expect(await found('tamarillo')).toBe(true);
    const entry = await waitFor('the gateway shows the source watching', async () => {
      const e = await coverageEntry('chatapp');
      return e?.state === 'watching' && e.last_success_at ? e : undefined;
    });
    expect(entry.last_error).toBeNull();
    fx.builder.close();
  }, 120_000);

  it('no chat.db yet: the source says failed, in words, and recovers by itself once Messages writes one', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'chat.db');
    const agent = await agentFor(chatConfig(file, dir));
    const failed = await waitFor('the source reports the missing database', async () => {
      const s = await source(agent, 'chatapp');
      return s?.state === 'failed' ? s : undefined;
    });
    expect(failed.last_error).toMatch(/cannot open chat database/);
    const fx = buildFixture(dir, 'ventura');
    const r = fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'First light over the sorrel field', date: at(62) });
    await waitFor('the source is watching again', async () => {
      const s = await source(agent, 'chatapp');
      return s?.state === 'watching' && s.last_error === null;
    });
    // Its first run after the failure began at the head (a tail run on a fresh state): later rows are stored.
    const later = fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'Second light', date: at(63) });
    await waitFor('a message after the recovery is stored', async () => (await chatStored(later.guid)) === 1);
    expect(r.rowId).toBeLessThan(later.rowId);
    fx.builder.close();
  }, 120_000);

  it('a row written into chat.db itself (no WAL) is stored with no POST, once', async () => {
    const dir = tempDir();
    const file = path.join(dir, 'chat.db');
    const b = ChatDbBuilder.create(file, 'ventura', { wal: false });
    const alice = b.addHandle('+15551234567', 'iMessage');
    const chat = b.addChat({ chatIdentifier: '+15551234567', handles: [alice] });
    b.addMessage({ chatId: chat, handleId: alice, text: 'An old message', date: at(0) });
    const agent = await agentFor(chatConfig(file, dir));
    await waitFor('the source is watching', async () => (await source(agent, 'chatapp'))?.state === 'watching');
    const runs = (await source(agent, 'chatapp'))!.detail!.runs!;
    const r = b.addMessage({ chatId: chat, handleId: alice, text: 'The gooseberry fool is ready', date: at(61) });
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    await waitFor('the new message is stored', async () => (await chatStored(r.guid)) === 1);
    await waitFor('the run is over', async () => {
      const s = await source(agent, 'chatapp');
      return s!.detail!.runs! > runs && s!.state === 'watching';
    });
    // POST …:run keeps working: nothing new, nothing twice.
    const post = await agent.inject({ method: 'POST', url: '/v1/collectors/chatapp:run', headers: auth, payload: {} });
    expect(post.statusCode).toBe(200);
    expect(post.json()).toMatchObject({ status: 'ok', submitted: 0 });
    expect(await chatStored(r.guid)).toBe(1);
    b.close();
  }, 120_000);
});
