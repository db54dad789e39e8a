/**
 * The local (.emlx) collector end to end: agent routes -> parse -> redact -> submit to a LIVE gateway
 * (documents land in the real catalog); attachment uploads go to a recorder that parses the multipart
 * request (POST /v1/ingest/file is built on another branch). Covers nested mailboxes and .partial.emlx,
 * an unreadable file as one warning, nothing twice on a second run, a rejected message retried on the
 * next run, the lock file (423) and a concurrent run (409), the spec's 4xx answers and the metrics.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentServer } from '../../src/agent/server.ts';
import { rejectedLogFile } from '../../src/agent/collectors/email/run-state.ts';
import { auth, agentWith, mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from './helpers.ts';
import { bigMessage, emlx, simpleMessage, standardTree, writeTree } from './fixtures.ts';

let live: LiveGateway;
let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;

beforeAll(async () => {
  live = await startLiveGateway();
  recorder = await startUploadRecorder();
});
afterAll(async () => {
  await recorder?.close();
  await live?.close();
});

async function run(app: AgentServer, body: unknown) {
  const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: body as object });
  return { status: res.statusCode, json: res.json() as any };
}

async function catalogDocs(sourceIdLike = 'email:%') {
  const r = await live.gw.db.query<{ source_id: string; text: string; title: string; thread_id: string | null; metadata: any; people: any; content_timestamp: any; version_number: number }>(
    `SELECT s.source_id, d.text, d.title, d.thread_id, d.metadata, d.people, d.content_timestamp, d.version_number
       FROM documents d JOIN ingest_submissions s ON s.result_doc_id = d.doc_id
      WHERE d.is_active_version AND s.source_id LIKE $1 ORDER BY s.source_id`,
    [sourceIdLike],
  );
  const by = new Map<string, (typeof r.rows)[number]>();
  for (const row of r.rows) by.set(row.source_id, row);
  return [...by.values()];
}

describe('POST /v1/collectors/email_local:run (simulate mode) against a live gateway', () => {
  let root: string;
  let stateDir: string;
  let app: AgentServer;

  beforeAll(async () => {
    root = tmpDir('memex-mail-');
    stateDir = tmpDir('memex-mail-state-');
    writeTree(root, standardTree());
    const config = mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }] }, live.url);
    app = await agentWith(config, splitGatewayClient(live.url, recorder.url));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('first run: every .emlx (nested folders, .partial.emlx, upper-case extension) is collected; the truncated file is one warning', async () => {
    const { status, json } = await run(app, { mode: 'simulate', limit: 100, simulate_path: root });
    expect(status).toBe(200);
    expect(json.status).toBe('partial');
    expect(json.mode).toBe('simulate');
    expect(json.simulate_path).toBe(root);
    expect(json.warnings).toHaveLength(1);
    expect(json.warnings[0]).toMatch(/^Failed to parse 6\.emlx: Truncated \.emlx file/);
    expect(json.stats).toMatchObject({
      files_found: 11,
      messages_processed: 10,
      documents_created: 10,
      errors_encountered: 1,
      attachments_processed: 2,
      // 20.emlx repeats 10.emlx: built, but not sent a second time.
      documents_skipped_already_accepted: 1,
      documents_submitted: 9,
      documents_accepted: 9,
      documents_rejected: 0,
      attachments_uploaded: 2,
    });
    expect(Date.parse(json.stats.end_time)).toBeGreaterThanOrEqual(Date.parse(json.stats.start_time));

    const docs = await catalogDocs();
    expect(docs).toHaveLength(9);
    const ids = docs.map((d) => d.source_id);
    // Duplicate Message-ID with different content: two documents, not one overwritten by the other.
    const dup = ids.filter((i) => i.startsWith('email:same-id@robot.example.net'));
    expect(dup).toHaveLength(2);
    const texts = docs.filter((d) => d.source_id.startsWith('email:same-id')).map((d) => d.text).sort();
    expect(texts).toEqual(['Nightly report: 12 jobs succeeded.', 'Nightly report: 3 jobs failed.']);

    const reply = docs.find((d) => d.source_id === 'email:reply-2@example.org')!;
    // The gateway is on this machine and nothing sets redact_pii: the text is stored as written (issue 30).
    // The whole body (issue 40): signature, attribution and quote kept, marked as parts.
    expect(reply.text).toBe(
      'Thanks Alice, Tuesday works. My number is 617-867-5309.\n\n--\nJane Doe\nHead of Finance\n\n' +
        'On Sun, 19 Nov 2023 at 10:00, Alice Smith <alice@example.com> wrote:\n> Can we meet on Tuesday about the budget?\n> Alice',
    );
    expect(reply.metadata.body_parts.map((p: any) => p.kind)).toEqual(['signature', 'attribution', 'quote']);
    expect(reply.thread_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(reply.metadata.mailbox).toBe('Work/Projects');
    expect(new Date(reply.content_timestamp).toISOString()).toBe('2023-11-19T23:05:00.000Z');
    expect(reply.people.map((p: any) => [p.identifier, p.role])).toContainEqual(['alice@example.com', 'recipient']);
    const sj = docs.find((d) => d.source_id === 'email:sjis-1@example.jp')!;
    expect(sj.text).toBe('こんにちは、会議は明日です');
    const partial = docs.find((d) => d.source_id === 'email:receipt-77@shop.example.com')!;
    expect(partial.metadata.attachment_count).toBe(2);

    // Attachment uploads: real multipart requests with the §2.6 meta and the email-attachment key.
    const pdf = recorder.uploads.find((u) => u.meta.filename === 'receipt.pdf')!;
    expect(pdf.headers['idempotency-key']).toBe(`email-attachment:receipt-77@shop.example.com:${pdf.meta.sha256}`);
    expect(pdf.headers.authorization).toMatch(/^Bearer /);
    expect(pdf.contentType).toBe('application/pdf');
    expect(pdf.data.subarray(0, 8).toString()).toBe('%PDF-1.4');
    expect(pdf.meta).toMatchObject({ source: 'email_local', message_id: 'receipt-77@shop.example.com', size: pdf.data.length, mime_type: 'application/pdf' });
  });

  it('second run submits nothing new; the state shows accepted entries', async () => {
    const before = (await catalogDocs()).length;
    const uploadsBefore = recorder.uploads.length;
    const { status, json } = await run(app, { simulate_path: root });
    expect(status).toBe(200);
    expect(json.stats.documents_submitted).toBe(0);
    expect(json.stats.files_skipped_unchanged).toBe(10);
    expect((await catalogDocs()).length).toBe(before);
    expect(recorder.uploads.length).toBe(uploadsBefore);

    const state = await app.inject({ method: 'GET', url: '/v1/collectors/email_local/state', headers: auth });
    const s = state.json();
    expect(s.is_running).toBe(false);
    expect(s.status).toBe('partial'); // the truncated file is still unreadable
    expect(s.last_run_stats.documents_submitted).toBe(0);
    expect(s.run_state.accepted_count).toBe(9);
  });

  it('a new message dropped into a mailbox is the only thing the next run sends', async () => {
    const p = path.join(root, 'V10/ACCOUNT-1/INBOX.mbox/UUID-A/Data/Messages/7.emlx');
    fs.writeFileSync(p, emlx(simpleMessage(7)));
    const { json } = await run(app, { simulate_path: root });
    expect(json.stats.documents_submitted).toBe(1);
    expect(json.stats.documents_accepted).toBe(1);
    expect((await catalogDocs('email:msg-7@%')).length).toBe(1);
  });

  it('metrics count found, submitted and accepted messages per mailbox', async () => {
    const m = (await app.inject({ method: 'GET', url: '/v1/metrics', headers: auth })).body;
    // Archive.mbox sorts first, so its copy of the budget message is the one sent; Work/Projects sends 3 of 4.
    expect(m).toMatch(/email_local_submitted_total\{mailbox="Work\/Projects"\} 3\n/);
    expect(m).toMatch(/email_local_submitted_total\{mailbox="Archive"\} 1\n/);
    // INBOX: 6 files, then the unreadable 6.emlx again in each later run, plus 7.emlx: 6 + 1 + 2.
    expect(m).toMatch(/email_local_found_total\{mailbox="INBOX"\} 9\n/);
    expect(m).toMatch(/email_local_accepted_total\{mailbox="INBOX",duplicate="false"\} \d+/);
    expect(m).toMatch(/email_local_submission_latency_ms_count\{mailbox="INBOX"\} \d+/);
  });
});

describe('rejections, retries and the rejected log', () => {
  it('messages rejected by the gateway (wrong token, 403) are logged and retried by the next run, which succeeds', async () => {
    const root = tmpDir('memex-mail-rej-');
    const stateDir = tmpDir('memex-mail-rej-state-');
    writeTree(root, [1, 2, 3].map((n) => ({ rel: `Box.mbox/Messages/${n}.emlx`, bytes: emlx(simpleMessage(100 + n)) })));
    const cfg = mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }] }, live.url);
    const bad = await agentWith(cfg, splitGatewayClient(live.url, recorder.url, 'wrong-token'));
    const first = await run(bad, { simulate_path: root });
    await bad.close();
    expect(first.status).toBe(200);
    expect(first.json.status).toBe('failed');
    expect(first.json.stats).toMatchObject({ documents_submitted: 3, documents_rejected: 3, documents_accepted: 0 });
    const logFile = rejectedLogFile(path.join(stateDir, 'rejected.log'), new Date());
    const lines = fs.readFileSync(logFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatchObject({ attempts: 1, lastServerResponse: { status: 403 } });
    expect(lines[0].idempotencyKey).toMatch(/^[0-9a-f]{64}$/);
    expect(lines[0]).not.toHaveProperty('text');
    expect((await catalogDocs('email:msg-10%')).length).toBe(0);

    const good = await agentWith(cfg, splitGatewayClient(live.url, recorder.url));
    const second = await run(good, { simulate_path: root });
    expect(second.json.status).toBe('completed');
    expect(second.json.stats).toMatchObject({ documents_submitted: 3, documents_accepted: 3 });
    const st = (await good.inject({ method: 'GET', url: '/v1/collectors/email_local/state', headers: auth })).json();
    // clear_on_new_run keeps non-accepted entries across runs, so attempts add up: 1 rejected + 1 accepted.
    expect(st.run_state.entries.map((e: any) => [e.status, e.attempts])).toEqual([['accepted', 2], ['accepted', 2], ['accepted', 2]]);
    expect((await catalogDocs('email:msg-10%')).length).toBe(3);
    await good.close();
  });

  it('an unreachable gateway leaves messages "submitted" for the next run (not rejected)', async () => {
    const root = tmpDir('memex-mail-down-');
    const stateDir = tmpDir('memex-mail-down-state-');
    writeTree(root, [{ rel: 'Box.mbox/Messages/1.emlx', bytes: emlx(simpleMessage(201)) }]);
    const cfg = mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }] }, live.url);
    const down = await agentWith(cfg, splitGatewayClient('http://127.0.0.1:9', recorder.url));
    const first = await run(down, { simulate_path: root });
    await down.close();
    expect(first.json.stats.documents_retry_later).toBe(1);
    const st = JSON.parse(fs.readFileSync(path.join(stateDir, 'state.json'), 'utf8'));
    const entry = Object.values(st.entries)[0] as any;
    expect(entry.status).toBe('submitted');
    expect(entry.last_error).toMatch(/Exceeded retry attempts/);
    const up = await agentWith(cfg, splitGatewayClient(live.url, recorder.url));
    const second = await run(up, { simulate_path: root });
    expect(second.json.stats.documents_accepted).toBe(1);
    await up.close();
  });
});

describe('errors, lock and limits', () => {
  let root: string;
  let stateDir: string;
  let app: AgentServer;
  beforeAll(async () => {
    root = tmpDir('memex-mail-err-');
    stateDir = tmpDir('memex-mail-err-state-');
    writeTree(root, Array.from({ length: 30 }, (_, i) => ({ rel: `Box.mbox/Messages/${i}.emlx`, bytes: emlx(simpleMessage(300 + i)) })));
    fs.mkdirSync(path.join(root, 'empty'));
    app = await agentWith(mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }] }, live.url), splitGatewayClient(live.url, recorder.url));
  });
  afterAll(async () => {
    await app?.close();
  });

  it('answers 400 / 404 / 501 / 403 as the spec table says', async () => {
    expect((await run(app, { mode: 'bogus', simulate_path: root })).status).toBe(400);
    expect((await run(app, { limit: 0, simulate_path: root })).status).toBe(400);
    expect((await run(app, { limit: 10001, simulate_path: root })).status).toBe(400);
    expect((await run(app, { mode: 'simulate' })).json.error).toMatch(/simulate_path is required/);
    const bad = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: { ...auth, 'content-type': 'application/json' }, payload: '{"mode":' });
    expect(bad.statusCode).toBe(400);
    const missing = await run(app, { simulate_path: path.join(root, 'nope') });
    expect(missing.status).toBe(404);
    expect(missing.json.error).toMatch(/No file or directory found/);
    const empty = await run(app, { simulate_path: path.join(root, 'empty') });
    expect(empty.status).toBe(404);
    expect(empty.json.error).toMatch(/No \.emlx files found/);
    expect((await run(app, { mode: 'real' })).status).toBe(501);
    const outside = await run(app, { simulate_path: os.tmpdir() });
    expect(outside.status).toBe(403);
    const st = (await app.inject({ method: 'GET', url: '/v1/collectors/email_local/state', headers: auth })).json();
    expect(st.status).toBe('failed');
    expect(st.last_run_error).toMatch(/outside the configured mail roots/);
  });

  it('limit caps the messages handled per run; the next run continues with the rest', async () => {
    const a = await run(app, { simulate_path: root, limit: 12 });
    expect(a.json.stats.messages_processed).toBe(12);
    const b = await run(app, { simulate_path: root, limit: 100 });
    expect(b.json.stats.messages_processed).toBe(18);
    expect(b.json.stats.files_skipped_unchanged).toBe(12);
  });

  it('409 while a run is in progress', async () => {
    fs.writeFileSync(path.join(root, 'Box.mbox/Messages/big.emlx'), emlx(simpleMessage(399)));
    const [x, y] = await Promise.all([run(app, { simulate_path: root }), run(app, { simulate_path: root })]);
    expect([x.status, y.status].sort()).toEqual([200, 409]);
    expect((x.status === 409 ? x : y).json.error).toBe('Collector is already running');
  });

  it('423 while another live process holds the lock file; a stale lock of a dead process is taken over', async () => {
    const lock = path.join(stateDir, 'collector.lock');
    fs.writeFileSync(lock, JSON.stringify({ pid: process.ppid, host: os.hostname(), started_at: new Date().toISOString() }));
    const held = await run(app, { simulate_path: root });
    expect(held.status).toBe(423);
    expect(held.json.error).toMatch(/^Email collector lock unavailable: .* held by process \d+/);
    fs.writeFileSync(lock, JSON.stringify({ pid: 2 ** 22 + 12345, host: os.hostname() }));
    const stale = await run(app, { simulate_path: root });
    expect(stale.status).toBe(200);
    expect(fs.existsSync(lock)).toBe(false); // released after the run
  });

  it('503 when the mail module is disabled', async () => {
    const off = await agentWith(mailConfig(stateDir, { enabled: false }), splitGatewayClient(live.url, recorder.url));
    const r = await run(off, { simulate_path: root });
    expect(r.status).toBe(503);
    expect(r.json.error).toBe('Email collector module is disabled');
    await off.close();
  });
});

describe('a 20 MB message', () => {
  it('is parsed and submitted; its large attachment is uploaded when under the limit, skipped with a warning otherwise', async () => {
    const root = tmpDir('memex-mail-big-');
    const stateDir = tmpDir('memex-mail-big-state-');
    writeTree(root, [{ rel: 'Big.mbox/Messages/1.emlx', bytes: emlx(bigMessage()) }]);
    const app = await agentWith(
      mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }], max_attachment_bytes: 10 * 1024 * 1024 }, live.url),
      splitGatewayClient(live.url, recorder.url),
    );
    const { json } = await run(app, { simulate_path: root });
    await app.close();
    expect(json.status).toBe('completed');
    expect(json.stats.documents_accepted).toBe(1);
    expect(json.warnings).toEqual([expect.stringMatching(/^Attachment not uploaded from 1\.emlx: archive\.bin \(\d+ bytes > 10485760\)/)]);
    const docs = await catalogDocs('email:big-1@%');
    expect(docs[0].text).toBe('The scanned archive is attached.');
    expect(docs[0].metadata.attachments[0]).toMatchObject({ index: 0, kind: 'file', role: 'attachment', filename: 'archive.bin', size_bytes: 15728640 });
  });
});

describe('batch submission (modules.mail.batch_size > 1 uses POST /v1/ingest:batch)', () => {
  it('sends batches, maps per-item results, and a second run sends nothing', async () => {
    const root = tmpDir('memex-mail-batch-');
    const stateDir = tmpDir('memex-mail-batch-state-');
    writeTree(root, [
      ...Array.from({ length: 25 }, (_, i) => ({ rel: `Box.mbox/Messages/${i}.emlx`, bytes: emlx(simpleMessage(600 + i)) })),
      { rel: 'Box.mbox/Messages/zz.emlx', bytes: emlx(simpleMessage(600)) }, // same message again: not resent
      // A copy read while its message still waits in the same batch: unchanged next run all the same.
      { rel: 'Box.mbox/Messages/0a.emlx', bytes: emlx(simpleMessage(600)) },
    ]);
    const app = await agentWith(
      mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }], batch_size: 10, submit_concurrency: 2 }, live.url),
      splitGatewayClient(live.url, recorder.url),
    );
    const first = await run(app, { simulate_path: root });
    expect(first.json.status).toBe('completed');
    expect(first.json.stats).toMatchObject({ documents_submitted: 25, documents_accepted: 25, documents_duplicate: 0, documents_skipped_already_accepted: 2 });
    const docs = await catalogDocs('email:msg-6__@example.org');
    expect(docs).toHaveLength(25);
    const batches = await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM ingest_batches`);
    expect(batches.rows[0].n).toBeGreaterThanOrEqual(3);
    const second = await run(app, { simulate_path: root });
    expect(second.json.stats.documents_submitted).toBe(0);
    expect(second.json.stats).toMatchObject({ files_found: 27, files_skipped_unchanged: 27, messages_processed: 0 });
    await app.close();
  });
});
