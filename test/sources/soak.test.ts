/**
 * Nothing lost, nothing doubled (issue 41 item 4), bounded: messages arrive at random for about a minute
 * (MEMEX_SOAK_SECONDS) into a REAL Dovecot, some as files written into the Maildir (as an MTA delivers), some
 * through Dovecot itself (doveadm save, which IDLE hears at once), while Dovecot restarts twice and the host agent,
 * a real `memex agent` process running its IMAP source, is SIGKILLed and started again twice. Afterwards every
 * message is stored exactly once: one document, one version, findable by its words.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from '../helpers/dovecot.ts';
import { startLiveGateway, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';
import { CRLF } from '../email-collectors/fixtures.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { MEMEX_BIN } from '../helpers/memex-bin.ts';
import { waitFor } from '../helpers/wait.ts';

const unavailable = dovecotUnavailableReason();
if (unavailable) console.warn(`[soak test] SKIPPED: ${unavailable}`);

const SECONDS = Number(process.env.MEMEX_SOAK_SECONDS ?? 60);

const mail = (i: number) =>
  CRLF(`From: sender${i % 5}@soak.example
To: sam@soak.example
Subject: Soak note ${i}
Date: ${new Date(Date.UTC(2025, 0, 1, 8, 0, i)).toUTCString()}
Message-ID: <soak-${i}@soak.example>

Soak message ${i}, word soakmark${i}q.
`);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.skipIf(unavailable !== null)(`nothing lost, nothing doubled: ${SECONDS} s of mail through restarts and SIGKILLs (real Dovecot, real agent process)`, () => {
  let dovecot: DovecotServer;
  let live: LiveGateway;
  let agent: { child: ChildProcess; out: string } | undefined;
  const dir = tmpDir('memex-soak-');
  const cfgFile = path.join(dir, 'agent.yaml');

  beforeAll(async () => {
    const probe = net.createServer();
    await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
    const agentPort = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    dovecot = await startDovecot({ users: [{ user: 'sam', password: 'soak-pw' }], maildirs: { sam: { INBOX: [] } } });
    live = await startLiveGateway();
    fs.writeFileSync(
      cfgFile,
      [
        `port: ${agentPort}`,
        'gateway:',
        `  base_url: ${live.url}`,
        `  auth_token: ${TEST_TOKEN}`,
        'modules:',
        '  mail:',
        '    enabled: true',
        '    state:',
        `      run_state_path: ${path.join(dir, 'state', 'state.json')}`,
        `      rejected_log_path: ${path.join(dir, 'state', 'rejected.log')}`,
        `      lock_file_path: ${path.join(dir, 'state', 'collector.lock')}`,
        '    sources:',
        '      - id: sam',
        '        type: imap',
        `        host: ${dovecot.host}`,
        `        port: ${dovecot.port}`,
        '        tls: false',
        '        starttls: false',
        '        username: sam',
        '        auth: { kind: app_password, secret_ref: "env://MEMEX_SOAK_IMAP_PASSWORD" }',
        '        folders: [INBOX]',
        '        poll_interval: 5s',
        '',
      ].join('\n'),
    );
  }, 60_000);
  afterAll(async () => {
    if (agent?.child.exitCode === null) agent.child.kill('SIGKILL');
    await live?.close();
    await dovecot?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  async function startAgent(): Promise<void> {
    const child = spawn(process.execPath, [MEMEX_BIN, 'agent', '--config', cfgFile], {
      env: {
        ...process.env,
        MEMEX_SOAK_IMAP_PASSWORD: 'soak-pw',
        SVC_AUTH_SECRET: crypto.randomBytes(24).toString('hex'),
        SVC_LOG_LEVEL: 'info',
        XDG_CONFIG_HOME: dir,
        XDG_STATE_HOME: path.join(dir, 'xdg-state'),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const run = { child, out: '' };
    child.stdout?.on('data', (d) => (run.out = (run.out + d).slice(-20_000)));
    child.stderr?.on('data', (d) => (run.out = (run.out + d).slice(-20_000)));
    agent = run;
    await waitFor('the agent listening', async () => child.exitCode !== null || run.out.includes('host agent listening'), 90_000);
    if (child.exitCode !== null) throw new Error(`memex agent exited ${child.exitCode}:\n${run.out}`);
  }

  async function killAgent(): Promise<void> {
    const child = agent!.child;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  }

  const stored = async () =>
    (await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'email_imap/sam:%' AND is_active_version`)).rows[0].n;

  it('every message delivered is stored exactly once', async () => {
    await startAgent();
    let delivered = 0;
    let deliveriesDone = false;
    let stopDelivering = false;
    // The mail: a message every 50-400 ms, half as files in the Maildir, half through Dovecot when it is up,
    // from before the first fault to a while after the last.
    const deliveries = (async () => {
      while (!stopDelivering) {
        const i = delivered;
        if (i % 2 === 0) dovecot.deliver('sam', 'INBOX', mail(i));
        else await dovecot.save('sam', 'INBOX', mail(i)).catch(() => dovecot.deliver('sam', 'INBOX', mail(i)));
        delivered++;
        await sleep(50 + Math.random() * 350);
      }
      deliveriesDone = true;
    })();
    // The trouble, spread over the same minute.
    const step = (SECONDS * 1000) / 5;
    // The last is a Dovecot restart, so the mail after it needs the running agent to reconnect by itself.
    await sleep(step);
    await killAgent();
    await startAgent();
    await sleep(step);
    await dovecot.restart();
    await sleep(step);
    await killAgent();
    await sleep(1000);
    await startAgent();
    await sleep(step);
    await dovecot.restart();
    await sleep(step);
    stopDelivering = true;
    await deliveries;
    expect(deliveriesDone).toBe(true);
    expect(delivered).toBeGreaterThan(SECONDS); // about 4 a second: the run delivered mail throughout

    await waitFor(`all ${delivered} messages stored`, async () => (await stored()) >= delivered, Number(process.env.MEMEX_SOAK_SETTLE_MS ?? 180_000));
    const counts = (
      await live.gw.db.query<{ versions: number; documents: number; active: number }>(
        `SELECT count(*)::int AS versions, count(DISTINCT external_id)::int AS documents,
                count(*) FILTER (WHERE is_active_version)::int AS active
           FROM documents WHERE external_id LIKE 'email_imap/sam:%'`,
      )
    ).rows[0];
    expect(counts).toEqual({ versions: delivered, documents: delivered, active: delivered });
    // Each message once, by its own Message-ID: none missing, none twice under another name.
    const ids = await live.gw.db.query<{ id: string; n: number }>(
      `SELECT metadata->>'message_id' AS id, count(*)::int AS n FROM documents
        WHERE external_id LIKE 'email_imap/sam:%' GROUP BY 1`,
    );
    const byId = new Map(ids.rows.map((r) => [r.id, r.n]));
    const missing = Array.from({ length: delivered }, (_, i) => `soak-${i}@soak.example`).filter((id) => byId.get(id) !== 1);
    expect(missing).toEqual([]);
    // And the last one findable by its words.
    const hit = await live.gw.request('GET', `/v1/search?${new URLSearchParams({ q: `soakmark${delivered - 1}q`, k: '3' })}`);
    expect(hit.json().hits.map((h: any) => h.title)).toContain(`Soak note ${delivered - 1}`);
  }, 420_000);
});
