/**
 * `memex import mail` (runMailImport) into a LIVE gateway: an mbox file (with ">From " quoting) and a
 * Maildir with a Maildir++ subfolder; the same payload and idempotency as the collector, so a second
 * import is all duplicates; plain progress lines when not on a TTY; usage errors.
 */
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readMbox, runMailImport } from '../../src/agent/collectors/email/import-cli.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
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

    const out = sink();
    const err = sink();
    const code = await runMailImport(['mail', dir, '--url', live.url, '--token', TEST_TOKEN], { stdout: out, stderr: err, env: { HOME: process.env.HOME } });
    expect(code).toBe(1); // one unreadable message
    expect(out.text).toMatch(/^mail import: 500 messages read/m);
    expect(out.text).toMatch(/done: 606 messages, 605 new, 0 duplicates, 0 rejected, 0 not reachable, 1 unreadable/);
    expect(err.text).toMatch(/1700000003\.M4\.host: /);

    const rows = await live.gw.db.query<{ source_id: string; text: string; metadata: any }>(
      `SELECT s.source_id, d.text, d.metadata FROM ingest_submissions s JOIN documents d ON d.doc_id = s.result_doc_id WHERE s.source_type = 'email_local'`,
    );
    expect(rows.rows).toHaveLength(605);
    const quoted = rows.rows.find((r) => r.source_id === 'email:quote-1@example.org')!;
    expect(quoted.text).toContain('From the archive');
    expect(rows.rows.find((r) => r.source_id === 'email:msg-9001@example.org')!.metadata.mailbox).toBe('Work');
    expect(rows.rows.find((r) => r.source_id === 'email:sjis-1@example.jp')!.metadata.mailbox).toBe('INBOX');

    const again = sink();
    const code2 = await runMailImport(['mail', dir, '--url', live.url, '--token', TEST_TOKEN], { stdout: again, stderr: sink(), env: { HOME: process.env.HOME } });
    expect(code2).toBe(1);
    expect(again.text).toMatch(/done: 606 messages, 0 new, 605 duplicates/);
    const count = await live.gw.db.query<{ n: number }>(`SELECT count(DISTINCT result_doc_id)::int AS n FROM ingest_submissions WHERE source_type = 'email_local'`);
    expect(count.rows[0].n).toBe(605);
  });

  it('token from DATA_DIR/auth-token when no flag or variable is given; usage errors exit 2', async () => {
    const dataDir = tmpDir('memex-data-');
    fs.writeFileSync(path.join(dataDir, 'auth-token'), TEST_TOKEN + '\n');
    const dir = tmpDir('memex-import-one-');
    fs.writeFileSync(path.join(dir, 'one.mbox'), mbox([simpleMessage(9100)]));
    const out = sink();
    const code = await runMailImport(['mail', dir, '--url', live.url], { stdout: out, stderr: sink(), env: { HOME: process.env.HOME, DATA_DIR: dataDir } });
    expect(code).toBe(0);
    expect(out.text).toMatch(/1 new/);
    expect(await runMailImport(['mail'], { stdout: sink(), stderr: sink(), env: {} })).toBe(2);
    expect(await runMailImport(['mail', '/no/such/path'], { stdout: sink(), stderr: sink(), env: {} })).toBe(2);
    expect(await runMailImport(['mail', dir, '--bogus'], { stdout: sink(), stderr: sink(), env: {} })).toBe(2);
  });
});
