/**
 * Mail encodings real clients write that mailparser alone gets wrong (issue 21 item 5): UTF-7 subjects
 * and bodies, raw 8-bit bytes inside Q encoded words, boundary delimiters with transport padding
 * (RFC 2046 §5.1.1), and attached messages (message/rfc822) listed as attachments.
 */
import { describe, expect, it } from 'vitest';
import { parseEmailBytes } from '../../src/mail/parse.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';

const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'), 'latin1');
const head = (extra: string) => `From: Anna <anna@example.org>\nTo: bo@example.org\nDate: Mon, 04 Mar 2024 10:00:00 +0100\nMessage-ID: <enc@example.org>\nMIME-Version: 1.0\n${extra}`;

describe('mail encodings', () => {
  it('UTF-7: encoded-word subject and a UTF-7 text body are decoded', async () => {
    // "Frösche" is "Fr+APY-sche" in UTF-7 (ö = U+00F6).
    const m = await parseEmailBytes(crlf(`${head('Subject: =?utf-7?Q?Fr+APY-sche_und_Kr+APY-ten?=\nContent-Type: text/plain; charset=utf-7\n')}\nFr+APY-sche und Br+APY-tchen.\n`));
    expect(m.subject).toBe('Frösche und Kröten');
    expect(m.bodyPlainText?.trim()).toBe('Frösche und Brötchen.');
  });

  it('UTF-7: a raw Subject in a UTF-7 message, and a quoted-printable UTF-7 part of a multipart message', async () => {
    const m = await parseCollectedMessage(
      crlf(`${head('Subject: Fr+APY-sche\nContent-Type: multipart/alternative; boundary=b7; charset=utf-7\n')}\n--b7\nContent-Type: text/plain; charset="UTF-7"\nContent-Transfer-Encoding: quoted-printable\n\nGr+APw-=\n+AN8-e\n--b7\nContent-Type: text/html; charset=unicode-1-1-utf-7\n\n<p>Gr+APwA3w-e</p>\n--b7--\n`),
    );
    expect(m.subject).toBe('Frösche');
    expect(m.text?.trim()).toBe('Grüße');
    expect(m.html).toContain('<p>Grüße</p>');
  });

  it('raw 8-bit bytes inside a Q encoded word are read in the word\'s charset', async () => {
    const raw = Buffer.concat([crlf(head('Subject: =?iso-8859-1?Q?Fr')), Buffer.from([0xf6]), crlf('sche_im_Teich?=\nContent-Type: text/plain\n\nhi\n')]);
    const m = await parseEmailBytes(raw);
    expect(m.subject).toBe('Frösche im Teich');
  });

  it('boundary delimiters followed by spaces and tabs still separate the parts', async () => {
    const m = await parseEmailBytes(
      crlf(`${head('Subject: padded\nContent-Type: multipart/mixed; boundary="outer"\n')}
--outer   
Content-Type: multipart/alternative; boundary=alt

--alt\t
Content-Type: text/plain; charset=utf-8

Plain part.
--alt 
Content-Type: text/html; charset=utf-8

<p>HTML part.</p>
--alt-- 
--outer \t
Content-Type: image/jpeg; name="a.jpg"
Content-Disposition: attachment; filename="a.jpg"
Content-Transfer-Encoding: base64

/9j/4AAQ
--outer  
Content-Type: application/pdf; name="b.pdf"
Content-Disposition: attachment; filename="b.pdf"
Content-Transfer-Encoding: base64

JVBERi0xLjQK
--outer--   
`),
    );
    expect(m.bodyPlainText?.trim()).toBe('Plain part.');
    expect(m.bodyHTML).toContain('<p>HTML part.</p>');
    expect(m.attachments.map((a) => a.filename)).toEqual(['a.jpg', 'b.pdf']);
  });

  it('attached messages (message/rfc822), inline or not, are attachments and stay out of the body', async () => {
    const inner = 'From: Carl <carl@example.net>\nSubject: Original\nContent-Type: text/plain\n\nThe original text.\n';
    const m = await parseCollectedMessage(
      crlf(`${head('Subject: Fwd: Original\nContent-Type: multipart/mixed; boundary=fw\n')}
--fw
Content-Type: text/plain

See below.
--fw
Content-Type: message/rfc822
Content-Disposition: inline

${inner}--fw
Content-Type: message/rfc822; name="second.eml"
Content-Disposition: attachment; filename="second.eml"

${inner}--fw--
`),
    );
    expect(m.text?.trim()).toBe('See below.');
    expect(m.attachments.map((a) => [a.filename, a.mimeType])).toEqual([
      ['attached-message.eml', 'message/rfc822'],
      ['second.eml', 'message/rfc822'],
    ]);
    expect(m.attachments[0].content.toString()).toContain('The original text.');
  });
});
