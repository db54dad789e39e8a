/**
 * Continuous IMAP (issue 41) against a REAL Dovecot and a LIVE gateway: the agent runs its sources by itself.
 * - new mail is stored without anyone POSTing (IDLE), found by GET /v1/search;
 * - freshness in GET /v1/coverage (state, last_success_at, newest_stored …) and /metrics;
 * - flag changes, a move between configured folders and a deletion at the source land on the document;
 * - a restarted agent fetches no message body it stored already (Dovecot's own count of fetched bodies);
 * - a dropped connection (doveadm kick) and a Dovecot restart: it reconnects and goes on;
 * - a wrong password: an error in words and back-off, the other sources keep working;
 * - pause and resume through the gateway API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ImapFlow } from 'imapflow';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { imapCoverageSource } from '../../src/agent/collectors/email/imap.ts';
import type { ImapFolderSync } from '../../src/agent/collectors/email/imap-sync.ts';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from '../helpers/dovecot.ts';
import { mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';
import { CRLF } from '../email-collectors/fixtures.ts';

const unavailable = dovecotUnavailableReason();
if (unavailable) console.warn(`[imap continuous tests] SKIPPED: ${unavailable}`);

let seq = 0;
function mail(word: string, date = new Date()): string {
  seq++;
  return CRLF(`From: sender${seq}@example.org
To: dana@example.org
Subject: Note ${word}
Date: ${date.toUTCString()}
Message-ID: <${word}@example.org>

This message carries the word ${word} and nothing else of note.
`);
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined | null | false>, ms = 60_000): Promise<T> {
  const until = Date.now() + ms;
  const t0 = Date.now();
  if (process.env.MEMEX_TEST_TIMING) process.on('exit', () => undefined);
  let last: unknown;
  for (;;) {
    try {
      const v = await probe();
      if (v) {
        if (process.env.MEMEX_TEST_TIMING) console.log(`[wait] ${what}: ${Date.now() - t0} ms`);
        return v;
      }
    } catch (err) {
      last = err;
    }
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}${last ? `: ${(last as Error).message}` : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

describe.skipIf(unavailable !== null)('continuous IMAP sources (real Dovecot, live gateway)', () => {
  let dovecot: DovecotServer;
  let live: LiveGateway;
  let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;
  let app: AgentServer | undefined;
  const stateDir = tmpDir('memex-imap-cont-');
  const inbox = imapCoverageSource('dana', 'INBOX');
  const archive = imapCoverageSource('dana', 'Archive');
  const wrong = imapCoverageSource('dana-wrong', 'INBOX');

  const config = () =>
    mailConfig(
      stateDir,
      {
        sources: [
          { id: 'dana', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'dana', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_DANA_PASSWORD' }, folders: ['INBOX', 'Archive'], poll_interval: '30s' },
          { id: 'dana-wrong', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'dana', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_WRONG_PASSWORD' }, folders: ['INBOX'] },
        ],
      },
      live.url,
    );

  async function startAgent(): Promise<AgentServer> {
    const a = await createAgentServer(config(), { logger: false, gateway: splitGatewayClient(live.url, recorder.url), runSources: true, sourcesReportMs: 500 });
    await a.ready();
    return a;
  }
  const sync = (a: AgentServer, id: string) => a.agent.sources.get(id) as unknown as ImapFolderSync;

  async function coverageOf(identity: typeof inbox): Promise<any> {
    const res = await live.gw.request('GET', `/v1/coverage?source=${coverageSourceId(identity)}&missing_limit=0`);
    expect(res.statusCode).toBe(200);
    return res.json().sources[0];
  }
  async function docOf(messageId: string): Promise<any> {
    const r = await live.gw.db.query<{ doc_id: string; metadata: any; is_active_version: boolean }>(
      `SELECT doc_id, metadata, is_active_version FROM documents WHERE external_id = $1 ORDER BY version_number DESC LIMIT 1`,
      [`email_imap/dana:${messageId}`],
    );
    return r.rows[0];
  }
  async function found(word: string): Promise<boolean> {
    const res = await live.gw.request('GET', `/v1/search?${new URLSearchParams({ q: word, k: '5' })}`);
    return res.statusCode === 200 && res.json().hits.length > 0;
  }
  async function client(): Promise<ImapFlow> {
    const c = new ImapFlow({ host: dovecot.host, port: dovecot.port, secure: false, auth: { user: 'dana', pass: 'dana-pass-1' }, logger: false });
    await c.connect();
    return c;
  }

  beforeAll(async () => {
    dovecot = await startDovecot({
      users: [{ user: 'dana', password: 'dana-pass-1' }],
      maildirs: { dana: { INBOX: [...(['alpha', 'bravo', 'charlie'] as const).map((w, i) => ({ raw: mail(w, new Date(Date.UTC(2024, 0, i + 1, 10))), internalDate: new Date(Date.UTC(2024, 0, i + 1, 10)) }))], Archive: [] } },
    });
    live = await startLiveGateway();
    recorder = await startUploadRecorder();
    process.env.MEMEX_TEST_DANA_PASSWORD = 'dana-pass-1';
    process.env.MEMEX_TEST_WRONG_PASSWORD = 'not-the-password';
  }, 60_000);
  afterAll(async () => {
    delete process.env.MEMEX_TEST_DANA_PASSWORD;
    delete process.env.MEMEX_TEST_WRONG_PASSWORD;
    await app?.close();
    await recorder?.close();
    await live?.close();
    await dovecot?.stop();
  });

  it('stores the folder by itself, then new mail pushed by IDLE, and says how fresh it is', async () => {
    app = await startAgent();
    await waitFor('the three seeded messages', async () => (await docOf('charlie@example.org')) && (await docOf('alpha@example.org')));
    const cov = await waitFor('INBOX watching', async () => {
      const c = await coverageOf(inbox);
      return c?.state === 'watching' && c.last_success_at ? c : null;
    });
    expect(cov.mode).toMatch(/IDLE/);
    expect(cov.last_error).toBeNull();
    expect(cov.newest_stored).toBe('2024-01-03T10:00:00.000Z');
    expect(cov.paused).toBe(false);

    await dovecot.save('dana', 'INBOX', mail('delta'));
    await waitFor('delta found by search', () => found('delta'));
    const doc = await waitFor('delta with its folder', async () => ((await docOf('delta@example.org'))?.metadata.folder ? docOf('delta@example.org') : null));
    expect(doc.metadata.folder).toBe('INBOX');
    expect(doc.metadata.flags).toEqual([]);

    const metrics = await live.gw.request('GET', '/metrics');
    expect(metrics.body).toMatch(new RegExp(`memex_source_last_success_timestamp_seconds\\{source_id="${coverageSourceId(inbox)}"`));
    expect(metrics.body).toMatch(/memex_source_lag_seconds\{/);
  }, 120_000);

  it('a wrong password is an error in words and backs off; the other sources keep working', async () => {
    const cov = await waitFor('the wrong-password source failing', async () => {
      const c = await coverageOf(wrong);
      return c?.last_error ? c : null;
    });
    expect(cov.last_error).toBe('IMAP login refused for dana: check the app password');
    expect(cov.state).toBe('failed');
    expect(cov.next_run_at).not.toBeNull();
    expect((await coverageOf(inbox)).state).toBe('watching');
  }, 60_000);

  it('flags, a move to another configured folder and a deletion at the source are recorded on the documents', async () => {
    const c = await client();
    try {
      const lock = await c.getMailboxLock('INBOX');
      try {
        const uids = (await c.search({ all: true }, { uid: true })) as number[];
        const byId = new Map<string, number>();
        for await (const m of c.fetch(uids.join(','), { uid: true, envelope: true }, { uid: true })) byId.set(m.envelope!.messageId!.replace(/[<>]/g, ''), m.uid);
        await c.messageFlagsAdd(String(byId.get('alpha@example.org')), ['\\Seen', '\\Flagged'], { uid: true });
        await c.messageMove(String(byId.get('bravo@example.org')), 'Archive', { uid: true });
        await c.messageDelete(String(byId.get('charlie@example.org')), { uid: true });
      } finally {
        lock.release();
      }
    } finally {
      await c.logout();
    }
    await waitFor('alpha flagged', async () => JSON.stringify((await docOf('alpha@example.org')).metadata.flags) === JSON.stringify(['\\Flagged', '\\Seen']));
    await waitFor('bravo in Archive', async () => (await docOf('bravo@example.org')).metadata.folder === 'Archive');
    const charlie = await waitFor('charlie deleted at the source', async () => {
      const d = await docOf('charlie@example.org');
      return d.metadata.deleted_at_source ? d : null;
    });
    // Kept (mirror_deletions is off): still the active version, still found.
    expect(charlie.is_active_version).toBe(true);
    expect(await found('charlie')).toBe(true);
    const bravo = await docOf('bravo@example.org');
    expect(bravo.metadata.deleted_at_source ?? null).toBeNull();
    // One document for bravo, not two (the move is not a new message).
    const n = await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id = 'email_imap/dana:bravo@example.org' AND is_active_version`);
    expect(n.rows[0].n).toBe(1);
  }, 90_000);

  it('a restarted agent fetches no message body it stored already, and goes on with new mail', async () => {
    await app!.close();
    app = undefined;
    // Dovecot writes a session's fetch count when the session ends, which can trail the client's close.
    await waitFor("the first agent's sessions ended", async () => dovecot.openSessions() === 0);
    const before = dovecot.bodiesFetched();
    expect(before).toBeGreaterThanOrEqual(4); // what the first agent fetched
    app = await startAgent();
    const s = sync(app, coverageSourceId(inbox));
    await waitFor('the restarted INBOX watching', async () => s.status().state === 'watching' && s.counters.syncs > 0);
    expect(s.counters.bodiesFetched).toBe(0);
    await dovecot.save('dana', 'INBOX', mail('echo'));
    await waitFor('echo found', () => found('echo'));
    expect(s.counters.bodiesFetched).toBe(1);
    // Dovecot's count, once the sessions end: exactly the one new body since the restart.
    await app.close();
    app = undefined;
    await waitFor('the sessions logged out', async () => dovecot.openSessions() === 0);
    expect(dovecot.bodiesFetched()).toBe(before + 1);
  }, 120_000);

  it('reconnects after a dropped connection (doveadm kick) and after a Dovecot restart', async () => {
    app = await startAgent();
    const s = sync(app, coverageSourceId(inbox));
    await waitFor('watching', async () => s.status().state === 'watching');
    const connects = s.counters.connects;
    await dovecot.kick('dana');
    await waitFor('a new connection after the kick', async () => s.counters.connects > connects && s.status().state === 'watching');
    await dovecot.save('dana', 'INBOX', mail('foxtrot'));
    await waitFor('foxtrot found', () => found('foxtrot'));

    await dovecot.restart();
    await dovecot.save('dana', 'INBOX', mail('golf'));
    await waitFor('golf found after the restart', () => found('golf'), 90_000);
    await waitFor('watching after the restart', async () => s.status().state === 'watching');
    // A restart ends every session: the other folder's source reconnects too.
    const other = sync(app, coverageSourceId(archive));
    await waitFor('Archive watching after the restart', async () => other.status().state === 'watching', 90_000);
  }, 180_000);

  it('pause and resume through the gateway API', async () => {
    const id = coverageSourceId(inbox);
    const paused = await live.gw.request('POST', `/v1/sources/${id}/pause`);
    expect(paused.statusCode).toBe(200);
    expect(paused.json()).toMatchObject({ source_id: id, paused: true });
    await waitFor('INBOX paused', async () => (await coverageOf(inbox)).state === 'paused');
    await dovecot.save('dana', 'INBOX', mail('hotel'));
    // A message delivered after it into the folder still watched is stored: the agent was at work meanwhile,
    // and the paused folder's message was not taken.
    await dovecot.save('dana', 'Archive', mail('india'));
    await waitFor('india found in the watched Archive', () => found('india'));
    expect(await docOf('hotel@example.org')).toBeUndefined();
    // The others run on (their state reaches the gateway with the agent's next status report).
    await waitFor('Archive still watching', async () => (await coverageOf(archive)).state === 'watching');

    const resumed = await live.gw.request('POST', `/v1/sources/${id}/resume`);
    expect(resumed.json()).toMatchObject({ paused: false });
    await waitFor('hotel stored after resume', async () => (await docOf('hotel@example.org')) ?? null);
    await waitFor('watching again', async () => (await coverageOf(inbox)).state === 'watching');

    expect((await live.gw.request('POST', '/v1/sources/00000000-0000-4000-8000-000000000000/pause')).statusCode).toBe(404);
    expect((await live.gw.request('POST', '/v1/sources/not-a-uuid/pause')).statusCode).toBe(422);
  }, 90_000);

  it('bad reports and updates are refused with 422 and change nothing', async () => {
    const bad = await live.gw.request('PUT', '/v1/sources/status', { agent: 'x', sources: [{ collector: 'email_imap', source_type: 'email', source_account_id: null, source_ref: 'INBOX', label: 'x', state: 'dreaming', mode: '', last_success_at: null, newest_at_source: null, newest_stored: null, next_run_at: null, last_error: null }] });
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0].loc).toContain('state');
    const upd = await live.gw.request('POST', '/v1/documents/source-state', { updates: [] });
    expect(upd.statusCode).toBe(422);
    const unknown = await live.gw.request('POST', '/v1/documents/source-state', { updates: [{ source_type: 'email', source_id: 'email_imap/dana:nobody@example.org', flags: ['\\Seen'] }] });
    expect(unknown.json()).toEqual({ updated: 0, deleted: 0, not_found: 1 });
  });
});
