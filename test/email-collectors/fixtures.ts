/**
 * Real-shaped RFC 822 messages for the collector tests (CRLF, folded headers, MIME as mail clients
 * write it), on top of the parse fixtures of test/agent/email-fixtures.ts, and a helper that lays out an
 * Apple-Mail-like tree of .emlx files (nested .mbox folders, Messages/ dirs, .partial.emlx).
 */
import fs from 'node:fs';
import path from 'node:path';
import { ALTERNATIVE, LATIN1, NO_DATE_NO_ID, SHIFT_JIS, WITH_ATTACHMENTS, emlx } from '../agent/email-fixtures.ts';

export { ALTERNATIVE, LATIN1, NO_DATE_NO_ID, SHIFT_JIS, WITH_ATTACHMENTS, emlx };
export { SHIFT_JIS_TEXT } from '../agent/email-fixtures.ts';

export const CRLF = (s: string) => s.replace(/\r?\n/g, '\r\n');

/** A reply with a quoted conversation and a signature; comma inside a quoted display name; Sender and Bcc. */
export const REPLY = CRLF(`From: "Doe, Jane" <Jane.Doe@Example.org>
Sender: assistant@example.org
To: "Smith, Alice" <alice@example.com>, bob@example.org
Cc: jane.doe@example.org, "Carol" <carol@example.net>
Bcc: archive@example.org
Subject: Re: Budget review
Date: Mon, 20 Nov 2023 08:05:00 +0900
Message-ID: <reply-2@example.org>
In-Reply-To: <root-1@example.com>
References: <root-1@example.com>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Thanks Alice, Tuesday works. My number is 617-867-5309.

--
Jane Doe
Head of Finance

On Sun, 19 Nov 2023 at 10:00, Alice Smith <alice@example.com> wrote:
> Can we meet on Tuesday about the budget?
> Alice
`);

export const ROOT_MSG = CRLF(`From: "Smith, Alice" <alice@example.com>
To: "Doe, Jane" <jane.doe@example.org>
Subject: Budget review
Date: Sun, 19 Nov 2023 10:00:00 +0900
Message-ID: <root-1@example.com>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

Can we meet on Tuesday about the budget?
Alice

Sent from my iPhone
`);

/** Two different messages that carry the same Message-ID (broken mailer). */
export const DUP_ID_A = CRLF(`From: robot@example.net
To: jane.doe@example.org
Subject: Nightly report
Date: Tue, 21 Nov 2023 02:00:00 +0000
Message-ID: <same-id@robot.example.net>

Nightly report: 12 jobs succeeded.
`);
export const DUP_ID_B = CRLF(`From: robot@example.net
To: jane.doe@example.org
Subject: Nightly report
Date: Wed, 22 Nov 2023 02:00:00 +0000
Message-ID: <same-id@robot.example.net>

Nightly report: 3 jobs failed.
`);

/** A simple message with a given number, for bulk tests. */
export function simpleMessage(n: number, opts: { body?: string; domain?: string } = {}): string {
  const d = opts.domain ?? 'example.org';
  return CRLF(`From: Sender ${n} <sender${n}@${d}>
To: jane.doe@example.org
Subject: Message number ${n}
Date: Thu, 23 Nov 2023 ${String(10 + (n % 12)).padStart(2, '0')}:${String(n % 60).padStart(2, '0')}:00 +0000
Message-ID: <msg-${n}@${d}>
MIME-Version: 1.0
Content-Type: text/plain; charset=utf-8

${opts.body ?? `Hello, this is message ${n}. Please review the attached notes about item ${n}.`}
`);
}

/** A ~20 MB message: a short text part and a large base64 attachment. */
export function bigMessage(bytes = 20 * 1024 * 1024): string {
  const payload = Buffer.alloc(Math.floor((bytes * 3) / 4), 0x61).toString('base64').replace(/(.{76})/g, '$1\r\n');
  return CRLF(`From: scanner@example.org
To: jane.doe@example.org
Subject: Scanned archive
Date: Fri, 24 Nov 2023 09:00:00 +0000
Message-ID: <big-1@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="bigB"

--bigB
Content-Type: text/plain; charset=utf-8

The scanned archive is attached.
--bigB
Content-Type: application/octet-stream; name="archive.bin"
Content-Transfer-Encoding: base64
Content-Disposition: attachment; filename="archive.bin"

`) + payload + '\r\n--bigB--\r\n';
}

export interface TreeFile {
  rel: string;
  bytes: Buffer;
}

/**
 * The standard fixture tree: nested mailboxes like Mail.app's V10 layout, one .partial.emlx, one
 * truncated file, one non-email file, the duplicate Message-ID pair, and the same message stored twice.
 */
export function standardTree(): TreeFile[] {
  const inbox = 'V10/ACCOUNT-1/INBOX.mbox/UUID-A/Data/Messages';
  const work = 'V10/ACCOUNT-1/Work.mbox/Projects.mbox/UUID-B/Data/1/Messages';
  return [
    { rel: `${inbox}/1.emlx`, bytes: emlx(ALTERNATIVE) },
    { rel: `${inbox}/2.emlx`, bytes: emlx(LATIN1) },
    { rel: `${inbox}/3.emlx`, bytes: emlx(SHIFT_JIS) },
    { rel: `${inbox}/4.partial.emlx`, bytes: emlx(WITH_ATTACHMENTS) },
    { rel: `${inbox}/5.emlx`, bytes: emlx(NO_DATE_NO_ID) },
    { rel: `${work}/10.emlx`, bytes: emlx(ROOT_MSG) },
    { rel: `${work}/11.EMLX`, bytes: emlx(REPLY) },
    { rel: `${work}/12.emlx`, bytes: emlx(DUP_ID_A) },
    { rel: `${work}/13.emlx`, bytes: emlx(DUP_ID_B) },
    // The same message as 10.emlx, stored again in another mailbox: submitted once.
    { rel: `V10/ACCOUNT-1/Archive.mbox/UUID-C/Data/Messages/20.emlx`, bytes: emlx(ROOT_MSG) },
    // Truncated download: declared length far beyond the data, no plist trailer.
    { rel: `${inbox}/6.emlx`, bytes: Buffer.concat([Buffer.from('90000\n'), Buffer.from(ALTERNATIVE.slice(0, 300))]) },
    { rel: `${inbox}/notes.txt`, bytes: Buffer.from('not mail') },
  ];
}

export function writeTree(root: string, files: TreeFile[]): void {
  for (const f of files) {
    const p = path.join(root, f.rel);
    fs.mkdirSync(path.dirname(p), { recursive: true });
    fs.writeFileSync(p, f.bytes);
  }
}
