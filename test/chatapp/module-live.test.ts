/**
 * The chat collector inside the host agent daemon, submitting to a LIVE memex gateway (real HTTP, real
 * database): batch vs single submission, backfill then tail, restart resumes, 409 on a concurrent run,
 * the state route, error statuses, metrics and OCR of an image attachment.
 */
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { createOcrEngine, type OcrEngine } from '../../src/ocr/engine.ts';
import { auth, testConfig } from '../agent/helpers.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { renderTextImage } from '../ocr/render-text.ts';
import { at, buildFixture, tempDir, type Fixture } from './fixture.ts';

let gw: TestGateway;
let baseUrl: string;
const agents: AgentServer[] = [];

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await gw?.close();
});
afterEach(async () => {
  while (agents.length) await agents.pop()!.close();
});

interface Setup {
  dir: string;
  fx: Fixture;
  statePath: string;
  agent: AgentServer;
}

async function agentFor(opts: { dir: string; dbPath: string; statePath: string; enabled?: boolean; ocr?: boolean; gatewayUrl?: string; batchSize?: number; engine?: OcrEngine }): Promise<AgentServer> {
  const config = testConfig({
    gateway: { base_url: opts.gatewayUrl ?? baseUrl, auth_token: TEST_TOKEN, timeout: 10 },
    modules: {
      chatapp: { enabled: opts.enabled ?? true, chat_db_path: opts.dbPath, state_path: opts.statePath, ocr_enabled: opts.ocr ?? false, batch_size: opts.batchSize ?? 200 },
    },
  });
  const agent = await createAgentServer(config, { logger: false, ocrEngine: opts.engine });
  agents.push(agent);
  return agent;
}

async function setup(over: Partial<Parameters<typeof agentFor>[0]> = {}): Promise<Setup> {
  const dir = tempDir();
  const fx = buildFixture(dir, 'ventura');
  const statePath = path.join(dir, 'state', 'chatapp_state.json');
  const agent = await agentFor({ dir, dbPath: fx.file, statePath, ...over });
  return { dir, fx, statePath, agent };
}

const run = (agent: AgentServer, body: unknown) =>
  agent.inject({ method: 'POST', url: '/v1/collectors/chatapp:run', headers: auth, payload: body as object });

/** Documents the gateway holds for these message guids: external_id -> versions (active first). */
async function stored(guids: string[]): Promise<Map<string, { doc_id: string; version_number: number; is_active_version: boolean; text: string; metadata: any }[]>> {
  const ids = guids.map((g) => `chatapp:${g}`);
  const r = await gw.db.query<{ external_id: string; doc_id: string; version_number: number; is_active_version: boolean; text: string; metadata: any }>(
    `SELECT external_id, doc_id, version_number, is_active_version, text, metadata FROM documents
      WHERE source_type = 'chatapp' AND external_id = ANY($1::text[]) ORDER BY external_id, version_number DESC`,
    [ids],
  );
  const out = new Map<string, any[]>();
  for (const row of r.rows) out.set(row.external_id, [...(out.get(row.external_id) ?? []), row]);
  return out;
}

/** The fixture's messages that become documents (the unsent row and the tapback do not). */
const docNames = ['hello', 'reply', 'emoji', 'cjk', 'cyrillic', 'keyed', 'photo', 'pdfOnly', 'threaded'];

describe(`chat collector module against a live gateway (${backend})`, () => {
  it('single submission: backfill stores every message once, with decoded text, and sets the state', async () => {
    const { fx, agent } = await setup();
    const res = await run(agent, { mode: 'backfill' });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ status: 'ok', mode: 'backfill', submitted: 9, rejected: 0 });
    const docs = await stored(Object.values(fx.guids));
    expect(docs.size).toBe(9);
    for (const n of docNames) expect(docs.get(`chatapp:${fx.guids[n]}`)).toHaveLength(1);
    expect(docs.get(`chatapp:${fx.guids.cjk}`)![0].text).toBe('我们周六出发吗？');
    expect(docs.get(`chatapp:${fx.guids.emoji}`)![0].text).toBe('Perfect 👌😄 see you');
    // The tapback is on its target, not a document of its own.
    expect(docs.has(`chatapp:${fx.guids.tapback}`)).toBe(false);
    expect(docs.get(`chatapp:${fx.guids.reply}`)![0].metadata.reactions).toHaveLength(1);
    // Not through the batch route.
    const state = (await agent.inject({ method: 'GET', url: '/v1/collectors/chatapp/state', headers: auth })).json();
    expect(state).toMatchObject({ cursor_rowid: fx.rows.threaded, head_rowid: fx.rows.threaded, floor_rowid: 0, last_error: null, is_running: false });
    expect(typeof state.last_run).toBe('string');

    const metrics = (await agent.inject({ method: 'GET', url: '/v1/metrics', headers: auth })).body;
    expect(metrics).toMatch(/imsg_messages_total\{status="submitted"\} 9/);
    expect(metrics).toMatch(/imsg_attachments_total 2/);

    // A second backfill sends nothing again.
    const again = (await run(agent, { mode: 'backfill' })).json();
    expect(again.submitted).toBe(0);
  });

  it('batch submission goes through the batch route and stores the same documents', async () => {
    const { fx, agent } = await setup();
    const batchesBefore = (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM ingest_batches')).rows[0].n;
    const res = await run(agent, { mode: 'backfill', batch: true, batch_size: 4 });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'ok', submitted: 9 });
    const docs = await stored(Object.values(fx.guids));
    expect(docs.size).toBe(9);
    for (const n of docNames) expect(docs.get(`chatapp:${fx.guids[n]}`)).toHaveLength(1);
    const batchesAfter = (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM ingest_batches')).rows[0].n;
    expect(batchesAfter).toBeGreaterThan(batchesBefore); // really the batch route (multi-document batches)
    const list = await gw.request('GET', '/v1/documents?source_type=chatapp&limit=200');
    const ids = new Set(list.json().documents.map((d: { external_id: string }) => d.external_id));
    for (const n of docNames) expect(ids.has(`chatapp:${fx.guids[n]}`)).toBe(true);
  });

  it('backfill then tail picks up only the new rows, and an edit becomes a new version', async () => {
    const { fx, agent } = await setup();
    expect((await run(agent, { mode: 'backfill', batch: true })).json().submitted).toBe(9);
    const n1 = fx.builder.addMessage({ chatId: fx.chats.alice, handleId: fx.handles.alice, text: 'Running 10 min late', date: at(30) });
    const n2 = fx.builder.addMessage({ chatId: fx.chats.group, handleId: fx.handles.bob, bodyOnly: 'Bin da 🚗', date: at(31) });
    const tail = (await run(agent, { mode: 'tail', batch: true })).json();
    expect(tail).toMatchObject({ status: 'ok', processed: 2, submitted: 2 });
    const docs = await stored([n1.guid, n2.guid]);
    expect(docs.get(`chatapp:${n2.guid}`)![0].text).toBe('Bin da 🚗');
    fx.builder.editMessage(n1.rowId, 'Running 20 min late', at(32));
    const edit = (await run(agent, { mode: 'tail' })).json();
    expect(edit).toMatchObject({ edits: 1, submitted: 1 });
    const versions = (await stored([n1.guid])).get(`chatapp:${n1.guid}`)!;
    expect(versions.map((v) => v.version_number)).toEqual([2, 1]);
    expect(versions[0]).toMatchObject({ is_active_version: true, text: 'Running 20 min late' });
  });

  it('a restarted agent resumes from the persisted cursor and sends nothing twice', async () => {
    const { fx, statePath, agent } = await setup({ batchSize: 2 });
    const first = (await run(agent, { mode: 'backfill', max_rows: 4 })).json();
    expect(first.processed).toBe(4);
    const cursor = first.cursor_rowid;
    await agents.pop()!.close();

    const agent2 = await agentFor({ dir: path.dirname(statePath), dbPath: fx.file, statePath });
    const state = (await agent2.inject({ method: 'GET', url: '/v1/collectors/chatapp/state', headers: auth })).json();
    expect(state.cursor_rowid).toBe(cursor);
    const rest = (await run(agent2, { mode: 'backfill' })).json();
    expect(rest.status).toBe('ok');
    expect(first.submitted + rest.submitted).toBe(9);
    const docs = await stored(Object.values(fx.guids));
    expect(docs.size).toBe(9);
    for (const versions of docs.values()) expect(versions).toHaveLength(1);
  });

  it('answers 409 to a second run while one is in progress', async () => {
    const { agent } = await setup();
    const [a, b] = await Promise.all([run(agent, { mode: 'backfill' }), run(agent, { mode: 'backfill' })]);
    const codes = [a.statusCode, b.statusCode].sort();
    expect(codes).toEqual([200, 409]);
    const busy = a.statusCode === 409 ? a : b;
    expect(busy.json()).toEqual({ error: 'Collector is already running' });
  });

  it('validates input and reports a disabled module, a missing database and a gateway that is down', async () => {
    const { agent, fx, dir } = await setup();
    expect((await run(agent, { mode: 'everything' })).statusCode).toBe(400);
    expect((await run(agent, { mode: 'everything' })).json().error).toBe("Invalid mode: must be 'tail' or 'backfill'");
    expect((await run(agent, { batch_size: 0 })).statusCode).toBe(400);
    expect((await run(agent, { max_rows: 'ten' })).statusCode).toBe(400);
    expect((await run(agent, [1, 2])).statusCode).toBe(400);

    const off = await agentFor({ dir, dbPath: fx.file, statePath: path.join(dir, 'off.json'), enabled: false });
    const r503 = await run(off, { mode: 'tail' });
    expect(r503.statusCode).toBe(503);
    expect(r503.json()).toEqual({ error: 'iMessage collector module is disabled' });
    expect((await off.inject({ method: 'GET', url: '/v1/collectors/chatapp/state', headers: auth })).statusCode).toBe(503);

    const missing = await agentFor({ dir, dbPath: path.join(dir, 'nope', 'chat.db'), statePath: path.join(dir, 'missing.json') });
    const r500 = await run(missing, { mode: 'backfill' });
    expect(r500.statusCode).toBe(500);
    expect(r500.json().error).toMatch(/^Collection failed: /);
    const st = (await missing.inject({ method: 'GET', url: '/v1/collectors/chatapp/state', headers: auth })).json();
    expect(st.last_error).toBeTruthy();

    // A port nobody listens on: the client retries (0.5 s, 1 s), the run stops, the cursor stays.
    const port = await freePort();
    const downState = path.join(dir, 'down.json');
    const down = await agentFor({ dir, dbPath: fx.file, statePath: downState, gatewayUrl: `http://127.0.0.1:${port}` });
    const r502 = await run(down, { mode: 'backfill', batch: true });
    expect(r502.statusCode).toBe(502);
    expect(r502.json()).toMatchObject({ status: 'error', submitted: 0, cursor_rowid: 0 });
    // Same state with the gateway up: everything arrives.
    const up = await agentFor({ dir, dbPath: fx.file, statePath: downState });
    expect((await run(up, { mode: 'backfill', batch: true })).json()).toMatchObject({ status: 'ok', submitted: 9 });
  });

  it('OCRs an image attachment that exists on disk when ocr_enabled', async () => {
    const engine = createOcrEngine();
    try {
      const dir = tempDir();
      const fx = buildFixture(dir, 'ventura');
      const img = path.join(dir, 'Attachments', 'receipt.png');
      fs.mkdirSync(path.dirname(img), { recursive: true });
      fs.writeFileSync(img, await renderTextImage('Parking permit 7731'));
      const m = fx.builder.addMessage({
        chatId: fx.chats.alice,
        handleId: fx.handles.alice,
        text: 'my permit',
        date: at(40),
        attachments: [{ filename: img, mimeType: 'image/png', uti: 'public.png', totalBytes: fs.statSync(img).size }],
      });
      const agent = await agentFor({ dir, dbPath: fx.file, statePath: path.join(dir, 's.json'), ocr: true, engine });
      const res = await run(agent, { mode: 'backfill', batch: true });
      expect(res.statusCode).toBe(200);
      const doc = (await stored([m.guid])).get(`chatapp:${m.guid}`)![0];
      const entry = doc.metadata.attachments[0];
      expect(entry.ocr.text).toMatch(/Parking permit 7731/);
      expect(entry.ocr.language).toBe('en');
      expect(entry.ocr.confidence).toBeGreaterThan(0.5);
      // The HEIC in the fixture does not exist on disk: no OCR, no failure.
      const photo = (await stored([fx.guids.photo])).get(`chatapp:${fx.guids.photo}`)![0];
      expect(photo.metadata.attachments[0].ocr).toBeUndefined();
    } finally {
      await engine.close();
    }
  }, 60_000);
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const p = (s.address() as net.AddressInfo).port;
      s.close(() => resolve(p));
    });
    s.on('error', reject);
  });
}
