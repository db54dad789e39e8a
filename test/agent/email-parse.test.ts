import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { parseEmailBytes, splitEmlx } from '../../src/mail/parse.ts';
import { auth, testConfig } from './helpers.ts';
import { ALTERNATIVE, emlx, LATIN1, NO_DATE_NO_ID, SHIFT_JIS, SHIFT_JIS_TEXT, WITH_ATTACHMENTS } from './email-fixtures.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-emlx-'));
const mailRoot = path.join(tmp, 'Mail', 'V10');
const extraRoot = path.join(tmp, 'exports');
const outside = path.join(tmp, 'outside');
let app: AgentServer;

function put(dir: string, name: string, data: Buffer | string): string {
  fs.mkdirSync(dir, { recursive: true });
  const p = path.join(dir, name);
  fs.writeFileSync(p, data);
  return p;
}

async function parse(p: string) {
  return app.inject({ method: 'POST', url: '/v1/email/parse', headers: auth, payload: { path: p } });
}

beforeAll(async () => {
  put(mailRoot, '101.emlx', emlx(ALTERNATIVE));
  put(mailRoot, '102.emlx', emlx(Buffer.from(LATIN1, 'latin1')));
  put(mailRoot, '103.emlx', emlx(SHIFT_JIS));
  put(mailRoot, '104.emlx', emlx(WITH_ATTACHMENTS));
  put(mailRoot, '105.emlx', emlx(NO_DATE_NO_ID));
  put(mailRoot, '106.emlx', emlx(ALTERNATIVE, { declaredLength: 17 })); // wrong count, trailer present
  put(mailRoot, '107.emlx', emlx(ALTERNATIVE.slice(0, 300), { declaredLength: Buffer.byteLength(ALTERNATIVE), plist: false }));
  put(mailRoot, '108.emlx', Buffer.from([0x00, 0xff, 0x13, 0x37, 0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00]));
  put(mailRoot, '109.emlx', '');
  put(mailRoot, 'notes.txt', ALTERNATIVE);
  put(extraRoot, 'export.eml', LATIN1);
  put(outside, 'secret.emlx', emlx(ALTERNATIVE));
  fs.symlinkSync(path.join(outside, 'secret.emlx'), path.join(mailRoot, 'link.emlx'));
  app = await createAgentServer(
    testConfig({
      modules: {
        mail: { enabled: true, sources: [{ id: 'apple-mail', type: 'local', source_path: path.join(tmp, 'Mail') }], allowed_roots: [extraRoot] },
      },
    }),
    { logger: false },
  );
});
afterAll(async () => {
  await app.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe('POST /v1/email/parse (.emlx and .eml)', () => {
  it('parses multipart/alternative with quoted-printable text and base64 HTML', async () => {
    const res = await parse(path.join(mailRoot, '101.emlx'));
    expect(res.statusCode).toBe(200);
    const m = res.json();
    expect(m.messageId).toBe('<stmt-2023-11@power-company.example>');
    expect(m.subject).toBe('Your November statement is ready');
    expect(m.from).toEqual(['billing@power-company.example']);
    expect(m.to).toEqual(['jane.doe@example.org', 'bob@example.org']);
    expect(m.cc).toEqual(['accounts@example.org']);
    expect(m.bcc).toEqual([]);
    expect(m.date).toBe('2023-11-14T17:12:00Z');
    expect(m.inReplyTo).toBe('<prev-1@example.org>');
    expect(m.references).toEqual(['<root-0@example.org>', '<prev-1@example.org>']);
    expect(m.listUnsubscribe).toBe('<mailto:unsubscribe@power-company.example>, <https://power-company.example/u/123>');
    // Quoted-printable decoded, soft line break joined, UTF-8 é restored.
    expect(m.bodyPlainText).toContain('Dear Jané, your balance of $1,234.56 is due on 1 December. Call 617-555-0123');
    expect(m.bodyHTML).toContain('<b>$1,234.56</b>');
    expect(m.attachments).toEqual([]);
    expect(m.headers['message-id']).toBe('<stmt-2023-11@power-company.example>');
    expect(m.headers.subject).toBe('Your November statement is ready');
    expect(Object.keys(m.headers).every((k: string) => k === k.toLowerCase())).toBe(true);
  });

  it('decodes ISO-8859-1 and Shift_JIS bodies and encoded subjects', async () => {
    const latin = (await parse(path.join(mailRoot, '102.emlx'))).json();
    expect(latin.subject).toBe('Grüße aus München');
    expect(latin.bodyPlainText.trim()).toBe('Schöne Grüße aus München!');
    expect(latin.from).toEqual(['juergen@example.de']);
    const sjis = (await parse(path.join(mailRoot, '103.emlx'))).json();
    expect(sjis.subject).toBe('会議のお知らせ');
    expect(sjis.bodyPlainText.trim()).toBe(SHIFT_JIS_TEXT);
    expect(sjis.date).toBe('2023-11-16T01:00:00Z');
  });

  it('lists attachments (filename, type, content id, size, index)', async () => {
    const m = (await parse(path.join(mailRoot, '104.emlx'))).json();
    expect(m.bodyHTML).toContain('Order #A-1001');
    expect(m.bodyPlainText).toBeNull();
    expect(m.attachments).toHaveLength(2);
    const [logo, pdf] = m.attachments;
    expect(logo).toMatchObject({ filename: 'logo.png', mimeType: 'image/png', contentId: '<logo@shop>', partIndex: 0 });
    expect(logo.size).toBe(Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==', 'base64').length);
    expect(pdf).toMatchObject({ filename: 'receipt.pdf', mimeType: 'application/pdf', contentId: null, partIndex: 1 });
    expect(pdf.size).toBeGreaterThan(40);
  });

  it('gives null messageId and the .emlx plist date when the headers are missing', async () => {
    const m = (await parse(path.join(mailRoot, '105.emlx'))).json();
    expect(m.date).toBe('2023-11-14T22:13:20Z');
    expect(m.dateSource).toBe('emlx_plist');
    expect(m.messageId).toBeNull();
    expect(m.subject).toBe('lunch?');
    expect(m.bodyPlainText).toContain('free for lunch');
  });

  it('copes with a wrong byte count when the plist trailer is there', async () => {
    const res = await parse(path.join(mailRoot, '106.emlx'));
    expect(res.statusCode).toBe(200);
    expect(res.json().bodyHTML).toContain('$1,234.56');
    expect(res.json().bodyHTML).not.toContain('plist');
    const split = splitEmlx(fs.readFileSync(path.join(mailRoot, '106.emlx')));
    expect(split.lengthMismatch).toBe(true);
    expect(split.message.toString()).toBe(ALTERNATIVE);
  });

  it('answers 4xx, never 500, for truncated, garbage and empty files', async () => {
    for (const name of ['107.emlx', '108.emlx', '109.emlx']) {
      const res = await parse(path.join(mailRoot, name));
      expect(res.statusCode, name).toBe(422);
      expect(typeof res.json().error).toBe('string');
    }
    expect((await parse(path.join(mailRoot, '107.emlx'))).json().error).toMatch(/Truncated \.emlx file/);
  });

  it('parses a plain .eml file from an allowed root', async () => {
    const res = await parse(path.join(extraRoot, 'export.eml'));
    expect(res.statusCode).toBe(200);
    expect(res.json().messageId).toBe('<latin1-1@example.de>');
  });

  it('confines paths to the configured mail roots', async () => {
    const out = await parse(path.join(outside, 'secret.emlx'));
    expect(out.statusCode).toBe(403);
    expect(out.json()).toEqual({ error: 'Path is outside the configured mail roots' });
    expect((await parse(path.join(mailRoot, 'link.emlx'))).statusCode).toBe(403); // symlink escaping the root
    expect((await parse(`${mailRoot}/../../outside/secret.emlx`)).statusCode).toBe(403);
    expect((await parse('/etc/passwd')).statusCode).toBe(403);
    expect((await parse(path.join(outside, 'nope.emlx'))).statusCode).toBe(403); // does not reveal existence
    expect((await parse(path.join(mailRoot, 'missing.emlx'))).statusCode).toBe(404);
    expect((await parse(path.join(mailRoot, 'notes.txt'))).statusCode).toBe(400);
    const noPath = await app.inject({ method: 'POST', url: '/v1/email/parse', headers: auth, payload: {} });
    expect(noPath.statusCode).toBe(400);
    expect(noPath.json()).toEqual({ error: 'Missing required field: path' });
  });

  it('answers 503 on every email route when the mail module is disabled', async () => {
    const off = await createAgentServer(testConfig(), { logger: false });
    try {
      for (const route of ['parse', 'metadata', 'classify-intent', 'is-noise', 'redact-pii']) {
        const res = await off.inject({ method: 'POST', url: `/v1/email/${route}`, headers: auth, payload: { path: path.join(mailRoot, '101.emlx'), text: 'x', subject: 's', body: 'b' } });
        expect(res.statusCode, route).toBe(503);
        expect(res.json()).toEqual({ error: 'Email module is disabled' });
      }
    } finally {
      await off.close();
    }
  });

  it('parses bytes directly for the collectors', async () => {
    const m = await parseEmailBytes(emlx(WITH_ATTACHMENTS), { emlx: true });
    expect(m.attachments.map((a) => a.filename)).toEqual(['logo.png', 'receipt.pdf']);
  });
});
