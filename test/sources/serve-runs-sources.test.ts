/**
 * `memex serve --config agent.yaml` (issue 41, item 1) runs the agent configuration's sources itself: started as a
 * user starts it (bin/memex.js in a child process), against a real Dovecot, mail delivered into Dovecot is found by
 * GET /v1/search with nobody POSTing anything; `memex status` and `memex sources` show the source's freshness, and
 * `memex sources pause|resume` pause it. A bad agent configuration is said and leaves the server serving.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { dovecotUnavailableReason, startDovecot, type DovecotServer } from '../helpers/dovecot.ts';
import { MEMEX_BIN, runMemex } from '../helpers/memex-bin.ts';
import { tmpDir } from '../email-collectors/helpers.ts';
import { CRLF } from '../email-collectors/fixtures.ts';
import { waitFor as waitUntil } from '../helpers/wait.ts';

// A whole `memex serve` starts here: the waits are longer than the helper's default.
const waitFor = <T>(what: string, probe: () => Promise<T | undefined | null | false>, ms = 90_000) => waitUntil(what, probe, ms, 250);

const unavailable = dovecotUnavailableReason();
const TOKEN = 'serve-sources-token-0123456789abcdef';

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const note = (word: string) =>
  CRLF(`From: kim@example.org
To: lee@example.org
Subject: About ${word}
Date: ${new Date().toUTCString()}
Message-ID: <${word}@example.org>

The word of the day is ${word}.
`);

describe.skipIf(unavailable !== null)('memex serve runs the sources of the agent configuration', () => {
  let dovecot: DovecotServer;
  let child: ChildProcess | undefined;
  let stderr = '';
  let url = '';
  let env: NodeJS.ProcessEnv;
  let dropDb: (() => Promise<void>) | undefined;
  const dir = tmpDir('memex-serve-sources-');

  beforeAll(async () => {
    dovecot = await startDovecot({ users: [{ user: 'lee', password: 'lee-pass-1' }], maildirs: { lee: { INBOX: [note('kiwi')] } } });
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    fs.writeFileSync(path.join(dir, 'lee-password'), 'lee-pass-1\n');
    fs.writeFileSync(
      path.join(dir, 'agent.yaml'),
      [
        'modules:',
        '  mail:',
        '    enabled: true',
        '    state:',
        `      run_state_path: ${path.join(dir, 'state', 'run.json')}`,
        `      rejected_log_path: ${path.join(dir, 'state', 'rejected.log')}`,
        `      lock_file_path: ${path.join(dir, 'state', 'lock')}`,
        '    sources:',
        '      - id: lee',
        '        type: imap',
        `        host: ${dovecot.host}`,
        `        port: ${dovecot.port}`,
        '        tls: false',
        '        starttls: false',
        '        username: lee',
        `        auth: { kind: app_password, secret_ref: "file://${path.join(dir, 'lee-password')}" }`,
        '        folders: [INBOX]',
        '        poll_interval: 10m',
        '',
      ].join('\n'),
    );
    let databaseUrl: string | undefined;
    if (backend === 'postgres') {
      const created = await createServerDatabase();
      databaseUrl = created.url;
      dropDb = created.drop;
    }
    env = {
      PATH: process.env.PATH,
      HOME: dir,
      DATA_DIR: path.join(dir, 'data'),
      PORT: String(port),
      HOST: '127.0.0.1',
      AUTH_TOKEN: TOKEN,
      EMBEDDING_PROVIDER: 'hash',
      LOG_LEVEL: 'warn',
      XDG_STATE_HOME: path.join(dir, 'xdg-state'),
      XDG_CONFIG_HOME: path.join(dir, 'xdg-config'),
      ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    };
    child = spawn(process.execPath, [MEMEX_BIN, 'serve', '--config', path.join(dir, 'agent.yaml')], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    child.stderr!.on('data', (d) => (stderr += d));
    await waitFor('the sources started', async () => /sources: running 1/.test(stderr), 120_000).catch((err) => {
      throw new Error(`${(err as Error).message}\n--- stderr ---\n${stderr}`);
    });
  }, 180_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child!.once('exit', r));
    }
    await dovecot?.stop();
    await dropDb?.();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const api = async (method: string, p: string) => {
    const res = await fetch(url + p, { method, headers: { authorization: `Bearer ${TOKEN}` } });
    return { status: res.status, json: (await res.json()) as any };
  };
  const found = async (word: string) => (await api('GET', `/v1/search?q=${word}&k=3`)).json.hits?.length > 0;
  const memex = (args: string[]) => runMemex(args, { ...env, MEMEX_URL: url });

  it('stores what the folder holds and what arrives, by itself', async () => {
    await waitFor('kiwi found', () => found('kiwi'));
    await dovecot.save('lee', 'INBOX', note('mango'));
    await waitFor('mango found', () => found('mango'));
  }, 120_000);

  it('memex status and memex sources show the source; memex sources pause and resume it', async () => {
    await waitFor('watching', async () => (await api('GET', '/v1/coverage?source=email_imap&missing_limit=0')).json.sources[0]?.state === 'watching');
    const status = await memex(['status']);
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(/sources \(1\):/);
    expect(status.stdout).toMatch(/email_imap lee\/INBOX: watching \(IDLE, checked every 10m\), last sync \d+ s ago/);

    const paused = await memex(['sources', 'pause', 'lee/INBOX']);
    expect(paused.code, paused.stderr).toBe(0);
    expect(paused.stdout).toMatch(/^paused: email_imap lee\/INBOX/);
    await waitFor('paused', async () => (await api('GET', '/v1/coverage?source=email_imap&missing_limit=0')).json.sources[0]?.state === 'paused');
    const listed = await memex(['sources']);
    expect(listed.stdout).toMatch(/lee\/INBOX: paused/);
    const resumed = await memex(['sources', 'resume', 'lee/INBOX']);
    expect(resumed.code, resumed.stderr).toBe(0);
    await waitFor('watching again', async () => (await api('GET', '/v1/coverage?source=email_imap&missing_limit=0')).json.sources[0]?.state === 'watching');

    const wrong = await memex(['sources', 'pause', 'nothing-like-this']);
    expect(wrong.code).not.toBe(0);
    expect(wrong.stderr).toMatch(/no running source matches "nothing-like-this"/);
  }, 120_000);
});
