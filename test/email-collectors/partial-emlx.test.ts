/**
 * `.partial.emlx` (issue 21 item 1): Mail.app leaves the bodies of some attachments out of the message
 * (the part keeps its headers plus X-Apple-Content-Length) and keeps each one as a file under the
 * mailbox's `Attachments/<message number>/<IMAP part number>/`. Both the parse route's function and the
 * local collector must put them back, and report the ones that are not there.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseEmailFile } from '../../src/mail/parse.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import type { AgentServer } from '../../src/agent/server.ts';
import { CRLF, emlx } from './fixtures.ts';
import { auth, agentWith, mailConfig, splitGatewayClient, startLiveGateway, startUploadRecorder, tmpDir, type LiveGateway } from './helpers.ts';

const PDF = Buffer.concat([Buffer.from('%PDF-1.4\n'), crypto.randomBytes(26_000)]);
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), crypto.randomBytes(2_000)]);

/**
 * Parts: 1 text; 2 PDF (left out); 3 multipart/related with 3.1 HTML and 3.2 an image (left out, a
 * filename Mail.app stored under another name); 4 a text attachment left out whose file is gone.
 */
const PARTIAL = CRLF(`From: Alice Smith <alice@example.com>
To: jane.doe@example.org
Subject: Scans from the notary
Date: Mon, 04 Mar 2024 10:00:00 +0100
Message-ID: <scans-9@example.com>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="outer-b"

--outer-b
Content-Type: text/plain; charset=utf-8

The contract and the stamp are attached.
--outer-b
Content-Type: application/pdf; name="contract.pdf"
Content-Disposition: attachment;
 filename="contract.pdf"
Content-Transfer-Encoding: base64
X-Apple-Content-Length: ${Math.ceil(PDF.length / 3) * 4}

--outer-b
Content-Type: multipart/related; boundary=inner-b

--inner-b
Content-Type: text/html; charset=utf-8

<p>Stamp: <img src="cid:stamp@x"></p>
--inner-b
Content-Type: image/png; name="stamp/1.png"
Content-ID: <stamp@x>
Content-Disposition: inline; filename="stamp/1.png"
Content-Transfer-Encoding: base64
X-Apple-Content-Length: 2700

--inner-b--
--outer-b
Content-Type: text/plain; name="notes.txt"
Content-Disposition: attachment; filename="notes.txt"
Content-Transfer-Encoding: base64
X-Apple-Content-Length: 20

--outer-b--
`);

function layOut(root: string): string {
  const box = path.join(root, 'V10', 'ACCOUNT', 'INBOX.mbox', 'UUID-1', 'Data');
  const file = path.join(box, 'Messages', '4711.partial.emlx');
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, emlx(PARTIAL));
  fs.mkdirSync(path.join(box, 'Attachments', '4711', '2'), { recursive: true });
  fs.writeFileSync(path.join(box, 'Attachments', '4711', '2', 'contract.pdf'), PDF);
  fs.mkdirSync(path.join(box, 'Attachments', '4711', '3.2'), { recursive: true });
  fs.writeFileSync(path.join(box, 'Attachments', '4711', '3.2', 'stamp:1.png'), PNG);
  return file;
}

describe('.partial.emlx attachments', () => {
  let root: string;
  let file: string;
  beforeAll(() => {
    root = tmpDir('memex-partial-');
    file = layOut(root);
  });
  afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

  it('the parse function reads the attachments from Attachments/<message>/<part>/ and lists the missing one', async () => {
    const m = await parseEmailFile(file, [root]);
    const byName = Object.fromEntries(m.attachments.map((a) => [a.filename, a.size]));
    expect(byName['contract.pdf']).toBe(PDF.length);
    expect(byName['stamp/1.png']).toBe(PNG.length);
    expect(m.bodyPlainText).toContain('The contract and the stamp are attached.');
    expect(m.bodyHTML).toContain('cid:stamp@x');
    expect(m.attachmentsMissing).toEqual([{ part: '4', filename: 'notes.txt', declared_size: 20, reason: expect.stringContaining('Attachments/4711/4/') }]);
  });

  it('the collector parse gets the same bytes, byte for byte', async () => {
    const msg = await parseCollectedMessage(fs.readFileSync(file), { emlx: true, path: file });
    const pdf = msg.attachments.find((a) => a.filename === 'contract.pdf')!;
    expect(pdf.content.equals(PDF)).toBe(true);
    expect(msg.attachments.find((a) => a.contentId === '<stamp@x>')!.content.equals(PNG)).toBe(true);
    expect(msg.attachmentsMissing.map((a) => a.part)).toEqual(['4']);
  });

  it('an attachment file that is a symlink out of the mailbox is not read', async () => {
    const other = tmpDir('memex-partial-out-');
    const box = path.join(other, 'Box.mbox', 'Data');
    const f = path.join(box, 'Messages', '12.partial.emlx');
    fs.mkdirSync(path.dirname(f), { recursive: true });
    fs.writeFileSync(f, emlx(PARTIAL));
    fs.mkdirSync(path.join(box, 'Attachments', '12', '2'), { recursive: true });
    fs.writeFileSync(path.join(other, 'secret.pdf'), 'secret');
    fs.symlinkSync(path.join(other, 'secret.pdf'), path.join(box, 'Attachments', '12', '2', 'contract.pdf'));
    const msg = await parseCollectedMessage(fs.readFileSync(f), { emlx: true, path: f });
    expect(msg.attachmentsMissing.map((a) => a.part)).toEqual(['2', '3.2', '4']);
    fs.rmSync(other, { recursive: true, force: true });
  });
});

describe('.partial.emlx through the local collector', () => {
  let live: LiveGateway;
  let recorder: Awaited<ReturnType<typeof startUploadRecorder>>;
  let app: AgentServer;
  let root: string;
  beforeAll(async () => {
    live = await startLiveGateway();
    recorder = await startUploadRecorder();
    root = tmpDir('memex-partial-col-');
    layOut(root);
    const config = mailConfig(tmpDir('memex-partial-state-'), { sources: [{ id: 'apple', type: 'local', source_path: root }] }, live.url);
    app = await agentWith(config, splitGatewayClient(live.url, recorder.url));
  });
  afterAll(async () => {
    await app?.close();
    await recorder?.close();
    await live?.close();
  });

  it('uploads the restored attachments with their content and warns about the missing one', async () => {
    const res = await app.inject({ method: 'POST', url: '/v1/collectors/email_local:run', headers: auth, payload: { simulate_path: root } });
    expect(res.statusCode).toBe(200);
    const json = res.json();
    expect(json.stats.documents_accepted).toBe(1);
    expect(json.warnings).toEqual([expect.stringMatching(/4711\.partial\.emlx: part 4 \(notes\.txt\)/)]);
    const pdf = recorder.uploads.find((u) => u.meta.filename === 'contract.pdf')!;
    expect(pdf.data.equals(PDF)).toBe(true);
    expect(pdf.meta.size).toBe(PDF.length);
    const r = await live.gw.db.query<{ metadata: any }>(
      `SELECT d.metadata FROM documents d JOIN ingest_submissions s ON s.result_doc_id = d.doc_id WHERE s.source_id = 'email:scans-9@example.com'`,
    );
    expect(r.rows[0].metadata.attachments_missing).toEqual([expect.objectContaining({ part: '4', filename: 'notes.txt' })]);
  });
});
