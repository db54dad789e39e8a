/**
 * A missing or unreadable Date header (issue 21 item 4): mailparser turns `Date: Tue, 7 Apr 2026 10:00:t`
 * into the time of parsing. The message must instead be dated by the first trustworthy clue (Received
 * headers, the mbox From line, the .emlx plist's date-received, the file's mtime), and say which.
 */
import { describe, expect, it } from 'vitest';
import { parseEmailBytes } from '../../src/mail/parse.ts';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { mboxFromDate, parseRfc5322Date } from '../../src/mail/date.ts';
import { CRLF, emlx } from './fixtures.ts';

const redaction = { enabled: false, redact_emails: false, redact_phones: false, redact_ssn: false, redact_credit_cards: false, redact_addresses: false } as never;

function message(date: string | null, received: string[] = []): Buffer {
  return Buffer.from(
    CRLF(`${received.map((r) => `Received: ${r}\n`).join('')}From: Carol <carol@example.net>
To: jane.doe@example.org
Subject: Minutes
${date === null ? '' : `Date: ${date}\n`}Message-ID: <minutes-3@example.net>

The minutes of Tuesday's meeting.
`),
  );
}

const RECEIVED = [
  'from mx2.example.org by mail.example.org with ESMTP id 1;\n\tTue, 7 Apr 2026 10:00:05 +0200 (CEST)',
  'from laptop by mx2.example.org; Tue, 7 Apr 2026 07:59:00 +0000',
];

describe('message date fallbacks', () => {
  it('a readable Date header is used as it is, and recorded as nothing new', async () => {
    const msg = await parseCollectedMessage(message('Tue, 7 Apr 2026 10:00:00 +0200', RECEIVED));
    expect(msg).toMatchObject({ date: '2026-04-07T08:00:00Z', dateSource: 'date_header', dateOffset: '+02:00' });
    const doc = buildEmailDocument(msg, { sourceType: 'email_local', prefix: 'email', redaction }).document;
    expect(doc.content_timestamp).toBe('2026-04-07T08:00:00Z');
    expect(doc.metadata).not.toHaveProperty('date_source');
  });

  it('a broken Date header falls back to the topmost Received header, not to now', async () => {
    const msg = await parseCollectedMessage(message('Tue, 7 Apr 2026 10:00:t', RECEIVED), { mtime: new Date('2026-05-01T00:00:00Z') });
    expect(msg).toMatchObject({ date: '2026-04-07T08:00:05Z', dateSource: 'received', dateOffset: null });
    const doc = buildEmailDocument(msg, { sourceType: 'email_local', prefix: 'email', redaction }).document;
    expect(doc.content_timestamp).toBe('2026-04-07T08:00:05Z');
    expect(doc.metadata.date_source).toBe('received');
  });

  it('then the mbox From line, the .emlx plist date, the file mtime, in that order', async () => {
    const fromLine = 'From carol@example.net Tue Apr  7 09:30:00 2026';
    const mtime = new Date('2026-05-01T00:00:00Z');
    expect(await parseCollectedMessage(message('garbage'), { mboxFromLine: fromLine, mtime })).toMatchObject({ date: '2026-04-07T09:30:00Z', dateSource: 'mbox_from' });
    // The fixture plist says date-received 1700000000 (2023-11-14T22:13:20Z).
    expect(await parseCollectedMessage(emlx(message(null)), { emlx: true, mtime })).toMatchObject({ date: '2023-11-14T22:13:20Z', dateSource: 'emlx_plist' });
    const byMtime = await parseCollectedMessage(message(''), { mtime });
    expect(byMtime).toMatchObject({ date: '2026-05-01T00:00:00Z', dateSource: 'file_mtime' });
    expect(await parseCollectedMessage(message('Tue, 7 Apr 2026 10:00:t'))).toMatchObject({ date: null, dateSource: null });
  });

  it('a file mtime does not change the source id of a message without Message-ID', async () => {
    const noId = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/Message-ID: .*\r\n/, ''), 'latin1');
    const a = await parseCollectedMessage(noId(message('bad')), { mtime: new Date('2026-05-01T00:00:00Z') });
    const b = await parseCollectedMessage(noId(message('bad')), { mtime: new Date('2026-06-01T00:00:00Z') });
    const src = { sourceType: 'email_local' as const, prefix: 'email', redaction };
    expect(buildEmailDocument(a, src).document.source_id).toBe(buildEmailDocument(b, src).document.source_id);
  });

  it('the parse function reports the date and its source too', async () => {
    const m = await parseEmailBytes(message('Tue, 7 Apr 2026 10:00:t', RECEIVED));
    expect(m).toMatchObject({ date: '2026-04-07T08:00:05Z', dateSource: 'received' });
    expect(await parseEmailBytes(message(null))).toMatchObject({ date: null, dateSource: null });
  });

  it('date parsers: Received-style dates with comments, asctime From lines with a zone, nonsense refused', () => {
    expect(parseRfc5322Date('Tue, 7 Apr 2026 10:00:05 +0200 (CEST)')?.toISOString()).toBe('2026-04-07T08:00:05.000Z');
    expect(parseRfc5322Date('7 Apr 2026 10:00:t')).toBeNull();
    expect(parseRfc5322Date('Thu, 1 Jan 1970 00:00:00 +0000')).toBeNull(); // the epoch-zero bug is no date
    expect(mboxFromDate('From MAILER-DAEMON Fri Jul  8 12:08:34 +0200 2011')?.toISOString()).toBe('2011-07-08T10:08:34.000Z');
    expect(mboxFromDate('From someone')).toBeNull();
  });
});
