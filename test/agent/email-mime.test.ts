/**
 * What memex reads from a message, now that postal-mime parses it (src/mail/message.ts) after
 * the repairs of mime-repair.ts: the message's own text and HTML parts (nothing generated), attachment
 * bytes exactly as the message carries them, charsets Node 20's TextDecoder misreads or lacks, encoded
 * words split inside a character, raw 8-bit headers, and the header fields the way mailparser gave them.
 */
import crypto from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { parseEmailBytes } from '../../src/mail/parse.ts';

const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'), 'latin1');
const head = (extra: string) => `From: Anna <anna@example.org>\nTo: bo@example.org\nDate: Mon, 04 Mar 2024 10:00:00 +0100\nMessage-ID: <mime@example.org>\nSubject: parts\nMIME-Version: 1.0\n${extra}`;

describe('text and HTML are the message\'s own parts', () => {
  it('an HTML-only message has no text, a text-only message no HTML', async () => {
    const html = await parseEmailBytes(crlf(`${head('Content-Type: text/html; charset=utf-8\n')}\n<p>Only <b>HTML</b></p>\n`));
    expect(html.bodyPlainText).toBeNull();
    expect(html.bodyHTML?.trim()).toBe('<p>Only <b>HTML</b></p>');
    const text = await parseEmailBytes(crlf(`${head('Content-Type: text/plain\n')}\nOnly text.\n`));
    expect(text.bodyHTML).toBeNull();
    expect(text.bodyPlainText?.trim()).toBe('Only text.');
  });

  it('text and HTML side by side in multipart/mixed: neither is converted into the other', async () => {
    const m = await parseEmailBytes(
      crlf(`${head('Content-Type: multipart/mixed; boundary=b\n')}\n--b\nContent-Type: text/plain\n\nthe text\n--b\nContent-Type: text/html\n\n<p>the html</p>\n--b--\n`),
    );
    expect(m.bodyPlainText).toBe('the text');
    expect(m.bodyHTML).toBe('<p>the html</p>');
  });

  it('a list footer after multipart/alternative joins the text with one line break, as mailparser joined it; quoted-printable transport blanks go', async () => {
    const m = await parseCollectedMessage(
      crlf(
        `${head('Content-Type: multipart/mixed; boundary=m\n')}\n--m\nContent-Type: multipart/alternative; boundary=a\n\n--a\nContent-Type: text/plain\nContent-Transfer-Encoding: quoted-printable\n\nplain =\nversion \t\nsecond line\n--a\nContent-Type: text/html\n\n<p>html</p>\n--a--\n--m\nContent-Type: text/plain\n\n-- \nlist footer\n--m--\n`,
      ),
    );
    // Blanks at the end of a quoted-printable line were added in transport (RFC 2045 §6.7): deleted.
    expect(m.text).toBe('plain version\nsecond line\n-- \nlist footer');
    expect(m.html).toBe('<p>html</p>');
  });

  it('a delivery report\'s status part is read as text, not listed as an attachment', async () => {
    const m = await parseCollectedMessage(
      crlf(
        `${head('Content-Type: multipart/report; report-type=delivery-status; boundary=r\n')}\n--r\nContent-Type: text/plain\n\nCould not be delivered.\n--r\nContent-Type: message/delivery-status\n\nFinal-Recipient: rfc822; gone@example.org\nStatus: 5.1.1\n--r\nContent-Type: message/rfc822\n\nFrom: anna@example.org\nSubject: hello\n\nhello\n--r--\n`,
      ),
    );
    expect(m.text).toContain('Could not be delivered.');
    expect(m.text).toContain('Status: 5.1.1');
    expect(m.attachments.map((a) => a.mimeType)).toEqual(['message/rfc822']);
  });
});

describe('attachment bytes', () => {
  it('7bit, 8bit, binary and quoted-printable attachments keep their bytes: CRLF line ends, no added line break', async () => {
    const note = 'line one\r\nline two';
    const bin = Buffer.from([0x01, 0x0d, 0x0a, 0xff, 0x0d, 0x41]);
    const raw = Buffer.concat([
      crlf(
        `${head('Content-Type: multipart/mixed; boundary=b\n')}\n--b\nContent-Type: text/plain\n\nbody\n--b\nContent-Type: text/plain; name=note.txt\nContent-Disposition: attachment; filename=note.txt\n\n${note}\n--b\nContent-Type: application/pgp-signature; name=signature.asc\n\n-----BEGIN PGP SIGNATURE-----\n\niQEz\n-----END PGP SIGNATURE-----\n--b\nContent-Type: application/octet-stream; name=q.bin\nContent-Transfer-Encoding: quoted-printable\n\nA=3DB=\n C\n--b\nContent-Type: application/octet-stream; name=raw.bin\nContent-Transfer-Encoding: binary\n\n`,
      ),
      bin,
      crlf('\n--b--\n'),
    ]);
    const m = await parseCollectedMessage(raw);
    const byName = Object.fromEntries(m.attachments.map((a) => [a.filename, a]));
    // The PGP signature part is no attachment (issue 31): never uploaded, never a document.
    expect(Object.keys(byName)).toEqual(['note.txt', 'q.bin', 'raw.bin']);
    expect(byName['note.txt'].content.toString('latin1')).toBe(note);
    expect(byName['note.txt'].sha256).toBe(crypto.createHash('sha256').update(note).digest('hex'));
    expect(byName['q.bin'].content.toString('latin1')).toBe('A=B C');
    expect(byName['raw.bin'].content.equals(bin)).toBe(true);
    expect(m.text).toBe('body');
  });

  it('a calendar invitation keeps its bytes (CRLF line ends, its own charset), as base64 and as 7bit', async () => {
    const ics = Buffer.from('BEGIN:VCALENDAR\r\nMETHOD:REQUEST\r\nBEGIN:VEVENT\r\nSUMMARY:R\xe9union\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n', 'latin1');
    const plainIcs = 'BEGIN:VCALENDAR\r\nMETHOD:CANCEL\r\nEND:VCALENDAR';
    const raw = crlf(
      `${head('Content-Type: multipart/mixed; boundary=b\n')}\n--b\nContent-Type: text/plain\n\nSee the invitation.\n--b\nContent-Type: text/calendar; charset=iso-8859-1; method=REQUEST; name=invite.ics\nContent-Transfer-Encoding: base64\n\n${ics.toString('base64')}\n--b\nContent-Type: application/ics; name=cancel.ics\n\n${plainIcs}\n--b--\n`,
    );
    const m = await parseCollectedMessage(raw);
    const byName = Object.fromEntries(m.attachments.map((a) => [a.filename, a]));
    expect(byName['invite.ics'].content.equals(ics)).toBe(true);
    expect(byName['invite.ics'].sha256).toBe(crypto.createHash('sha256').update(ics).digest('hex'));
    expect(byName['cancel.ics'].content.toString('latin1')).toBe(plainIcs);
  });
});

describe('charsets and headers', () => {
  it('windows-1252 (and ISO-8859-1) text with bytes 0x80-0x9F: quotes, euro sign and dashes, in the body and in encoded words', async () => {
    const raw = Buffer.concat([
      crlf(`From: =?windows-1252?Q?=93Ann=94?= <ann@example.org>\nSubject: =?iso-8859-1?Q?=80_5_=96_done?=\nContent-Type: text/plain; charset=windows-1252\nContent-Transfer-Encoding: 8bit\n\n`),
      Buffer.from([0x93, 0x71, 0x94, 0x20, 0x80, 0x20, 0x96, 0x20, 0xe9]),
      crlf('\n'),
    ]);
    const m = await parseCollectedMessage(raw);
    expect(m.text?.trim()).toBe('\u201cq\u201d \u20ac \u2013 \u00e9');
    expect(m.subject).toBe('\u20ac 5 \u2013 done');
    expect(m.from).toEqual([{ address: 'ann@example.org', name: '\u201cAnn\u201d' }]);
  });

  it('a charset TextDecoder does not know (cp850) is decoded with iconv-lite', async () => {
    // "Größe" in code page 850: G r 0x94 0xE1 e
    const raw = Buffer.concat([crlf(`${head('Content-Type: text/plain; charset=cp850\nContent-Transfer-Encoding: 8bit\n')}\n`), Buffer.from([0x47, 0x72, 0x94, 0xe1, 0x65]), crlf('\n')]);
    expect((await parseCollectedMessage(raw)).text?.trim()).toBe('Größe');
  });

  it('a character split between two base64 encoded words is joined; raw 8-bit header bytes that are not UTF-8 read as windows-1252', async () => {
    const word = Buffer.from('会議', 'utf8');
    const raw = Buffer.concat([
      crlf(`Subject: =?UTF-8?B?${word.subarray(0, 4).toString('base64')}?=\n =?UTF-8?B?${word.subarray(4).toString('base64')}?=\nFrom: `),
      Buffer.from('J\xfcrgen M\xfcller <jm@example.de>', 'latin1'),
      crlf('\nTo: '),
      Buffer.from('"Zoë" <zoe@example.org>', 'utf8'),
      crlf('\nContent-Type: text/plain\n\nhi\n'),
    ]);
    const m = await parseCollectedMessage(raw);
    expect(m.subject).toBe('会議');
    expect(m.from).toEqual([{ address: 'jm@example.de', name: 'Jürgen Müller' }]);
    expect(m.to).toEqual([{ address: 'zoe@example.org', name: 'Zoë' }]);
  });

  it('address and id headers read as mailparser read them', async () => {
    const m = await parseCollectedMessage(
      crlf(
        'From: a@example.org, "B" <b@example.org>\nSender: s@example.org\nTo: Team: x@example.org, "Y" <y@example.org>;, z@xn--mnchen-3ya.de\nTo: two@example.org\nMessage-ID: bare@example.org\nIn-Reply-To: r3@x\nReferences: <r1@x>\nReferences: <r2@x> r3@x\nSubject: a subject\n  folded\n\nhi\n',
      ),
    );
    expect(m.from.map((a) => a.address)).toEqual(['a@example.org', 'b@example.org']);
    expect(m.sender).toEqual([{ address: 's@example.org', name: null }]);
    expect(m.to).toEqual([
      { address: 'x@example.org', name: null },
      { address: 'y@example.org', name: 'Y' },
      { address: 'z@münchen.de', name: null },
      { address: 'two@example.org', name: null },
    ]);
    expect(m.messageId).toBe('<bare@example.org>');
    expect(m.inReplyTo).toBe('<r3@x>');
    expect(m.references).toEqual(['<r1@x>', '<r2@x>', '<r3@x>']);
    expect(m.subject).toBe('a subject folded');
  });
});
