/**
 * Mail.app's .emlx flags as tags (issue 44 item 5) against a LIVE gateway on the test backend, by both readers of
 * .emlx files: `memex import mail` on a Mail.app tree and the agent's email_local collector. The property list's
 * `flags` bits (0 read, 2 answered, 4 flagged) become the tags unread, flagged and replied; Mail.app rewrites the
 * file when a message is read or flagged, and the next run moves the tags with no new message.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { createGatewayClient } from '../../src/client/submit.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { agentWith, auth, localMailVersions, mailConfig, sourceTags, startLiveGateway, textSink, tmpDir, type LiveGateway } from './helpers.ts';
import { emlx, simpleMessage } from './fixtures.ts';

const READ = 1;
const ANSWERED = 1 << 2;
const FLAGGED = 1 << 4;

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

const tags = (domain: string) => sourceTags(live, domain);
const versions = (domain: string) => localMailVersions(live, domain);

/** A Mail.app mailbox folder of simpleMessage(n) files with the given flags; a later call rewrites them (new mtime). */
function writeMailbox(root: string, domain: string, flags: number[]): void {
  const dir = path.join(root, 'INBOX.mbox', 'Messages');
  fs.mkdirSync(dir, { recursive: true });
  flags.forEach((f, n) => {
    const file = path.join(dir, `${n + 1}.emlx`);
    fs.writeFileSync(file, emlx(simpleMessage(n, { domain }), { flags: f }));
    const t = new Date(Date.now() + n * 1000 + 60_000);
    fs.utimesSync(file, t, t);
  });
}

describe('.emlx flags as tags', () => {
  it('memex import mail: unread, flagged and replied from the flags; reading in Mail.app moves them', async () => {
    const domain = 'import-emlx.example';
    const root = tmpDir('memex-emlxflags-');
    const env = { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(root, 'state.json') };
    const run = async () => {
      const out = textSink();
      const err = textSink();
      const code = await runMailImport(['mail', path.join(root, 'INBOX.mbox'), '--url', live.url, '--token', TEST_TOKEN], { out: out, err: err, env });
      return { code, err: err.text };
    };
    writeMailbox(root, domain, [READ, 0, READ | ANSWERED | FLAGGED]);
    const first = await run();
    expect(first.code, first.err).toBe(0);
    expect(await tags(domain)).toEqual(['1:unread', '2:flagged', '2:replied']);

    writeMailbox(root, domain, [READ | FLAGGED, READ, READ | ANSWERED]);
    const second = await run();
    expect(second.code, second.err).toBe(0);
    expect(await tags(domain)).toEqual(['0:flagged', '2:replied']);
    expect(await versions(domain)).toBe(3);
  });

  it('the agent email_local collector: the same tags, moved on the next run', async () => {
    const domain = 'agent-emlx.example';
    const root = tmpDir('memex-emlxflags-agent-');
    const stateDir = tmpDir('memex-emlxflags-state-');
    const app = await agentWith(mailConfig(stateDir, { sources: [{ id: 'apple', type: 'local', source_path: root }] }, live.url), createGatewayClient({ baseUrl: live.url, authToken: TEST_TOKEN }));
    try {
      const run = async () => {
        const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: { mode: 'simulate', simulate_path: root } });
        expect(res.statusCode, res.body).toBe(200);
        return res.json();
      };
      writeMailbox(root, domain, [0, READ | FLAGGED]);
      expect((await run()).warnings).toEqual([]);
      expect(await tags(domain)).toEqual(['0:unread', '1:flagged']);

      writeMailbox(root, domain, [READ | ANSWERED, READ]);
      expect((await run()).warnings).toEqual([]);
      expect(await tags(domain)).toEqual(['0:replied']);
      expect(await versions(domain)).toBe(2);
    } finally {
      await app.close();
    }
  });
});
