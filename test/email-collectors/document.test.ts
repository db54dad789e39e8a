/**
 * The §2.6 email document built from real-shaped messages: people, thread, timestamp, metadata,
 * redaction, the whole body with its parts and the idempotency keys, recomputed here from their definitions.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ALL_REDACTIONS } from '../../src/mail/analyze.ts';
import { emailBodyText } from '../../src/mail/body-text.ts';
import { attachmentUploads, buildEmailDocument, uuidFromName } from '../../src/mail/document.ts';
import { emailThreadId } from '../../src/mail/thread.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { ALTERNATIVE, LATIN1, NO_DATE_NO_ID, REPLY, SHIFT_JIS, SHIFT_JIS_TEXT, WITH_ATTACHMENTS, emlx } from './fixtures.ts';

const sha = (s: string | Buffer) => crypto.createHash('sha256').update(s).digest('hex');
const local = { sourceType: 'email_local' as const, prefix: 'email', redaction: ALL_REDACTIONS, mailbox: 'INBOX' };

async function build(raw: string, src = local) {
  const msg = await parseCollectedMessage(emlx(raw), { emlx: true });
  return { msg, built: buildEmailDocument(msg, src) };
}

describe('email document payload (spec §2.6)', () => {
  it('people: From and Sender are senders, To/Cc/Bcc recipients; lower-cased, once per role (the author in Cc is both), comma in a quoted name kept', async () => {
    const { built } = await build(REPLY);
    expect(built.document.people).toEqual([
      { identifier: 'jane.doe@example.org', identifier_type: 'email', role: 'sender', display_name: 'Doe, Jane' },
      { identifier: 'assistant@example.org', identifier_type: 'email', role: 'sender', display_name: null },
      { identifier: 'alice@example.com', identifier_type: 'email', role: 'recipient', display_name: 'Smith, Alice' },
      { identifier: 'bob@example.org', identifier_type: 'email', role: 'recipient', display_name: null },
      { identifier: 'jane.doe@example.org', identifier_type: 'email', role: 'recipient', display_name: null },
      { identifier: 'carol@example.net', identifier_type: 'email', role: 'recipient', display_name: 'Carol' },
      { identifier: 'archive@example.org', identifier_type: 'email', role: 'recipient', display_name: null },
    ]);
  });

  it('body: the whole text as written (quote and signature kept, marked as parts), PII redacted, hash taken before redaction', async () => {
    const { built } = await build(REPLY);
    const whole =
      'Thanks Alice, Tuesday works. My number is 617-867-5309.\n\n--\nJane Doe\nHead of Finance\n\n' +
      'On Sun, 19 Nov 2023 at 10:00, Alice Smith <alice@example.com> wrote:\n> Can we meet on Tuesday about the budget?\n> Alice';
    const stored = whole.replace('617-867-5309', '[PHONE_REDACTED]').replace('alice@example.com', '[EMAIL_REDACTED]');
    expect(built.document.content).toEqual({ mime_type: 'text/plain', data: stored, encoding: null });
    expect(built.textHash).toBe(sha(whole));
    expect(built.document.metadata.content_hash).toBe(sha(whole));
    expect(built.idempotencyKey).toBe(sha(`email_local:email:reply-2@example.org:${sha(whole)}`));
    expect(built.document.source_id).toBe('email:reply-2@example.org');
    expect(built.document.canonical_uri).toBe('message://reply-2%40example.org');
    // Parts are spans of the stored (redacted) text.
    const parts = built.document.metadata.body_parts as { kind: string; start: number; end: number }[];
    expect(parts.map((p) => [p.kind, stored.slice(p.start, p.end)])).toEqual([
      ['signature', '--\nJane Doe\nHead of Finance'],
      ['attribution', 'On Sun, 19 Nov 2023 at 10:00, Alice Smith <[EMAIL_REDACTED]> wrote:'],
      ['quote', '> Can we meet on Tuesday about the budget?\n> Alice'],
    ]);
    // The snippet is the reply's own words.
    expect(built.document.metadata.snippet).toBe('Thanks Alice, Tuesday works. My number is [PHONE_REDACTED].');
  });

  it('thread: deterministic v5-shaped UUID from the conversation root (References[0]); title without Re:', async () => {
    const { built } = await build(REPLY);
    const external = `email-root:${sha('root-1@example.com')}`;
    const hash = crypto.createHash('sha256').update(external).digest();
    expect(built.document.thread_id).toBe(uuidFromName(external));
    const hex = built.document.thread_id!.replace(/-/g, '');
    expect(hex.slice(0, 12)).toBe(hash.subarray(0, 6).toString('hex'));
    expect(built.document.thread_id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(built.document.thread).toEqual({
      external_id: external,
      source_type: 'email',
      title: 'Budget review',
      participants: built.document.people,
      metadata: { root_message_id: 'root-1@example.com' },
    });
    // Same input, same id: a rebuild is byte-identical.
    expect(JSON.stringify((await build(REPLY)).built.document)).toBe(JSON.stringify(built.document));
  });

  it('a message without threading headers starts its own thread, rooted at itself', async () => {
    const { built } = await build(LATIN1);
    expect(built.messageId).not.toBeNull();
    expect(built.document.thread_id).toBe(emailThreadId(built.messageId!));
    expect(built.document.thread?.metadata).toEqual({ root_message_id: built.messageId });
  });

  it('content_timestamp is the Date header in UTC (type received); the original offset stays in metadata', async () => {
    const { built } = await build(REPLY); // Mon, 20 Nov 2023 08:05:00 +0900
    expect(built.document.content_timestamp).toBe('2023-11-19T23:05:00Z');
    expect(built.document.content_timestamp_type).toBe('received');
    expect(built.document.metadata.date_offset).toBe('+09:00');
  });

  it('metadata keys, intent and relevance; references normalised', async () => {
    const { built } = await build(ALTERNATIVE);
    const m = built.document.metadata;
    expect(m).toMatchObject({
      message_id: 'stmt-2023-11@power-company.example',
      subject: 'Your November statement is ready',
      in_reply_to: 'prev-1@example.org',
      references: ['root-0@example.org', 'prev-1@example.org'],
      has_attachments: false,
      attachment_count: 0,
      mailbox: 'INBOX',
      is_noise: true,
    });
    expect(m.intent).toEqual({ primary_intent: 'bill', confidence: 0.8, secondary_intents: [], extracted_entities: { amount: '$1,234.56' } });
    expect(m.relevance_score).toBe(0.2); // List-Unsubscribe makes it noise
    expect(built.document.relevance_score).toBe(0.2);
    expect(built.document.intent).toEqual(m.intent);
    expect(String(m.snippet)).toContain('[PHONE_REDACTED]');
    expect(String(m.snippet)).not.toContain('617-555');
  });

  it('charsets: ISO-8859-1 and Shift_JIS bodies and RFC 2047 subjects decode to the right text', async () => {
    expect((await build(LATIN1)).built.document.content.data).toBe('Schöne Grüße aus München!');
    expect((await build(LATIN1)).built.document.title).toBe('Grüße aus München');
    const sj = (await build(SHIFT_JIS)).built.document;
    expect(sj.content.data).toBe(SHIFT_JIS_TEXT);
    expect(sj.title).toBe('会議のお知らせ');
  });

  it('missing Message-ID: source id from a hash of subject and sender; timestamp from the .emlx plist, no canonical URI', async () => {
    const { built } = await build(NO_DATE_NO_ID);
    expect(built.messageId).toBeNull();
    expect(built.document.source_id).toBe(`email:${sha('lunch?|friend@example.net')}`);
    // No Date header: the .emlx property list's date-received (1700000000) dates it, and says so.
    expect(built.document.content_timestamp).toBe('2023-11-14T22:13:20Z');
    expect(built.document.metadata.date_source).toBe('emlx_plist');
    expect(built.document.canonical_uri).toBeNull();
  });

  it('HTML-only body becomes text; attachments give upload meta and email-attachment keys', async () => {
    const { msg, built } = await build(WITH_ATTACHMENTS);
    expect(built.document.content.data).toBe('Thanks! Order #A-1001 is paid.');
    expect(built.document.metadata).toMatchObject({ has_attachments: true, attachment_count: 2, body_source: 'html' });
    const ups = attachmentUploads(built, msg.attachments);
    const pdf = ups.find((u) => u.meta.filename === 'receipt.pdf')!;
    expect(pdf.meta).toMatchObject({
      source: 'email_local',
      path: 'email_local/receipt-77@shop.example.com/receipt.pdf',
      mime_type: 'application/pdf',
      size: pdf.data.length,
      sha256: sha(pdf.data),
      message_id: 'receipt-77@shop.example.com',
      intent: { primary_intent: 'receipt', confidence: 0.85 },
    });
    expect(pdf.idempotencyKey).toBe(`email-attachment:receipt-77@shop.example.com:${sha(pdf.data)}`);
    // Dated by its message, not by the upload (the server's content_timestamp of a file is its mtime).
    expect(built.document.content_timestamp).toBeTruthy();
    expect(pdf.meta.mtime).toBe(built.document.content_timestamp);
    const logo = ups.find((u) => u.meta.filename === 'logo.png')!;
    expect(logo.meta.content_id).toBe('logo@shop');
    // metadata.attachments in the shape of gateway spec §2.1, pointing at the uploaded files.
    const entries = built.document.metadata.attachments as Record<string, any>[];
    const pdfEntry = entries.find((e) => e.filename === 'receipt.pdf')!;
    expect(pdfEntry).toEqual({
      index: entries.indexOf(pdfEntry),
      kind: 'pdf',
      role: 'attachment',
      mime_type: 'application/pdf',
      size_bytes: pdf.data.length,
      filename: 'receipt.pdf',
      sha256: sha(pdf.data),
      source_ref: { path: pdf.meta.path, message_attachment_id: entries.indexOf(pdfEntry) },
    });
    const logoEntry = entries.find((e) => e.filename === 'logo.png')!;
    expect(logoEntry).toMatchObject({ kind: 'image', mime_type: 'image/png', source_ref: { path: logo.meta.path, content_id: 'logo@shop' } });
    expect(['inline', 'attachment']).toContain(logoEntry.role);
    expect(logo.meta).not.toHaveProperty('enrichment');
  });

  it('IMAP payload: source type email, prefix email_imap/<account>, internal date when Date is missing', async () => {
    const msg = await parseCollectedMessage(Buffer.from(NO_DATE_NO_ID));
    const b = buildEmailDocument(msg, { sourceType: 'email', prefix: 'email_imap/work', redaction: ALL_REDACTIONS, fallbackTimestamp: '2024-01-02T03:04:05.000Z' });
    expect(b.document.source_type).toBe('email');
    expect(b.document.source_id.startsWith('email_imap/work:')).toBe(true);
    expect(b.document.content_timestamp).toBe('2024-01-02T03:04:05.000Z');
  });

  it('redaction follows the source options (phones off keeps the number)', async () => {
    const msg = await parseCollectedMessage(emlx(REPLY), { emlx: true });
    const b = buildEmailDocument(msg, { ...local, redaction: { ...ALL_REDACTIONS, phones: false } });
    expect(b.document.content.data).toContain('617-867-5309');
    // The hash is of the unredacted text either way: same idempotency key.
    expect(b.idempotencyKey).toBe((await build(REPLY)).built.idempotencyKey);
  });
});

describe('body text (issue 40: whole, never cut)', () => {
  it('keeps forwarded/original-message blocks and boilerplate lines', () => {
    const text = 'See below.\n\nGet Outlook for iOS\n-----Original Message-----\nFrom: x@y.z\nSubject: old\n\nold text';
    expect(emailBodyText(text, null).text).toBe(text);
  });
  it('a message that is all quote is stored as it is', () => {
    expect(emailBodyText('> only a quote\r\n> nothing else\r\n', null)).toEqual({ text: '> only a quote\n> nothing else', source: 'plain', imageCaptions: [] });
  });
});
