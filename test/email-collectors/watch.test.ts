/**
 * Watched mail (issue 41) against a LIVE gateway on the test backend, with real file-system events:
 * `memex import mail --watch` on a Maildir finds a message delivered into new/ (tmp/ then a rename, as a
 * delivery agent writes) by search; a message read by the mail client (new/ -> cur/:2,S) is no new message;
 * an mbox appended to while watched gives its new message; the agent's source type `maildir` watches by
 * itself. Every wait is for a condition (search answers), never a fixed time.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMailWatcher } from '../../src/agent/collectors/email/mail-watch.ts';
import { MailManifest } from '../../src/agent/collectors/email/manifest.ts';
import { storeRedaction } from '../../src/agent/collectors/email/store-redaction.ts';
import { createGatewayClient } from '../../src/agent/gateway-client.ts';
import { createAgentServer } from '../../src/agent/server.ts';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { testConfig } from '../agent/helpers.ts';
import { mailConfig, startLiveGateway, tmpDir, type LiveGateway, textSink } from './helpers.ts';
import { simpleMessage } from './fixtures.ts';

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

/** Waits until `check` holds (checked every 100 ms), or fails after `ms`. */
async function until(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

const found = async (word: string) => {
  const res = await live.gw.request('GET', `/v1/search?q=${encodeURIComponent(word)}&k=5`);
  return res.statusCode === 200 && res.json().hits.length > 0;
};
const versions = async (domain: string) =>
  Number((await live.gw.db.query<{ n: string }>(`SELECT count(*) AS n FROM documents WHERE source_type = 'email_local' AND external_id LIKE $1`, [`%@${domain}`])).rows[0].n);

/** A message as a delivery agent writes it: into tmp/, then renamed into new/. */
function deliver(md: string, name: string, text: string): string {
  fs.writeFileSync(path.join(md, 'tmp', name), text);
  fs.renameSync(path.join(md, 'tmp', name), path.join(md, 'new', name));
  return path.join(md, 'new', name);
}

function maildir(n: number, domain: string): string {
  const md = path.join(tmpDir('memex-watch-'), 'Maildir');
  for (const d of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(md, d), { recursive: true });
  for (let i = 0; i < n; i++) fs.writeFileSync(path.join(md, 'cur', `1700000${i}.M${i}P1.host:2,S`), simpleMessage(i, { domain }));
  return md;
}

describe('memex import mail --watch', () => {
  it('a message delivered into new/ is found by search; reading it (new/ -> cur/:2,S) is no new message', async () => {
    const domain = 'watch-cli.example';
    const md = maildir(3, domain);
    const env = { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(path.dirname(md), 'state.json') };
    const stop = new AbortController();
    let watching!: () => void;
    const on = new Promise<void>((r) => (watching = r));
    const out = textSink();
    const done = runMailImport(['mail', md, '--watch', '--url', live.url, '--token', TEST_TOKEN], { out: out, err: textSink(), env, signal: stop.signal, onWatching: watching });
    await on;
    expect(out.text).toMatch(/done: 3 messages, 3 new/);
    expect(out.text).toMatch(/^watching /m);

    const file = deliver(md, '1800000000.M1P1.host', simpleMessage(7, { domain, body: 'The quarterly zanzibarite figures arrived today.' }));
    await until('the delivered message is found', () => found('zanzibarite'));
    expect(await versions(domain)).toBe(4);

    // Read by the mail client: a rename, then another message, so the watch has surely looked after the rename.
    fs.renameSync(file, path.join(md, 'cur', '1800000000.M1P1.host:2,S'));
    deliver(md, '1800000001.M2P1.host', simpleMessage(8, { domain, body: 'A second note about quokkaberry jam.' }));
    await until('the second message is found', () => found('quokkaberry'));
    expect(await versions(domain)).toBe(5); // 5 documents, one version each: the rename stored nothing
    stop.abort();
    expect(await done).toBe(0);
    expect(out.text).toMatch(/mail watch: 1 new/);
  }, 120_000);

  it('usage: --watch goes with neither --dry-run nor --limit', async () => {
    const e = textSink();
    expect(await runMailImport(['mail', '/tmp', '--watch', '--dry-run'], { out: textSink(), err: e, env: {} })).toBe(2);
    expect(e.text).toMatch(/--watch goes with neither/);
  });
});

describe('watched mbox', () => {
  it('a message appended to a watched mbox is found; the messages before it are not read again', async () => {
    const domain = 'watch-mbox.example';
    const dir = tmpDir('memex-watch-mbox-');
    const file = path.join(dir, 'Lists.mbox');
    const mbox = (msgs: string[]) => msgs.map((m) => `From someone@example.org Tue Dec  5 10:00:00 2023\n${m.replace(/\r\n/g, '\n').replace(/\n$/, '')}\n\n`).join('');
    fs.writeFileSync(file, mbox([1, 2, 3, 4, 5].map((i) => simpleMessage(i, { domain }))));
    const runs: { read: number; unchanged: number; messages: number }[] = [];
    const watcher = createMailWatcher({
      paths: [file],
      gateway: createGatewayClient({ baseUrl: live.url, authToken: TEST_TOKEN }),
      config: testConfig(),
      manifest: await MailManifest.load(path.join(dir, 'state.json'), live.url),
      redaction: storeRedaction({ module: undefined, gatewayUrl: live.url }),
      onRun: (s) => runs.push({ read: s.sourcesRead, unchanged: s.unchanged, messages: s.messages }),
      debounceMs: 50,
      rescanMs: 0,
    });
    await watcher.start();
    expect(runs[0]).toMatchObject({ messages: 5, unchanged: 0 });
    fs.appendFileSync(file, mbox([simpleMessage(6, { domain, body: 'Appended: the marmalade-ostrich minutes.' })]));
    await until('the appended message is found', () => found('ostrich'));
    await watcher.poke();
    expect(runs.at(-1)).toMatchObject({ messages: 6, unchanged: 4, read: 1 });
    expect(await versions(domain)).toBe(6);
    expect(watcher.status()).toMatchObject({ state: 'watching', last_error: null });
    await watcher.stop();
    expect(watcher.status().state).toBe('stopped');
  }, 120_000);
});

describe('the agent source type maildir', () => {
  it('watches by itself: a message written into cur/ is found; closing the agent stops the watch', async () => {
    const domain = 'watch-agent.example';
    const md = maildir(2, domain);
    const stateDir = tmpDir('memex-watch-agent-');
    const config = mailConfig(stateDir, { sources: [{ id: 'lists', type: 'maildir', source_path: md }] }, live.url);
    const agent = await createAgentServer(config, { logger: false, gateway: createGatewayClient({ baseUrl: live.url, authToken: TEST_TOKEN }) });
    await agent.ready();
    await until('the folder is imported', async () => (await versions(domain)) === 2);
    fs.writeFileSync(path.join(md, 'cur', '1900000000.M1P1.host:2,S'), simpleMessage(50, { domain, body: 'Agenda: the pangolin rota.' }));
    await until('the new message is found', () => found('pangolin'));
    await agent.close();
    expect(fs.existsSync(path.join(stateDir, 'mail-folders-state.json'))).toBe(true);
  }, 120_000);

  it('a maildir source without source_path is refused with the field named', () => {
    expect(() => mailConfig(tmpDir('memex-watch-bad-'), { sources: [{ id: 'x', type: 'maildir' }] })).toThrow(/modules\.mail\.sources\[0\]\.source_path.*required for a maildir source/);
  });
});
