/**
 * Your mail as you wrote it (issue 30): with the gateway on this machine, `memex import mail` and the local
 * collector store the text as written, so an address, a commit hash, a date-time and a claim number are
 * found by search and shown in the document view. `--redact[=…]`, `--no-redact` and the spec's
 * `redact_pii` (source, then module, then all on) still decide when given; a gateway on another machine
 * gets the spec's all-on default. The import says in one line which policy applies and how to change it,
 * and re-importing a folder stored redacted replaces each message by its original (a new version, nothing
 * duplicated).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { storeRedaction } from '../../src/agent/collectors/email/store-redaction.ts';
import { formatStatus } from '../../src/cli/operator.ts';
import { startTestGateway, TEST_TOKEN } from '../helpers/gateway.ts';
import { agentWith, auth, mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from './helpers.ts';
import { CRLF, emlx } from './fixtures.ts';

const ADDRESS = 'stable@vger.kernel.org';
const HASH = '3f9a1c2e8b7d6054a1b2c3d4e5f60718293a4b5c';
const DATE_TIME = '17.04.2019 08:22';
const CLAIM = 'CLM-2026-04417';
const PHONE = '+44 20 7946 0958';

const message = (n: number) =>
  CRLF(`From: Dental Care <reception@dental-care.example>
To: jane.doe@example.org
Subject: Your claim ${n}
Date: Wed, 17 Apr 2019 08:30:00 +0200
Message-ID: <claim-${n}@dental-care.example>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Please forward the receipt to ${ADDRESS} (fix in commit ${HASH}).
Your visit on ${DATE_TIME} is filed under claim ${CLAIM}.
Questions: call us on ${PHONE}.
`);

function maildir(count: number): string {
  const root = tmpDir('memex-original-');
  const md = path.join(root, 'Maildir');
  for (const sub of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(md, sub), { recursive: true });
  for (let n = 1; n <= count; n++) fs.writeFileSync(path.join(md, 'cur', `17000000${n}.M${n}.host:2,S`), message(n));
  return root;
}

function sink() {
  let text = '';
  return { write: (s: string) => ((text += s), true), isTTY: false, get text() { return text; } };
}

/** The environment of a fresh install: no agent config file, a manifest of its own. */
function freshEnv(dir: string): NodeJS.ProcessEnv {
  const config = path.join(dir, 'config');
  fs.mkdirSync(config, { recursive: true });
  return { HOME: process.env.HOME, XDG_CONFIG_HOME: config, MEMEX_MAIL_IMPORT_STATE: path.join(dir, 'state.json') };
}

async function importInto(url: string, dir: string, env: NodeJS.ProcessEnv, extra: string[] = []) {
  const out = sink();
  const err = sink();
  const code = await runMailImport(['mail', dir, '--url', url, '--token', TEST_TOKEN, ...extra], { out: out, err: err, env });
  return { code, out: out.text, err: err.text };
}

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

async function versions(gw: LiveGateway['gw'], messageId: string) {
  return (
    await gw.db.query<{ doc_id: string; text: string; version_number: number; is_active_version: boolean }>(
      `SELECT doc_id, text, version_number, is_active_version FROM documents WHERE external_id = $1 ORDER BY version_number`,
      [`email:${messageId}`],
    )
  ).rows;
}

describe('memex import mail on a local default install', () => {
  it('stores the text as written: address, hash, date-time and claim number are searchable and shown', async () => {
    const dir = maildir(1);
    const env = freshEnv(tmpDir('memex-original-env-'));
    const run = await importInto(live.url, dir, env);
    expect(run.err).toBe('');
    expect(run.code).toBe(0);
    // One line says what the stored copy holds, why, and how to change it.
    const notice = run.out.split('\n').filter((l) => /redact/i.test(l));
    expect(notice).toHaveLength(1);
    expect(notice[0]).toMatch(/storing the text as written/);
    expect(notice[0]).toMatch(/is on this machine/);
    expect(notice[0]).toMatch(/--redact/);

    const [doc] = await versions(live.gw, 'claim-1@dental-care.example');
    expect(doc.text).not.toMatch(/_REDACTED\]/);
    for (const needle of [ADDRESS, HASH, DATE_TIME, CLAIM, PHONE]) expect(doc.text).toContain(needle);
    const stored = await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE text LIKE '%\\_REDACTED]%'`);
    expect(stored.rows[0].n).toBe(0);

    for (const q of [ADDRESS, HASH, DATE_TIME, CLAIM]) {
      const res = await live.gw.request('GET', `/v1/search?q=${encodeURIComponent(`"${q}"`)}&k=5`);
      expect(res.statusCode, q).toBe(200);
      expect(res.json().hits.map((h: any) => h.document_id), q).toContain(doc.doc_id);
    }
    const view = await live.gw.request('GET', `/v1/doc/${doc.doc_id}/view`);
    expect(view.statusCode).toBe(200);
    const shown = JSON.stringify(view.json());
    for (const needle of [ADDRESS, HASH, DATE_TIME, CLAIM]) expect(shown).toContain(needle);

    // The second import says nothing more about redaction (the policy did not change).
    const again = await importInto(live.url, dir, env);
    expect(again.out).not.toMatch(/redact/i);
  });

  it('--redact, --redact=LIST and --no-redact decide the stored copy', async () => {
    const env = freshEnv(tmpDir('memex-original-env-'));
    const all = await importInto(live.url, maildir(2), env, ['--redact']);
    expect(all.code).toBe(0);
    expect(all.out).toMatch(/replacing email addresses, phone numbers, account numbers and SSNs by markers/);
    expect(all.out).toMatch(/--no-redact/);
    const [red] = await versions(live.gw, 'claim-2@dental-care.example');
    expect(red.text).toContain('[EMAIL_REDACTED]');
    expect(red.text).toContain('[PHONE_REDACTED]');

    const dir3 = tmpDir('memex-original-3-');
    fs.cpSync(maildir(3), dir3, { recursive: true });
    const some = await importInto(live.url, dir3, freshEnv(tmpDir('memex-original-env-')), ['--redact=emails']);
    expect(some.out).toMatch(/replacing email addresses by markers/);
    const [emailsOnly] = (await versions(live.gw, 'claim-3@dental-care.example')).filter((v) => v.is_active_version);
    expect(emailsOnly.text).toContain('[EMAIL_REDACTED]');
    expect(emailsOnly.text).toContain(PHONE);

    const bad = await importInto(live.url, dir3, env, ['--redact=emails,faxes']);
    expect(bad.code).toBe(2);
    expect(bad.err).toMatch(/"faxes" is not a redaction category/);
  });

  it('modules.mail.redact_pii in the agent config resolves as the spec says', async () => {
    const envDir = tmpDir('memex-original-env-');
    const env = freshEnv(envDir);
    fs.mkdirSync(path.join(env.XDG_CONFIG_HOME!, 'memex'), { recursive: true });
    const configFile = path.join(env.XDG_CONFIG_HOME!, 'memex', 'agent.yaml');
    fs.writeFileSync(configFile, 'modules:\n  mail:\n    redact_pii: {phones: false}\n');
    const dir = tmpDir('memex-original-4-');
    fs.cpSync(maildir(4), dir, { recursive: true });
    const run = await importInto(live.url, dir, env);
    expect(run.code).toBe(0);
    expect(run.out).toContain(`as modules.mail.redact_pii in ${configFile} says`);
    const [doc] = (await versions(live.gw, 'claim-4@dental-care.example')).filter((v) => v.is_active_version);
    // {phones: false}: the other categories default to true (spec §2.1).
    expect(doc.text).toContain('[EMAIL_REDACTED]');
    expect(doc.text).toContain(PHONE);
  });

  it('re-importing a folder stored redacted replaces every message by its original: a new version each, nothing duplicated; status says so before, not after', async () => {
    // A store of its own, so the status counts only this folder's messages.
    const own = await startLiveGateway();
    const status = async () => (await own.gw.request('GET', '/v1/status')).json();
    const dir = tmpDir('memex-original-5-');
    for (let n = 5; n <= 7; n++) fs.cpSync(maildir(n), path.join(dir, `set-${n}`), { recursive: true });
    const env = freshEnv(tmpDir('memex-original-env-'));
    expect((await status()).stored_redaction).toEqual({ documents: 0, by_source: [] });
    // What an earlier memex did by default: everything redacted.
    expect((await importInto(own.url, dir, env, ['--redact'])).code).toBe(0);
    const before = await status();
    expect(before.stored_redaction).toEqual({ documents: 7, by_source: [{ source_type: 'email_local', count: 7 }] });
    // `memex status` says it too, with what to do.
    expect(formatStatus(before).join('\n')).toMatch(/^redacted +7 document\(s\) stored with addresses\/numbers replaced by markers \(7 email_local\); memex import mail PATH/m);
    // An old manifest recorded no policy: take the labels out, as a manifest written before this change.
    const state = JSON.parse(fs.readFileSync(env.MEMEX_MAIL_IMPORT_STATE!, 'utf8'));
    for (const part of Object.values<any>(state.gateways)) {
      delete part.redaction;
      for (const e of Object.values<any>(part.sources)) delete e.redaction;
    }
    fs.writeFileSync(env.MEMEX_MAIL_IMPORT_STATE!, JSON.stringify(state));

    const again = await importInto(own.url, dir, env);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/storing the text as written/);
    // 3 sets of 5, 6, 7 messages with ids 1..n: 7 distinct messages; the re-import sends what it reads again.
    expect(again.out).not.toMatch(/not read/);
    const ids = Array.from({ length: 7 }, (_, i) => `claim-${i + 1}@dental-care.example`);
    for (const id of ids) {
      const v = await versions(own.gw, id);
      const active = v.filter((x) => x.is_active_version);
      expect(active, id).toHaveLength(1);
      expect(active[0].text, id).not.toMatch(/_REDACTED\]/);
      expect(active[0].text, id).toContain(CLAIM);
    }
    // Each message: exactly one redacted version, then the original.
    for (const id of ids) {
      const v = await versions(own.gw, id);
      expect(v.map((x) => [x.version_number, x.is_active_version, /_REDACTED\]/.test(x.text)]), id).toEqual([
        [1, false, true],
        [2, true, false],
      ]);
    }
    // A third import changes nothing.
    const third = await importInto(own.url, dir, env);
    expect(third.out).toMatch(/0 new/);
    for (const id of ids) expect(await versions(own.gw, id), id).toHaveLength(2);
    const after = await status();
    expect(after.stored_redaction).toEqual({ documents: 0, by_source: [] });
    expect(formatStatus(after).join('\n')).not.toMatch(/^redacted/m);
    await own.close();
  });
});

describe('a gateway on another machine', () => {
  const external = Object.values(os.networkInterfaces())
    .flat()
    .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

  it('gets the spec default: everything redacted', async () => {
    expect(storeRedaction({ gatewayUrl: 'https://memex.example.net' }).label).toBe('all');
    expect(storeRedaction({ gatewayUrl: 'http://192.168.1.20:8085' }).label).toBe('all');
    expect(storeRedaction({ gatewayUrl: 'http://127.0.0.1:8085' }).label).toBe('none');
    expect(storeRedaction({ gatewayUrl: 'http://localhost:8085' }).label).toBe('none');
    expect(storeRedaction({ gatewayUrl: 'http://[::1]:8085' }).label).toBe('none');
    // What is set resolves as the spec says: source, then module, then all on.
    expect(storeRedaction({ source: false, module: true, gatewayUrl: 'https://memex.example.net' }).label).toBe('none');
    expect(storeRedaction({ source: { phones: false } as any, module: false, gatewayUrl: 'http://127.0.0.1:1' }).label).toBe('emails,account_numbers,ssn');
    expect(storeRedaction({ module: true, gatewayUrl: 'http://127.0.0.1:1' }).label).toBe('all');
  });

  it.skipIf(!external)('memex import mail to a non-loopback address stores the redacted text and says why', async () => {
    const gw = await startTestGateway({ config: { host: '0.0.0.0' } });
    try {
      await gw.app.listen({ port: 0, host: external! });
      const url = `http://${external}:${(gw.app.server.address() as { port: number }).port}`;
      const run = await importInto(url, maildir(1), freshEnv(tmpDir('memex-original-env-')));
      expect(run.code).toBe(0);
      expect(run.out).toMatch(/replacing email addresses, phone numbers, account numbers and SSNs by markers in the stored text: the server .* is not on this machine/);
      const [doc] = (await gw.db.query<{ text: string }>(`SELECT text FROM documents WHERE external_id = 'email:claim-1@dental-care.example'`)).rows;
      expect(doc.text).toContain('[EMAIL_REDACTED]');
      expect(doc.text).toContain('[PHONE_REDACTED]');
    } finally {
      await gw.close();
    }
  });
});

describe('the local collector', () => {
  let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;
  beforeAll(async () => {
    recorder = await startUploadRecorder();
  });
  afterAll(async () => {
    await recorder?.close();
  });

  it('stores the original by default and follows a source override of redact_pii', async () => {
    const root = tmpDir('memex-original-emlx-');
    const plain = path.join(root, 'Plain.mbox', 'Messages');
    const strict = path.join(root, 'Strict.mbox', 'Messages');
    fs.mkdirSync(plain, { recursive: true });
    fs.mkdirSync(strict, { recursive: true });
    fs.writeFileSync(path.join(plain, '1.emlx'), emlx(message(101)));
    fs.writeFileSync(path.join(strict, '2.emlx'), emlx(message(102)));
    const config = mailConfig(
      tmpDir('memex-original-state-'),
      {
        sources: [
          // Nothing set: the gateway is on this machine, the text is stored as written.
          { id: 'plain', type: 'local', source_path: path.join(root, 'Plain.mbox') },
          // The source's setting wins over the module's (spec §2.1).
          { id: 'strict', type: 'local', source_path: path.join(root, 'Strict.mbox'), redact_pii: { emails: true, phones: true, account_numbers: false, ssn: false } },
        ],
      },
      live.url,
    );
    const app = await agentWith(config, splitGatewayClient(live.url, recorder.url));
    try {
      for (const p of [plain, strict]) {
        const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: { mode: 'simulate', simulate_path: p } });
        expect(res.statusCode).toBe(200);
      }
    } finally {
      await app.close();
    }
    const [a] = await versions(live.gw, 'claim-101@dental-care.example');
    expect(a.text).not.toMatch(/_REDACTED\]/);
    const [b] = await versions(live.gw, 'claim-102@dental-care.example');
    expect(b.text).toContain('[EMAIL_REDACTED]');
    expect(b.text).toContain('[PHONE_REDACTED]');
    expect(b.text).toContain(CLAIM);
    expect(b.text).toContain(HASH);
  });

  it('sends mail it stored redacted again once the policy changes: the originals become new versions, nothing duplicated', async () => {
    const root = tmpDir('memex-original-emlx-');
    const box = path.join(root, 'Inbox.mbox', 'Messages');
    fs.mkdirSync(box, { recursive: true });
    for (const n of [201, 202]) fs.writeFileSync(path.join(box, `${n}.emlx`), emlx(message(n)));
    const stateDir = tmpDir('memex-original-state-');
    const run = async (mail: Record<string, unknown>) => {
      const app = await agentWith(mailConfig(stateDir, { ...mail, sources: [{ id: 'inbox', type: 'local', source_path: root }] }, live.url), splitGatewayClient(live.url, recorder.url));
      try {
        const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: { mode: 'simulate', simulate_path: root } });
        expect(res.statusCode, res.body).toBe(200);
        return res.json().stats;
      } finally {
        await app.close();
      }
    };
    // What an earlier memex stored by default: redacted.
    expect((await run({ redact_pii: true })).documents_accepted).toBe(2);
    // This memex's default on a loopback gateway: the same files, sent again with their original text.
    const second = await run({});
    expect(second.documents_submitted).toBe(2);
    for (const id of ['claim-201@dental-care.example', 'claim-202@dental-care.example']) {
      const v = await versions(live.gw, id);
      expect(v.map((x) => [x.version_number, x.is_active_version, /_REDACTED\]/.test(x.text)]), id).toEqual([
        [1, false, true],
        [2, true, false],
      ]);
    }
    // Nothing changed since: nothing sent.
    const third = await run({});
    expect(third.documents_submitted).toBe(0);
    expect(await versions(live.gw, 'claim-201@dental-care.example')).toHaveLength(2);
  });
});
