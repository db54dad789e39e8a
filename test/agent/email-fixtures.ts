/**
 * Real-shaped RFC 822 messages, written the way mail clients send them (CRLF line ends, folded headers,
 * MIME boundaries, transfer encodings), and an .emlx wrapper like Apple Mail's: the byte count of the
 * message on the first line, the message, then an XML property list.
 */
const CRLF = (s: string) => s.replace(/\r?\n/g, '\r\n');

export function emlx(message: string | Buffer, opts: { declaredLength?: number; plist?: boolean; flags?: number } = {}): Buffer {
  const body = Buffer.isBuffer(message) ? message : Buffer.from(message, 'utf8');
  const count = opts.declaredLength ?? body.length;
  const plist =
    opts.plist === false
      ? ''
      : `<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">\n<plist version="1.0">\n<dict>\n\t<key>date-received</key>\n\t<integer>1700000000</integer>\n\t<key>flags</key>\n\t<integer>${opts.flags ?? 8590195713}</integer>\n</dict>\n</plist>\n`;
  return Buffer.concat([Buffer.from(`${count}\n`), body, Buffer.from(plist)]);
}

/** multipart/alternative: quoted-printable UTF-8 text, base64 HTML, threading and list headers. */
export const ALTERNATIVE = CRLF(`Return-Path: <billing@power-company.example>
Received: from mx.example.net by mail.example.org; Tue, 14 Nov 2023 09:12:01 -0800
From: "City Power & Light" <billing@power-company.example>
To: Jane Doe <jane.doe@example.org>, bob@example.org
Cc: "Accounts" <accounts@example.org>
Subject: Your November statement is
 ready
Date: Tue, 14 Nov 2023 09:12:00 -0800
Message-ID: <stmt-2023-11@power-company.example>
In-Reply-To: <prev-1@example.org>
References: <root-0@example.org> <prev-1@example.org>
List-Unsubscribe: <mailto:unsubscribe@power-company.example>, <https://power-company.example/u/123>
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="=_alt_b0undary"

This is a multi-part message in MIME format.

--=_alt_b0undary
Content-Type: text/plain; charset=utf-8
Content-Transfer-Encoding: quoted-printable

Dear Jan=C3=A9, your balance of $1,234.56 is due on 1 December. Call 617-555-=
0123 with questions.
--=_alt_b0undary
Content-Type: text/html; charset=utf-8
Content-Transfer-Encoding: base64

${Buffer.from('<html><body><p>Dear Jan\u00e9, your balance of <b>$1,234.56</b> is due.</p></body></html>').toString('base64')}
--=_alt_b0undary--
`);

/** Single-part ISO-8859-1 body in quoted-printable, with an RFC 2047 encoded subject. */
export const LATIN1 = CRLF(`From: =?ISO-8859-1?Q?J=FCrgen_M=FCller?= <juergen@example.de>
To: jane.doe@example.org
Subject: =?ISO-8859-1?Q?Gr=FC=DFe_aus_M=FCnchen?=
Date: Wed, 15 Nov 2023 18:30:00 +0100
Message-ID: <latin1-1@example.de>
MIME-Version: 1.0
Content-Type: text/plain; charset=ISO-8859-1
Content-Transfer-Encoding: quoted-printable

Sch=F6ne Gr=FC=DFe aus M=FCnchen!
`);

/** Shift_JIS text in base64 ("こんにちは、会議は明日です"). */
const SJIS_BYTES = Buffer.from([
  0x82, 0xb1, 0x82, 0xf1, 0x82, 0xc9, 0x82, 0xbf, 0x82, 0xcd, 0x81, 0x41, 0x89, 0xef, 0x8b, 0x63, 0x82, 0xcd, 0x96, 0xbe, 0x93, 0xfa, 0x82, 0xc5, 0x82, 0xb7,
]);
export const SHIFT_JIS = CRLF(`From: tanaka@example.jp
To: jane.doe@example.org
Subject: =?UTF-8?B?${Buffer.from('会議のお知らせ').toString('base64')}?=
Date: Thu, 16 Nov 2023 10:00:00 +0900
Message-ID: <sjis-1@example.jp>
MIME-Version: 1.0
Content-Type: text/plain; charset=Shift_JIS
Content-Transfer-Encoding: base64

${SJIS_BYTES.toString('base64')}
`);
export const SHIFT_JIS_TEXT = 'こんにちは、会議は明日です';

/** multipart/mixed with a PDF attachment and an inline image referenced by Content-ID. */
export const WITH_ATTACHMENTS = CRLF(`From: Alice Smith <alice@example.com>
To: jane.doe@example.org
Subject: Receipt for your order
Date: Fri, 17 Nov 2023 12:00:00 +0000
Message-ID: <receipt-77@shop.example.com>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary=mixedBoundary42

--mixedBoundary42
Content-Type: multipart/related; boundary="relatedB"

--relatedB
Content-Type: text/html; charset=us-ascii

<p>Thanks! Order #A-1001 is paid. <img src="cid:logo@shop"></p>
--relatedB
Content-Type: image/png
Content-Transfer-Encoding: base64
Content-ID: <logo@shop>
Content-Disposition: inline; filename="logo.png"

iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==
--relatedB--

--mixedBoundary42
Content-Type: application/pdf; name="receipt.pdf"
Content-Transfer-Encoding: base64
Content-Disposition: attachment; filename="receipt.pdf"

${Buffer.from('%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n').toString('base64')}
--mixedBoundary42--
`);

/** No Date and no Message-ID headers. */
export const NO_DATE_NO_ID = CRLF(`From: friend@example.net
To: jane.doe@example.org
Subject: lunch?

Are you free for lunch on Friday?
`);
