/**
 * `memex import mail` (runMailImport) into a LIVE gateway: an mbox file (with ">From " quoting) and a
 * Maildir with a Maildir++ subfolder; the same payload and idempotency as the collector, so a second
 * import is all duplicates (unchanged files are not even read: the manifest), a changed file is sent
 * again and a vanished one forgotten; one logical message per Message-ID across folders; the counts add
 * up; plain progress lines when not on a TTY; usage errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { discoverSources, importMail, readMbox } from '../../src/agent/collectors/email/mail-import.ts';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { createGatewayClient, type GatewayClient } from '../../src/agent/gateway-client.ts';
import { startTestGateway, TEST_TOKEN } from '../helpers/gateway.ts';
import { testConfig } from '../agent/helpers.ts';
import { startLiveGateway, tmpDir, type LiveGateway } from './helpers.ts';
import { LATIN1, REPLY, SHIFT_JIS, simpleMessage } from './fixtures.ts';

const FROM_QUOTED = `From: a@example.org\nTo: b@example.org\nSubject: quoting\nMessage-ID: <quote-1@example.org>\nDate: Tue, 05 Dec 2023 10:00:00 +0000\n\nFirst line\n>From the archive, a line that began with From.\nLast line\n`;

function mbox(messages: string[]): string {
  return messages.map((m) => `From MAILER-DAEMON Tue Dec  5 10:00:00 2023\n${m.replace(/\r\n/g, '\n').replace(/\n$/, '')}\n\n`).join('');
}

function sink() {
  let text = '';
  return { write: (s: string) => ((text += s), true), isTTY: false, get text() { return text; } };
}

/** Message n with text attachments: notes-n.txt, or notes-n-1.txt … notes-n-k.txt when it has k > 1. */
const withNote = (n: number, attachments = 1) =>
  [
    `From: Sender ${n} <sender${n}@example.net>`, 'To: jane.doe@example.org', `Subject: Notes ${n}`,
    `Date: Thu, 23 Nov 2023 10:${String(n).padStart(2, '0')}:00 +0000`, `Message-ID: <att-${n}@example.net>`, 'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b"', '', '--b', 'Content-Type: text/plain; charset=utf-8', '', `Message ${n} has notes attached.`,
    ...Array.from({ length: attachments }, (_, k) => {
      const name = attachments === 1 ? `notes-${n}.txt` : `notes-${n}-${k + 1}.txt`;
      return ['--b', `Content-Type: text/plain; name="${name}"`, `Content-Disposition: attachment; filename="${name}"`, '', `Attachment ${name}: quarterly figures.`];
    }).flat(),
    '--b--', '',
  ].join('\r\n');

/** A folder holding one mbox of n messages with attachments. */
function notesMbox(n: number, attachments = 1): string {
  const dir = tmpDir('memex-import-att-');
  fs.writeFileSync(path.join(dir, 'Notes.mbox'), mbox(Array.from({ length: n }, (_, i) => withNote(i + 1, attachments))));
  return dir;
}

/** A listening gateway with the file route, and the real gateway client for it. */
async function fileGateway() {
  const gw = await startTestGateway({ files: {} });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const real = createGatewayClient({ baseUrl: `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`, authToken: TEST_TOKEN });
  return { gw, real };
}

let live: LiveGateway;
beforeAll(async () => {
  live = await startLiveGateway();
});
afterAll(async () => {
  await live?.close();
});

describe('memex import mail', () => {
  it('splits mbox files, undoing >From quoting', async () => {
    const dir = tmpDir('memex-mbox-');
    const file = path.join(dir, 'Inbox.mbox');
    fs.writeFileSync(file, mbox([LATIN1, FROM_QUOTED, REPLY]));
    const got: string[] = [];
    for await (const m of readMbox(file, 'Inbox')) got.push(m.bytes.toString('latin1'));
    expect(got).toHaveLength(3);
    expect(got[1]).toContain('\nFrom the archive, a line that began with From.\n');
    expect(got[2]).toMatch(/^From: "Doe, Jane"/);
  });

  it('imports an mbox and a Maildir tree into the gateway; a second import is all duplicates', async () => {
    const dir = tmpDir('memex-import-');
    fs.writeFileSync(path.join(dir, 'Archive.mbox'), mbox([LATIN1, FROM_QUOTED, ...Array.from({ length: 600 }, (_, i) => simpleMessage(5000 + i))]));
    const md = path.join(dir, 'Maildir');
    for (const sub of ['cur', 'new', 'tmp', '.Work/cur', '.Work/new', '.Work/tmp']) fs.mkdirSync(path.join(md, sub), { recursive: true });
    fs.writeFileSync(path.join(md, 'cur', '1700000000.M1.host:2,S'), SHIFT_JIS);
    fs.writeFileSync(path.join(md, 'new', '1700000001.M2.host'), REPLY);
    fs.writeFileSync(path.join(md, '.Work', 'cur', '1700000002.M3.host:2,'), simpleMessage(9001));
    fs.writeFileSync(path.join(md, '.Work', 'new', '1700000003.M4.host'), 'garbage without headers\u0000');

    // The same message (one Message-ID, one body) in the mbox and in the Maildir, with different headers.
    fs.writeFileSync(path.join(md, '.Work', 'cur', '1700000005.M5.host:2,S'), `Status: RO\r\nX-Folder: Work\r\n${simpleMessage(5001)}`);
    const env = { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(dir, 'state.json') };
    const run = async () => {
      const o = sink();
      const e = sink();
      const code = await runMailImport(['mail', dir, '--url', live.url, '--token', TEST_TOKEN, '--batch', '50'], { out: o, err: e, env });
      return { code, out: o.text, err: e.text };
    };
    const docs = async () =>
      (await live.gw.db.query<{ source_id: string; text: string; metadata: any; version_number: number; is_active_version: boolean }>(
        `SELECT d.external_id AS source_id, d.text, d.metadata, d.version_number, d.is_active_version FROM documents d WHERE d.source_type = 'email_local'`,
      )).rows;

    const first = await run();
    expect(first.code).toBe(1); // one unreadable message
    expect(first.out).toMatch(/^mail import: 5\d\d messages read, \d+ accepted/m);
    // 607 read = 605 new + 1 duplicate (the second copy of msg-5001) + 1 unreadable.
    expect(first.out).toMatch(/done: 607 messages, 605 new, 1 duplicates, 0 rejected, 0 not reachable, 1 unreadable/);
    expect(first.err).toMatch(/1700000003\.M4\.host: /);
    const rows = await docs();
    expect(rows).toHaveLength(605);
    expect(rows.every((r) => r.version_number === 1)).toBe(true);
    const quoted = rows.find((r) => r.source_id === 'email:quote-1@example.org')!;
    expect(quoted.text).toContain('From the archive');
    // No folder in the document: a message is one logical message whichever folders hold it.
    expect(rows.find((r) => r.source_id === 'email:msg-9001@example.org')!.metadata.mailbox).toBeUndefined();

    // Unchanged: all duplicates, the files are not read again (only the unreadable one, which is reported again).
    const again = await run();
    expect(again.code).toBe(1);
    expect(again.out).toMatch(/done: 607 messages, 0 new, 606 duplicates \(606 in unchanged files, not read\), 0 rejected, 0 not reachable, 1 unreadable/);
    expect(await docs()).toHaveLength(605);

    // Without the manifest the gateway still answers duplicates: no new versions.
    const o3 = sink();
    await runMailImport(['mail', dir, '--url', live.url, '--token', TEST_TOKEN, '--rescan'], { out: o3, err: sink(), env });
    expect(o3.text).toMatch(/done: 607 messages, 0 new, 606 duplicates, 0 rejected/);
    expect((await docs()).every((r) => r.version_number === 1)).toBe(true);

    // A changed file is read and sent again (a new version); a vanished one is forgotten; flags (a rename) change nothing.
    const changed = path.join(md, '.Work', 'cur', '1700000002.M3.host:2,');
    fs.writeFileSync(changed, simpleMessage(9001, { body: 'The corrected text of message 9001.' }));
    fs.rmSync(path.join(md, 'cur', '1700000000.M1.host:2,S'));
    fs.renameSync(path.join(md, 'new', '1700000001.M2.host'), path.join(md, 'cur', '1700000001.M2.host:2,S'));
    const fourth = await run();
    // The changed message is an update, as the coverage line counts it (issue 46: "1 new" beside "1 updated").
    expect(fourth.out).toMatch(/coverage of .*: 606 in the source: 604 stored \(1 updated\)/);
    expect(fourth.out).toMatch(/done: 606 messages, 0 new, 1 updated \(a new version\), 604 duplicates \(604 in unchanged files, not read\), 0 rejected, 0 not reachable, 1 unreadable/);
    const after = await docs();
    expect(after.filter((r) => r.source_id === 'email:msg-9001@example.org' && r.is_active_version).map((r) => r.text)).toEqual(['The corrected text of message 9001.']);
    const state = JSON.parse(fs.readFileSync(env.MEMEX_MAIL_IMPORT_STATE, 'utf8'));
    const keys = Object.keys(state.gateways[live.url].sources);
    expect(keys.some((k) => k.includes('1700000000.M1'))).toBe(false);

    // A server that does not hold what the manifest names (new data directory): the manifest is not trusted.
    state.gateways[live.url].confirm = ['00000000-0000-4000-8000-000000000000'];
    fs.writeFileSync(env.MEMEX_MAIL_IMPORT_STATE, JSON.stringify(state));
    const fifth = await run();
    expect(fifth.out).toMatch(/done: 606 messages, 0 new, 605 duplicates, 0 rejected/);
    expect(fifth.out).not.toMatch(/unchanged files/);
  });

  it('sends the next batch while the last one\'s attachments upload, and counts every attachment', async () => {
    const dir = notesMbox(6);

    // A gateway with the file route, and the real client with each upload held until the next batch has been
    // sent (or 5 s, so an importer that waits for the uploads fails this test instead of hanging).
    const { gw, real } = await fileGateway();
    const events: string[] = [];
    let nextBatchSent!: () => void;
    const secondBatch = new Promise<void>((r) => (nextBatchSent = r));
    const gateway: GatewayClient = {
      ...real,
      async submitBatch<T>(docs: object[]) {
        events.push(`batch of ${docs.length}`);
        if (events.filter((e) => e.startsWith('batch')).length === 2) nextBatchSent();
        return real.submitBatch<T>(docs);
      },
      async uploadFile<T>(...args: Parameters<GatewayClient['uploadFile']>) {
        await Promise.race([secondBatch, new Promise((r) => setTimeout(r, 5000))]);
        events.push('upload');
        return real.uploadFile<T>(...args);
      },
      async uploadFiles<T>(files: Parameters<GatewayClient['uploadFiles']>[0]) {
        await Promise.race([secondBatch, new Promise((r) => setTimeout(r, 5000))]);
        events.push(`upload of ${files.length}`);
        return real.uploadFiles<T>(files);
      },
    };
    const problems: string[] = [];
    const sum = await importMail(await discoverSources(dir), { gateway, config: testConfig(), batchSize: 3, concurrency: 1, onProblem: (l, r) => problems.push(`${l}: ${r}`) });
    expect(problems).toEqual([]);
    // The second batch went before any attachment of the first was uploaded.
    expect(events.slice(0, 2)).toEqual(['batch of 3', 'batch of 3']);
    // Each batch's three attachments went in one request.
    expect(events.filter((e) => e.startsWith('upload'))).toEqual(['upload of 3', 'upload of 3']);
    expect(sum).toMatchObject({ messages: 6, accepted: 6, rejected: 0, retryLater: 0, attachmentsUploaded: 6 });
    const files = await gw.db.query<{ title: string }>(`SELECT title FROM documents WHERE title LIKE 'notes-%'`);
    expect(files.rows.map((r) => r.title).sort()).toEqual(Array.from({ length: 6 }, (_, i) => `notes-${i + 1}.txt`).sort());
    await gw.close();
  });

  it('signed mail: the signature part (PGP signature.asc, S/MIME smime.p7s) is no document and no attachment of its message', async () => {
    const signed = (n: number, sig: string[]) =>
      [
        `From: Signer <signer@example.net>`, 'To: jane.doe@example.org', `Subject: Signed ${n}`,
        `Date: Thu, 23 Nov 2023 11:0${n}:00 +0000`, `Message-ID: <signed-${n}@example.net>`, 'MIME-Version: 1.0',
        'Content-Type: multipart/signed; boundary="s"; protocol="application/pgp-signature"', '',
        '--s', 'Content-Type: multipart/mixed; boundary="m"', '',
        '--m', 'Content-Type: text/plain; charset=utf-8', '', `Signed message ${n} with the plan attached.`,
        '--m', `Content-Type: text/plain; name="plan-${n}.txt"`, `Content-Disposition: attachment; filename="plan-${n}.txt"`, '', `The plan ${n}: orchards.`,
        '--m--', '', '--s', ...sig, '--s--', '',
      ].join('\r\n');
    const pgp = ['Content-Type: application/pgp-signature; name="signature.asc"', 'Content-Disposition: attachment; filename="signature.asc"', '', '-----BEGIN PGP SIGNATURE-----', '', 'iQEzBAEBCAAdFiEE', '-----END PGP SIGNATURE-----'];
    const smime = ['Content-Type: application/pkcs7-signature; name="smime.p7s"', 'Content-Transfer-Encoding: base64', 'Content-Disposition: attachment; filename="smime.p7s"', '', 'MIAGCSqGSIb3DQEHAqCAMIACAQExDzANBglghkgBZQMEAgEFADCABgkqhkiG9w0BBwEAAKCAMIIE'];
    const legacy = ['Content-Type: application/x-pkcs7-signature; name="smime.p7s"', 'Content-Transfer-Encoding: base64', '', 'MIAGCSqGSIb3DQEHAqCAMIACAQEx'];
    const dir = tmpDir('memex-import-signed-');
    fs.writeFileSync(path.join(dir, 'Signed.mbox'), mbox([signed(1, pgp), signed(2, smime), signed(3, legacy)]));
    const { gw, real } = await fileGateway();
    const sum = await importMail(await discoverSources(dir), { gateway: real, config: testConfig(), batchSize: 3, concurrency: 1 });
    expect(sum).toMatchObject({ messages: 3, accepted: 3, rejected: 0, attachmentsUploaded: 3 });
    const docs = await gw.db.query<{ title: string; attachment_count: number; attachments: { filename: string }[] | null }>(
      `SELECT title, attachment_count, metadata->'attachments' AS attachments FROM documents WHERE is_active_version ORDER BY title`,
    );
    expect(docs.rows.map((r) => r.title)).toEqual(['Signed 1', 'Signed 2', 'Signed 3', 'plan-1.txt', 'plan-2.txt', 'plan-3.txt']);
    for (const r of docs.rows.filter((r) => r.title.startsWith('Signed'))) {
      expect(r.attachment_count).toBe(1);
      expect(r.attachments!.map((a) => a.filename)).toEqual([`plan-${r.title.slice(-1)}.txt`]);
    }
    await gw.close();
  });

  it('sends at most --concurrency × 4 attachment upload requests at once, however many batches are unfinished', async () => {
    // Two messages per batch with 20 attachments each: 40 files, two requests per batch (at most 32 files each).
    const dir = notesMbox(12, 20);
    const { gw, real } = await fileGateway();
    // Each request is held until six are under way (what six unfinished batches of two would start) or 1 s passed.
    let uploading = 0;
    let most = 0;
    const held = async <R>(send: () => Promise<R>): Promise<R> => {
      most = Math.max(most, ++uploading);
      for (let waited = 0; uploading < 6 && waited < 1000; waited += 10) await new Promise((r) => setTimeout(r, 10));
      try {
        return await send();
      } finally {
        uploading--;
      }
    };
    const gateway: GatewayClient = {
      ...real,
      uploadFile: (...args) => held(() => real.uploadFile(...args)),
      uploadFiles: (files) => held(() => real.uploadFiles(files)),
    };
    const sum = await importMail(await discoverSources(dir), { gateway, config: testConfig(), batchSize: 2, concurrency: 1 });
    expect(sum).toMatchObject({ messages: 12, accepted: 12, rejected: 0, retryLater: 0, attachmentsUploaded: 240 });
    expect(most).toBeGreaterThan(0);
    expect(most).toBeLessThanOrEqual(4);
    await gw.close();
  });

  it('token from DATA_DIR/auth-token when no flag or variable is given; usage errors exit 2', async () => {
    const dataDir = tmpDir('memex-data-');
    fs.writeFileSync(path.join(dataDir, 'auth-token'), TEST_TOKEN + '\n');
    const dir = tmpDir('memex-import-one-');
    fs.writeFileSync(path.join(dir, 'one.mbox'), mbox([simpleMessage(9100)]));
    const out = sink();
    const code = await runMailImport(['mail', dir, '--url', live.url], { out: out, err: sink(), env: { HOME: process.env.HOME, DATA_DIR: dataDir } });
    expect(code).toBe(0);
    expect(out.text).toMatch(/1 new/);
    expect(await runMailImport(['mail'], { out: sink(), err: sink(), env: {} })).toBe(2);
    expect(await runMailImport(['mail', '/no/such/path'], { out: sink(), err: sink(), env: {} })).toBe(2);
    expect(await runMailImport(['mail', dir, '--bogus'], { out: sink(), err: sink(), env: {} })).toBe(2);
  });
});
