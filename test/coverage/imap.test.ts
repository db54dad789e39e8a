/**
 * Coverage of the IMAP collector against a REAL Dovecot and a live gateway: one source per account and folder,
 * its UIDs under their UIDVALIDITY. A run counts every message of the folder (an unparsable one missing with
 * its reason, a copy a duplicate, a blocked sender's message skipped as blocked, not missing); after the folder
 * is deleted and recreated (a new UIDVALIDITY), a recount reports the drift without importing anything, and
 * the next run says which UIDVALIDITY it replaced.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapFlow } from 'imapflow';
import type { AgentServer } from '../../src/agent/server.ts';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from '../helpers/dovecot.ts';
import { auth, agentWith, mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';
import { simpleMessage } from '../email-collectors/fixtures.ts';

const unavailable = dovecotUnavailableReason();
if (unavailable) console.warn(`[imap coverage tests] SKIPPED: ${unavailable}`);

const GARBAGE = '\u0000\u0001\u0002 not a mail message \u0003';
const offer = (n: number) => simpleMessage(n, { domain: 'offers.example' }).replace(`sender${n}@offers.example`, 'deals@offers.example');

describe.skipIf(unavailable !== null)(`coverage of the IMAP collector (real Dovecot, live gateway)${unavailable ? ` — skipped: ${unavailable}` : ''}`, () => {
  let dovecot: DovecotServer;
  let live: LiveGateway;
  let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;
  let app: AgentServer;

  beforeAll(async () => {
    dovecot = await startDovecot({
      users: [{ user: 'carol', password: 'cov-pass-1' }],
      maildirs: { carol: { INBOX: [offer(8149)], Archive: [simpleMessage(8101), simpleMessage(8102), GARBAGE, simpleMessage(8101), offer(8150), simpleMessage(8103)] } },
    });
    live = await startLiveGateway();
    recorder = await startUploadRecorder();
    process.env.MEMEX_TEST_COV_IMAP_PASSWORD = 'cov-pass-1';
    const cfg = mailConfig(tmpDir('memex-cov-imap-'), {
      sources: [
        { id: 'carol-mail', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'carol', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_COV_IMAP_PASSWORD' }, folders: ['Archive'] },
        { id: 'carol-inbox', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'carol', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_COV_IMAP_PASSWORD' }, folders: ['INBOX'] },
      ],
    }, live.url);
    app = await agentWith(cfg, splitGatewayClient(live.url, recorder.url));
  }, 60_000);
  afterAll(async () => {
    delete process.env.MEMEX_TEST_COV_IMAP_PASSWORD;
    await app?.close();
    await recorder?.close();
    await live?.close();
    await dovecot?.stop();
  });

  const run = async (body: object = {}) => {
    const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_imap:run', headers: auth, payload: { account_id: 'carol-mail', ...body } });
    expect(res.statusCode).toBe(200);
    return res.json();
  };
  const coverage = async () => {
    const sources = (await live.gw.request('GET', '/v1/coverage?source=email_imap')).json().sources.filter((s: any) => s.source_ref === 'Archive');
    expect(sources).toHaveLength(1);
    return sources[0];
  };

  it('a run records the folder under its UIDVALIDITY: stored, a copy, a blocked sender skipped, an unparsable message missing', async () => {
    // An offer arrived in the inbox earlier; the person forgets its sender and blocks them.
    await run({ account_id: 'carol-inbox' });
    const forgot = await live.gw.request('POST', '/v1/forget', { identifier: 'deals@offers.example', block: true });
    expect(forgot.statusCode).toBe(200);
    const first = await run();
    expect(first.coverage).toEqual({ in_source: 6, stored: { new: 3, unchanged: 0, updated: 0 }, skipped: { duplicate: 1, blocked: 1 }, failed: 1, pending: 0 });
    const cov = await coverage();
    expect(cov).toMatchObject({
      collector: 'email_imap',
      source_type: 'email',
      source_account_id: 'carol-mail',
      source_ref: 'Archive',
      in_source: 6,
      stored: 3,
      skipped_by_reason: { duplicate: 1, blocked: 1 },
      failed: 1,
      pending: 0,
      cursor: { uidvalidity: first.uidValidity, uid_max: 6, messages: 6 },
      missing: [{ ref: `Archive;UIDVALIDITY=${first.uidValidity};UID=3`, state: 'failed', reason_code: 'unparsable' }],
      missing_total: 1,
      reconcile: { in_source: 6, drift: 0, in_sync: true, facts: { uidvalidity: first.uidValidity, uidvalidity_changed: false } },
    });

    // The next run fetches only what is not stored yet; the rest counts as it was.
    const second = await run();
    expect(second.coverage).toEqual({ in_source: 6, stored: { new: 0, unchanged: 3, updated: 0 }, skipped: { duplicate: 1, blocked: 1 }, failed: 1, pending: 0 });
  });

  it('after a UIDVALIDITY change a recount reports the drift without importing; the next run names the old UIDVALIDITY', async () => {
    const before = await coverage();
    const oldValidity = before.cursor.uidvalidity;
    const client = new ImapFlow({ host: dovecot.host, port: dovecot.port, secure: false, auth: { user: 'carol', pass: 'cov-pass-1' }, logger: false });
    await client.connect();
    // The folder deleted and recreated: the server gives it a new UIDVALIDITY.
    await client.mailboxDelete('Archive');
    await client.mailboxCreate('Archive');
    await client.append('Archive', simpleMessage(8101));
    await client.append('Archive', simpleMessage(8104));
    await client.logout();
    const docsBefore = (await live.gw.db.query(`SELECT count(*)::int AS n FROM documents`)).rows[0] as { n: number };

    const res = await app.inject({ method: 'POST', url: '/v1/coverage:reconcile', headers: auth, payload: { collector: 'email_imap' } });
    const outcomes = res.json().sources.filter((s: any) => s.source_ref === 'Archive');
    expect(res.statusCode).toBe(200);
    expect(outcomes).toHaveLength(1);
    const [outcome] = outcomes;
    expect(outcome).toMatchObject({ source_ref: 'Archive', error: null });
    const rec = outcome.reconcile;
    expect(rec.facts.uidvalidity).not.toBe(oldValidity);
    expect(rec).toMatchObject({
      in_source: 2,
      recorded_in_source: 6,
      drift: -4,
      added: 2,
      removed: 6,
      in_sync: false,
      facts: { previous_uidvalidity: oldValidity, uidvalidity_changed: true, messages: 2 },
    });
    expect(rec.notes.join(' ')).toMatch(/UIDVALIDITY of Archive changed/);
    expect(await coverage()).toMatchObject({ in_source: 6, reconcile: { drift: -4, facts: { uidvalidity_changed: true } } });
    // Nothing was imported by the recount.
    expect((await live.gw.db.query(`SELECT count(*)::int AS n FROM documents`)).rows[0]).toEqual(docsBefore);

    const again = await run();
    expect(again).toMatchObject({ uidValidityChanged: true, previousUidValidity: oldValidity });
    expect(again.coverage).toEqual({ in_source: 2, stored: { new: 1, unchanged: 1, updated: 0 }, skipped: {}, failed: 0, pending: 0 });
    expect(await coverage()).toMatchObject({ in_source: 2, stored: 2, missing_total: 0, cursor: { previous_uidvalidity: oldValidity, messages: 2 }, reconcile: { in_sync: true } });
  });
});
