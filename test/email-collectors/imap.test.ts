/**
 * The IMAP collector against a REAL Dovecot (test/helpers/dovecot.ts: throwaway config, passwd-file user,
 * Maildir seeded from fixtures, XOAUTH2 through Dovecot's oauth2 passdb) and a LIVE gateway.
 * Covers: app password from env://, XOAUTH2 with a token Dovecot accepts (inline secret), results and
 * duplicates, a second run (in-memory state), a bad message that does not stop the run, since/before,
 * dry_run, a UIDVALIDITY change (mailbox deleted and recreated), and the 400/401 answers.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapFlow } from 'imapflow';
import type { AgentServer } from '../../src/agent/server.ts';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from '../helpers/dovecot.ts';
import { auth, agentWith, mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from './helpers.ts';
import { ALTERNATIVE, CRLF, DUP_ID_A, LATIN1, REPLY, SHIFT_JIS, simpleMessage } from './fixtures.ts';

const unavailable = dovecotUnavailableReason();
if (unavailable) console.warn(`[imap collector tests] SKIPPED: ${unavailable}`);

const GARBAGE = '\u0000\u0001\u0002 this is not a mail message at all \u0003';
const OLD = CRLF(`From: old@example.org
To: bob@example.org
Subject: From last year
Date: Mon, 02 Jan 2023 10:00:00 +0000
Message-ID: <old-1@example.org>

An old message.
`);

describe.skipIf(unavailable !== null)(`POST /v1/collectors/email_imap:run (real Dovecot, live gateway)${unavailable ? ` — skipped: ${unavailable}` : ''}`, () => {
  let dovecot: DovecotServer;
  let live: LiveGateway;
  let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;
  let app: AgentServer;
  const env = process.env;

  beforeAll(async () => {
    dovecot = await startDovecot({
      users: [{ user: 'bob', password: 'app-pass-123', xoauth2: { token: 'ya29.bob-token' } }],
      maildirs: {
        bob: {
          INBOX: [
            { raw: ALTERNATIVE, internalDate: new Date('2023-11-14T17:12:00Z') },
            { raw: LATIN1, internalDate: new Date('2023-11-15T17:30:00Z') },
            { raw: SHIFT_JIS, internalDate: new Date('2023-11-16T01:00:00Z') },
            { raw: GARBAGE, internalDate: new Date('2023-11-17T00:00:00Z') },
            { raw: REPLY, internalDate: new Date('2023-11-19T23:05:00Z') },
            // The same message twice in the folder (a copy): one document, the second a duplicate.
            { raw: DUP_ID_A, internalDate: new Date('2023-11-21T02:00:00Z') },
            { raw: DUP_ID_A, internalDate: new Date('2023-11-21T02:00:01Z') },
            { raw: OLD, internalDate: new Date('2023-01-02T10:00:00Z') },
          ],
          Work: [simpleMessage(1), simpleMessage(2)],
        },
      },
    });
    live = await startLiveGateway();
    recorder = await startUploadRecorder();
    process.env.MEMEX_TEST_IMAP_PASSWORD = 'app-pass-123';
    const cfg = mailConfig(tmpDir('memex-imap-state-'), {
      sources: [
        { id: 'dove', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'bob', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_IMAP_PASSWORD' }, folders: ['INBOX'] },
        { id: 'dove-oauth', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'bob', auth: { kind: 'xoauth2' }, folders: ['Work'] },
        { id: 'dove-wrong', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'bob', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_UNSET_VARIABLE' } },
        { id: 'dove-tls', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, username: 'bob', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_IMAP_PASSWORD' } },
      ],
    }, live.url);
    app = await agentWith(cfg, splitGatewayClient(live.url, recorder.url));
  }, 60_000);
  afterAll(async () => {
    delete env.MEMEX_TEST_IMAP_PASSWORD;
    await app?.close();
    await recorder?.close();
    await live?.close();
    await dovecot?.stop();
  });

  async function run(body: unknown) {
    const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_imap:run', headers: auth, payload: body as object });
    return { status: res.statusCode, json: res.json() as any };
  }

  it('dry run lists what would be sent and sends nothing', async () => {
    const { status, json } = await run({ account_id: 'dove', dry_run: true });
    expect(status).toBe(200);
    expect(json.dryRun).toBe(true);
    expect(json.totalFound).toBe(8);
    expect(json.submitted).toBe(0);
    expect(json.results.filter((r: any) => r.status === 'dry_run')).toHaveLength(6);
    const docs = await live.gw.db.query(`SELECT 1 FROM ingest_submissions WHERE source_id LIKE 'email_imap/%'`);
    expect(docs.rows).toHaveLength(0);
  });

  it('collects a folder with an app password from env://; a bad message is an error entry and the run goes on', async () => {
    const { status, json } = await run({ account_id: 'dove' });
    expect(status).toBe(200);
    expect(json).toMatchObject({ accountId: 'dove', folder: 'INBOX', totalFound: 8, processed: 8, dryRun: false, uidValidityChanged: false });
    expect(json.uidValidity).toMatch(/^\d+$/);
    // UID 4 is garbage: one error entry; the messages after it were still collected.
    expect(json.errors).toEqual([{ uid: 4, reason: expect.stringMatching(/^unparsable message/) }]);
    const byUid = new Map(json.results.map((r: any) => [r.uid, r]));
    // status mirrors the gateway's submission status.
    expect(byUid.get(5)).toMatchObject({ messageId: 'reply-2@example.org', status: 'cataloged', duplicate: false });
    expect((byUid.get(5) as any).docId).toMatch(/^[0-9a-f-]{36}$/);
    // UID 7 repeats UID 6 (same Message-ID, same text): reported as a duplicate.
    expect(byUid.get(7)).toMatchObject({ messageId: 'same-id@robot.example.net', status: 'duplicate', duplicate: true });
    expect(json.submitted).toBe(6);
    const rows = await live.gw.db.query<{ source_id: string; text: string; content_timestamp: Date }>(
      `SELECT s.source_id, d.text, d.content_timestamp FROM ingest_submissions s JOIN documents d ON d.doc_id = s.result_doc_id WHERE s.source_id LIKE 'email_imap/dove:%' ORDER BY 1`,
    );
    expect(rows.rows.map((r) => r.source_id)).toEqual([
      'email_imap/dove:latin1-1@example.de',
      'email_imap/dove:old-1@example.org',
      'email_imap/dove:reply-2@example.org',
      'email_imap/dove:same-id@robot.example.net',
      'email_imap/dove:sjis-1@example.jp',
      'email_imap/dove:stmt-2023-11@power-company.example',
    ]);
    expect(rows.rows.find((r) => r.source_id.endsWith('sjis-1@example.jp'))!.text).toBe('こんにちは、会議は明日です');
  });

  it('a second run skips what this agent already collected (in-memory state) and sends nothing', async () => {
    const before = (await live.gw.db.query(`SELECT count(*)::int AS n FROM ingest_submissions`)).rows[0] as { n: number };
    const { json } = await run({ account_id: 'dove' });
    expect(json.totalFound).toBe(8);
    expect(json.skippedKnown).toBe(7); // all but the unparsable UID 4
    expect(json.processed).toBe(1);
    expect(json.submitted).toBe(0);
    expect(json.errors).toEqual([{ uid: 4, reason: expect.stringMatching(/^unparsable/) }]);
    const after = (await live.gw.db.query(`SELECT count(*)::int AS n FROM ingest_submissions`)).rows[0] as { n: number };
    expect(after.n).toBe(before.n);
  });

  it('since/before select by date', async () => {
    const { json } = await run({ account_id: 'dove', dry_run: true, since: '2023-11-15T00:00:00Z', before: '2023-11-18T00:00:00Z' });
    expect(json.totalFound).toBe(3); // LATIN1, SHIFT_JIS, GARBAGE
    expect(json.since).toBe('2023-11-15T00:00:00.000Z');
  });

  it('XOAUTH2 with a bearer token Dovecot accepts (inline secret, never stored); limit applies', async () => {
    const { status, json } = await run({ account_id: 'dove-oauth', limit: 1, credentials: { kind: 'XOAUTH2', secret: 'ya29.bob-token' } });
    expect(status).toBe(200);
    expect(json).toMatchObject({ folder: 'Work', totalFound: 2, processed: 1, submitted: 1 });
    expect(json.results[0]).toMatchObject({ uid: 1, messageId: 'msg-1@example.org', duplicate: false });
    // The inline secret was for that request only: the source has no secret_ref of its own.
    const again = await run({ account_id: 'dove-oauth' });
    expect(again.status).toBe(400);
    expect(again.json.error).toMatch(/Unable to resolve IMAP credentials/);
    const badToken = await run({ account_id: 'dove-oauth', credentials: { kind: 'XOAUTH2', secret: 'ya29.stolen' } });
    expect(badToken.status).toBe(401);
  });

  it('a UIDVALIDITY change (folder deleted and recreated) is reported; messages are examined again and come back as duplicates', async () => {
    const first = await run({ account_id: 'dove-oauth', credentials: { kind: 'xoauth2', secret: 'ya29.bob-token' } });
    expect(first.json.submitted).toBe(1); // msg-2 (msg-1 was collected by the previous test)
    const client = new ImapFlow({ host: dovecot.host, port: dovecot.port, secure: false, auth: { user: 'bob', pass: 'app-pass-123' }, logger: false });
    await client.connect();
    await client.mailboxDelete('Work');
    await client.mailboxCreate('Work');
    await client.append('Work', simpleMessage(1));
    await client.append('Work', simpleMessage(2));
    await client.append('Work', simpleMessage(3));
    await client.logout();

    const { json } = await run({ account_id: 'dove-oauth', credentials: { kind: 'xoauth2', secret: 'ya29.bob-token' } });
    expect(json.uidValidityChanged).toBe(true);
    expect(json.previousUidValidity).toBe(first.json.uidValidity);
    expect(json.uidValidity).not.toBe(first.json.uidValidity);
    expect(json.skippedKnown).toBe(0);
    expect(json.processed).toBe(3);
    expect(json.results.map((r: any) => [r.messageId, r.duplicate])).toEqual([
      ['msg-1@example.org', true],
      ['msg-2@example.org', true],
      ['msg-3@example.org', false],
    ]);
  });

  it('400 for an unknown account, bad fields or an unresolvable secret; 401 for a wrong password; STARTTLS required by default', async () => {
    expect((await run({ account_id: 'nope' })).json.error).toBe('IMAP account not found');
    expect((await run({ account_id: 'nope' })).status).toBe(400);
    expect((await run({})).status).toBe(400);
    expect((await run({ account_id: 'dove', since: 'yesterday' })).status).toBe(400);
    expect((await run({ account_id: 'dove', credentials: { kind: 'kerberos', secret: 'x' } })).status).toBe(400);
    const unresolved = await run({ account_id: 'dove-wrong' });
    expect(unresolved.status).toBe(400);
    expect(unresolved.json.error).toMatch(/env:\/\/MEMEX_TEST_UNSET_VARIABLE.*not set/);
    expect(unresolved.json.error).not.toMatch(/app-pass/);
    const wrong = await run({ account_id: 'dove', credentials: { kind: 'app_password', secret: 'wrong' } });
    expect(wrong.status).toBe(401);
    // tls: false without starttls: false demands a STARTTLS upgrade; this Dovecot has none (ssl=no).
    const plain = await run({ account_id: 'dove-tls', dry_run: true });
    expect(plain.status).toBe(502);
  });

  it('400 when the mail module is disabled', async () => {
    const off = await agentWith(mailConfig(tmpDir('memex-imap-off-'), { enabled: false }), splitGatewayClient(live.url, recorder.url));
    const r = await off.inject({ method: 'POST', url: '/v1/collectors/email_imap:run', headers: auth, payload: { account_id: 'dove' } });
    expect(r.statusCode).toBe(400);
    await off.close();
  });
});
