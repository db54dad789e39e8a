/**
 * A first IMAP sync of a folder in batches (issue 41) against a REAL Dovecot and a LIVE gateway: 120 messages
 * arrive in 3 batch submissions (not 120 requests), each body fetched once; a gateway that stops answering in the
 * middle keeps what it stored, and the source's next try (after its back-off) sends the rest with nothing doubled.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { imapCoverageSource } from '../../src/agent/collectors/email/imap.ts';
import type { ImapFolderSync } from '../../src/agent/collectors/email/imap-sync.ts';
import { createGatewayClient, GatewayHttpError, type GatewayClient } from '../../src/client/submit.ts';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from '../helpers/dovecot.ts';
import { auth, mailConfig, startLiveGateway, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';
import { CRLF } from '../email-collectors/fixtures.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';

const unavailable = dovecotUnavailableReason();
if (unavailable) console.warn(`[imap batched tests] SKIPPED: ${unavailable}`);

const N = 120;
const mail = (i: number) =>
  CRLF(`From: sender${i % 7}@example.org
To: dana@example.org
Subject: Batch note ${i}
Date: ${new Date(Date.UTC(2024, 1, 1, 8, i)).toUTCString()}
Message-ID: <batch-${i}@example.org>

Message number ${i} of the batched first sync, word marker${i}x.
`);

describe.skipIf(unavailable !== null)('IMAP first sync in batches (real Dovecot, live gateway)', () => {
  let dovecot: DovecotServer;
  let live: LiveGateway;
  let app: AgentServer | undefined;
  const calls = { single: 0, batch: 0 };
  let refuseAfter = Infinity;

  /** The real client, counted; after `refuseAfter` batch calls it fails as a gateway gone away does. */
  function countingClient(): GatewayClient {
    const real = createGatewayClient({ baseUrl: live.url, authToken: TEST_TOKEN, backoffMs: [10, 20] });
    return {
      ...real,
      submitDocument: (doc, o) => {
        calls.single++;
        return real.submitDocument(doc, o);
      },
      submitBatch: (docs) => {
        calls.batch++;
        if (calls.batch > refuseAfter) return Promise.reject(new GatewayHttpError(-1, 'Exceeded retry attempts', undefined, [0, 0, 0], ['connect ECONNREFUSED']));
        return real.submitBatch(docs);
      },
    };
  }
  const stored = async () => (await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'email_imap/dana:%' AND is_active_version`)).rows[0].n;
  const id = () => coverageSourceId(imapCoverageSource('dana', 'INBOX'));

  beforeAll(async () => {
    dovecot = await startDovecot({ users: [{ user: 'dana', password: 'pw-1' }], maildirs: { dana: { INBOX: Array.from({ length: N }, (_, i) => mail(i)) } } });
    live = await startLiveGateway();
    process.env.MEMEX_TEST_BATCH_PASSWORD = 'pw-1';
  }, 60_000);
  afterAll(async () => {
    delete process.env.MEMEX_TEST_BATCH_PASSWORD;
    await app?.close();
    await live?.close();
    await dovecot?.stop();
  });

  async function agent(stateDir: string, runSources = true): Promise<AgentServer> {
    const config = mailConfig(
      stateDir,
      { sources: [{ id: 'dana', type: 'imap', host: dovecot.host, port: dovecot.port, tls: false, starttls: false, username: 'dana', auth: { kind: 'app_password', secret_ref: 'env://MEMEX_TEST_BATCH_PASSWORD' }, folders: ['INBOX'], idle: false, poll_interval: '1h' }] },
      live.url,
    );
    const a = await createAgentServer(config, { logger: false, gateway: countingClient(), runSources });
    await a.ready();
    return a;
  }

  it('a gateway gone in the middle keeps what it stored; the next sync sends the rest once', async () => {
    refuseAfter = 1;
    app = await agent(tmpDir('memex-imap-batch-'));
    const sync = app.agent.sources.get(id()) as unknown as ImapFolderSync;
    await waitFor('the first batch stored and the second refused', async () => calls.batch >= 2 && (await stored()) === 50, 60_000);
    expect(sync.status().last_error ?? '').toMatch(/gateway cannot take mail now/);

    refuseAfter = Infinity;
    calls.batch = 0;
    calls.single = 0;
    // The source tries again by itself after its back-off.
    await waitFor('the rest stored', async () => (await stored()) === N && sync.status().last_error === null, 60_000);
    // The 70 left over, in two batches; nothing sent one by one, nothing doubled.
    expect(calls.batch).toBe(2);
    expect(calls.single).toBe(0);
    const copies = await live.gw.db.query<{ n: number }>(`SELECT count(DISTINCT external_id)::int AS n FROM documents WHERE external_id LIKE 'email_imap/dana:%'`);
    expect(copies.rows[0].n).toBe(N);
    const hit = await live.gw.request('GET', `/v1/search?${new URLSearchParams({ q: 'marker119x', k: '3' })}`);
    expect(hit.json().hits.map((h: any) => h.title)).toContain('Batch note 119');
    await app.close();
    app = undefined;
  }, 120_000);

  it(`a first sync of ${N} messages is 3 batch submissions and ${N} body fetches`, async () => {
    // A new state folder: the agent examines the folder from the start (the gateway answers duplicates).
    calls.batch = 0;
    calls.single = 0;
    app = await agent(tmpDir('memex-imap-batch-'));
    const sync = app.agent.sources.get(id()) as unknown as ImapFolderSync;
    await waitFor('the first sync', async () => sync.status().last_success_at !== null, 60_000);
    expect(calls.batch).toBe(3);
    expect(calls.single).toBe(0);
    expect(sync.counters.bodiesFetched).toBe(N);
  }, 120_000);

  it(`POST …/email_imap:run sends the folder in batches too: ${N} messages in 3 submissions, each answered`, async () => {
    calls.batch = 0;
    calls.single = 0;
    // Sources not running: only the run reads the folder (its state is new, the gateway answers duplicates).
    const runner = await agent(tmpDir('memex-imap-run-batch-'), false);
    try {
      const res = await runner.inject({ method: 'POST', url: '/v1/collectors/email_imap:run', headers: auth, payload: { account_id: 'dana', folder: 'INBOX' } });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.errors).toEqual([]);
      expect(body.submitted).toBe(N);
      expect(body.results).toHaveLength(N);
      expect(new Set(body.results.map((r: any) => r.uid)).size).toBe(N);
      expect(body.results.every((r: any) => typeof r.docId === 'string')).toBe(true);
      expect(calls.batch).toBe(3);
      expect(calls.single).toBe(0);
    } finally {
      await runner.close();
    }
  }, 120_000);
});
