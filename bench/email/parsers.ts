/**
 * postal-mime (what memex parses mail with, src/mail/message.ts) against mailparser (what it
 * used before issue 17's parser change), on the same bytes after the same repairs (repairMime): every field
 * memex uses, compared message by message, and the CPU each parser takes.
 *
 *   node --import tsx bench/email/parsers.ts [--messages 3000] [--seed 17] [--dir DIR ...] [--examples 3]
 *
 * Inputs: the generated corpus (bench/email/corpus.ts), the tests' fixture messages (test/agent/email-fixtures.ts,
 * test/email-collectors/fixtures.ts), the edge cases below (charsets, 8-bit headers, broken MIME, encoded words,
 * attachments without a file name, text/HTML mixes, attached messages), and every .eml, .emlx and mbox file under
 * each --dir (for example other tools' test suites). Prints, per field, how many messages differ and the first
 * examples; nothing is asserted, the differences are to be read.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import iconv from 'iconv-lite';
import { simpleParser, type AddressObject, type ParsedMail } from 'mailparser';
import { normaliseBody } from '../../src/mail/document.ts';
import { readMboxFile } from '../../src/mail/mbox.ts';
import { parseMime, type MailAddress, type MailMessage } from '../../src/mail/message.ts';
import { repairMime } from '../../src/mail/mime-repair.ts';
import { splitEmlx } from '../../src/mail/parse.ts';
import * as agentFixtures from '../../test/agent/email-fixtures.ts';
import * as collectorFixtures from '../../test/email-collectors/fixtures.ts';
import { generateCorpus } from './corpus.ts';

const { values } = parseArgs({
  options: {
    messages: { type: 'string', default: '3000' },
    seed: { type: 'string', default: '17' },
    dir: { type: 'string', multiple: true, default: [] },
    examples: { type: 'string', default: '3' },
  },
});

// ---- mailparser, shaped the way src/mail/parse.ts and src/mail/collected-message.ts shaped it before ----

const MAILPARSER_OPTIONS = { skipHtmlToText: true, skipTextToHtml: true, skipImageLinks: true, keepCidLinks: true, ignoreEmbedded: true } as const;

function addressList(field: AddressObject | AddressObject[] | undefined): MailAddress[] {
  if (!field) return [];
  const out: MailAddress[] = [];
  const visit = (entries: AddressObject['value']) => {
    for (const e of entries) {
      if (e.address) out.push({ address: e.address, name: e.name ? e.name : null });
      if (e.group) visit(e.group);
    }
  };
  for (const obj of Array.isArray(field) ? field : [field]) visit(obj.value);
  return out;
}

async function viaMailparser(message: Buffer): Promise<MailMessage> {
  const p: ParsedMail = await simpleParser(message, MAILPARSER_OPTIONS);
  const refs = p.references === undefined ? [] : Array.isArray(p.references) ? p.references : p.references.split(/\s+/);
  return {
    headerLines: (p.headerLines ?? []).map((h) => ({ key: h.key.toLowerCase(), line: h.line })),
    messageId: p.messageId ?? null,
    subject: p.subject ?? null,
    from: addressList(p.from),
    sender: addressList(p.headers.get('sender') as AddressObject | undefined),
    to: addressList(p.to),
    cc: addressList(p.cc),
    bcc: addressList(p.bcc),
    inReplyTo: p.inReplyTo ?? null,
    references: refs.filter((r) => r.length > 0),
    text: p.text ?? null,
    html: typeof p.html === 'string' ? p.html : null,
    attachments: p.attachments.map((a) => ({
      filename: a.filename ?? null,
      mimeType: a.contentType || 'application/octet-stream',
      contentId: a.contentId ?? null,
      disposition: a.contentDisposition ?? null,
      content: a.content,
    })),
  };
}

// ---- edge cases ----

const CRLF = (s: string) => s.replace(/\r?\n/g, '\r\n');
const head = (subject: string, extra = '') =>
  `From: Anna <anna@example.org>\nTo: bo@example.org\nDate: Mon, 04 Mar 2024 10:00:00 +0100\nMessage-ID: <edge@example.org>\nSubject: ${subject}\nMIME-Version: 1.0\n${extra}`;
const bytes = (...parts: (string | Buffer)[]) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(CRLF(p), 'latin1') : p)));
const enc = (charset: string, text: string) => iconv.encode(text, charset).toString('base64');

function charsetPart(charset: string, text: string): Buffer {
  return bytes(head(`charset ${charset}`, `Content-Type: text/plain; charset=${charset}\nContent-Transfer-Encoding: base64\n`), `\n${enc(charset, text)}\n`);
}

const EDGE: [string, Buffer][] = [
  ['latin1 8-bit body', bytes(head('latin1 body', 'Content-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: 8bit\n'), '\n', Buffer.from('Sch\xf6ne Gr\xfc\xdfe\r\n', 'latin1'))],
  ['windows-1252 quotes', charsetPart('windows-1252', '\u201cquoted\u201d \u20ac 5 \u2013 done')],
  ['koi8-r', charsetPart('koi8-r', 'Привет, как дела?')],
  // "こんにちは" in ISO-2022-JP (iconv-lite cannot encode it).
  ['iso-2022-jp', bytes(head('iso-2022-jp', 'Content-Type: text/plain; charset=ISO-2022-JP\nContent-Transfer-Encoding: 7bit\n'), '\n', Buffer.from('\x1b$B$3$s$K$A$O\x1b(B\r\n', 'latin1'))],
  ['gb2312', charsetPart('gb2312', '明天开会')],
  ['big5', charsetPart('big5', '明天開會')],
  ['euc-kr', charsetPart('euc-kr', '내일 회의')],
  ['cp850 (not in TextDecoder)', charsetPart('cp850', 'Schöne Grüße, €? no: ½ ¼')],
  ['cp437 (not in TextDecoder)', charsetPart('cp437', 'Größe ½ ░▒▓')],
  ['iso-8859-15', charsetPart('iso-8859-15', 'Prix: 5 € œuvre')],
  ['utf-16le', charsetPart('utf-16le', 'Hello UTF-16 ✓')],
  ['unknown charset name', bytes(head('unknown charset', 'Content-Type: text/plain; charset=x-unknown-thing\n'), '\nplain ascii words\n')],
  ['no charset, 8-bit utf-8 body', bytes(head('no charset', 'Content-Type: text/plain\nContent-Transfer-Encoding: 8bit\n'), '\n', Buffer.from('Grüße aus Köln\r\n', 'utf8'))],
  ['raw utf-8 headers', bytes(Buffer.from(CRLF('From: Jürgen Müller <jm@example.de>\nTo: "Zoë" <zoe@example.org>\nSubject: Grüße aus Köln\nDate: Mon, 04 Mar 2024 10:00:00 +0100\nMessage-ID: <u8@example.de>\n\nbody\n'), 'utf8'))],
  ['raw latin1 headers', bytes(Buffer.from(CRLF('From: J\xfcrgen M\xfcller <jm@example.de>\nTo: zoe@example.org\nSubject: Gr\xfc\xdfe aus K\xf6ln\nDate: Mon, 04 Mar 2024 10:00:00 +0100\nMessage-ID: <l1@example.de>\n\nbody\n'), 'latin1'))],
  ['adjacent encoded words', bytes(head('=?UTF-8?B?w6Q=?= =?UTF-8?B?w7Y=?= and =?ISO-8859-1?Q?=FC?=_x'), 'Content-Type: text/plain\n\nhi\n')],
  ['multibyte split across encoded words', bytes(head(`=?UTF-8?B?${Buffer.from('会議').subarray(0, 4).toString('base64')}?= =?UTF-8?B?${Buffer.from('会議').subarray(4).toString('base64')}?=`), 'Content-Type: text/plain\n\nhi\n')],
  ['lowercase q, spaces as underscores', bytes(head('=?utf-8?q?hello_w=C3=B6rld?='), 'Content-Type: text/plain\n\nhi\n')],
  ['encoded word inside a quoted name', bytes('From: "=?UTF-8?B?SsO8cmdlbg==?=" <j@example.de>\nTo: =?ISO-8859-1?Q?Zo=EB?= <zoe@example.org>, "Doe, Jane" <jane@example.org>\nSubject: names\nDate: Mon, 04 Mar 2024 10:00:00 +0100\n\nhi\n')],
  ['malformed encoded word', bytes(head('=?UTF-8?B?not base64!?= and =?bogus?Q?x?= tail'), 'Content-Type: text/plain\n\nhi\n')],
  ['encoded word with unknown charset', bytes(head('=?x-nothing?Q?abc?='), 'Content-Type: text/plain\n\nhi\n')],
  ['UTF-7 subject and body', bytes(head('=?utf-7?Q?Fr+APY-sche?=', 'Content-Type: text/plain; charset=utf-7\n'), '\nFr+APY-sche und Br+APY-tchen.\n')],
  ['8-bit inside a Q word', bytes(head('=?iso-8859-1?Q?Fr'), Buffer.from([0xf6]), 'sche?=\nContent-Type: text/plain\n\nhi\n')],
  ['groups and several From addresses', bytes('From: a@example.org, "B" <b@example.org>\nSender: s@example.org\nTo: Team: x@example.org, "Y" <y@example.org>;, z@example.org\nCc: undisclosed-recipients:;\nBcc: hidden@example.org\nSubject: groups\nDate: Mon, 04 Mar 2024 10:00:00 +0100\n\nhi\n')],
  ['two To headers and two References headers', bytes('From: a@example.org\nTo: one@example.org\nTo: two@example.org\nReferences: <r1@x>\nReferences: <r2@x> r3@x\nIn-Reply-To: r3@x\nMessage-ID: bare-id@example.org\nSubject: dup\n\nhi\n')],
  ['References without spaces and with comments', bytes('From: a@example.org\nReferences: <a@x><b@x> (comment) <c@x>\nIn-Reply-To: <c@x> (Jane\'s message of Monday)\nSubject: refs\n\nhi\n')],
  ['punycode domain', bytes('From: "Ünï" <user@xn--bcher-kva.example>\nTo: x@xn--mnchen-3ya.de\nSubject: idn\n\nhi\n')],
  ['missing closing boundary', bytes(head('no close', 'Content-Type: multipart/mixed; boundary=b1\n'), '\n--b1\nContent-Type: text/plain\n\nfirst part\n--b1\nContent-Type: application/octet-stream; name=a.bin\nContent-Transfer-Encoding: base64\n\nAAECAw==\n')],
  ['multipart without boundary', bytes(head('no boundary', 'Content-Type: multipart/mixed\n'), '\n--x\nContent-Type: text/plain\n\ntext\n--x--\n')],
  ['bad base64 body', bytes(head('bad b64', 'Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64\n'), '\nSGVsbG8g!!d29ybGQ=garbage\n')],
  ['unknown transfer encoding', bytes(head('x-uue', 'Content-Type: text/plain\nContent-Transfer-Encoding: x-uuencode\n'), '\nbegin 644 a\n`\nend\n')],
  ['quoted-printable soft breaks and bad escapes', bytes(head('qp', 'Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable\n'), '\nline one =\ncontinued =ZZ and =C3=A9=\n\n')],
  ['no header block', bytes('just some text\nwith no headers\n')],
  ['headers only, no body', bytes('From: a@example.org\nSubject: empty\n')],
  ['attachment: name only in Content-Type', bytes(head('ct name', 'Content-Type: multipart/mixed; boundary=b\n'), '\n--b\nContent-Type: text/plain\n\nsee file\n--b\nContent-Type: application/pdf; name="report.pdf"\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--b--\n')],
  ['attachment: no name at all', bytes(head('no name', 'Content-Type: multipart/mixed; boundary=b\n'), '\n--b\nContent-Type: text/plain\n\nsee file\n--b\nContent-Type: application/octet-stream\nContent-Disposition: attachment\nContent-Transfer-Encoding: base64\n\nAAECAw==\n--b\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\niVBORw0KGgo=\n--b--\n')],
  ['attachment: RFC 2231 and encoded-word names', bytes(head('2231', 'Content-Type: multipart/mixed; boundary=b\n'), "\n--b\nContent-Type: text/plain\n\nfiles\n--b\nContent-Type: application/pdf\nContent-Disposition: attachment; filename*=UTF-8''Gr%C3%BC%C3%9Fe%20aus%20K%C3%B6ln.pdf\n\nx\n--b\nContent-Type: application/pdf; name=\"=?UTF-8?B?w5xiZXJzaWNodC5wZGY=?=\"\nContent-Disposition: attachment; filename*0=\"long file \"; filename*1=\"name.pdf\"\n\ny\n--b--\n")],
  ['attachment: text/plain with disposition attachment, and an inline text part', bytes(head('text att', 'Content-Type: multipart/mixed; boundary=b\n'), '\n--b\nContent-Type: text/plain\n\nbody text\n--b\nContent-Type: text/plain; name=notes.txt\nContent-Disposition: attachment; filename=notes.txt\n\nattached notes\n--b\nContent-Type: text/plain\nContent-Disposition: inline\n\nsecond inline text\n--b--\n')],
  ['html only (single part)', bytes(head('html only', 'Content-Type: text/html; charset=utf-8\n'), '\n<p>Only <b>HTML</b> here</p>\n')],
  ['text and html in multipart/mixed', bytes(head('mixed t+h', 'Content-Type: multipart/mixed; boundary=b\n'), '\n--b\nContent-Type: text/plain\n\nthe text\n--b\nContent-Type: text/html\n\n<p>the html</p>\n--b--\n')],
  ['alternative inside mixed, with related image', bytes(head('alt+rel', 'Content-Type: multipart/mixed; boundary=m\n'), '\n--m\nContent-Type: multipart/alternative; boundary=a\n\n--a\nContent-Type: text/plain\n\nplain version\n--a\nContent-Type: multipart/related; boundary=r\n\n--r\nContent-Type: text/html\n\n<p>html <img src="cid:i1@x"></p>\n--r\nContent-Type: image/gif\nContent-ID: <i1@x>\nContent-Transfer-Encoding: base64\n\nR0lGODlhAQABAAAAACw=\n--r--\n--a--\n--m\nContent-Type: text/plain\n\nfooter after the alternative\n--m--\n')],
  ['alternative with html first', bytes(head('alt html first', 'Content-Type: multipart/alternative; boundary=a\n'), '\n--a\nContent-Type: text/html\n\n<p>html</p>\n--a\nContent-Type: text/plain\n\nplain\n--a--\n')],
  ['format=flowed delsp', bytes(head('flowed', 'Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\n'), '\nThis is a long line that was \nwrapped by the sender.\n> quoted \n> text\n-- \nsig\n')],
  ['message/rfc822 inline and attached', bytes(head('fwd', 'Content-Type: multipart/mixed; boundary=f\n'), '\n--f\nContent-Type: text/plain\n\nSee below.\n--f\nContent-Type: message/rfc822\nContent-Disposition: inline\n\nFrom: c@example.net\nSubject: Original\nContent-Type: text/plain\n\nThe original text.\n--f\nContent-Type: message/rfc822\n\nFrom: d@example.net\nSubject: No disposition\nContent-Type: text/html\n\n<p>inner html</p>\n--f--\n')],
  ['delivery status report', bytes(head('Undelivered Mail', 'Content-Type: multipart/report; report-type=delivery-status; boundary=r\n'), '\n--r\nContent-Type: text/plain\n\nYour message could not be delivered.\n--r\nContent-Type: message/delivery-status\n\nReporting-MTA: dns; mx.example.org\n\nFinal-Recipient: rfc822; gone@example.org\nAction: failed\nStatus: 5.1.1\n--r\nContent-Type: message/rfc822\n\nFrom: anna@example.org\nSubject: hello\n\nhello\n--r--\n')],
  ['calendar invitation', bytes(head('invite', 'Content-Type: multipart/alternative; boundary=c\n'), '\n--c\nContent-Type: text/plain\n\nYou are invited.\n--c\nContent-Type: text/calendar; method=REQUEST; charset=utf-8\n\nBEGIN:VCALENDAR\nMETHOD:REQUEST\nEND:VCALENDAR\n--c--\n')],
  ['transport padding after boundaries', bytes(head('padded', 'Content-Type: multipart/mixed; boundary="outer"\n'), '\n--outer   \nContent-Type: text/plain\n\nPlain part.\n--outer \t\nContent-Type: application/pdf; name="b.pdf"\nContent-Transfer-Encoding: base64\n\nJVBERi0xLjQK\n--outer--  \n')],
  ['LF-only line ends', Buffer.from('From: a@example.org\nTo: b@example.org\nSubject: lf\nContent-Type: multipart/alternative; boundary=z\n\n--z\nContent-Type: text/plain\n\nlf text\n--z\nContent-Type: text/html\n\n<p>lf</p>\n--z--\n')],
  ['folded headers and long subject', bytes('From: a@example.org\nSubject: =?UTF-8?Q?a_very_long?=\n =?UTF-8?Q?_subject_folded?=\n  over lines\nX-Long: one\n\ttwo\n\nhi\n')],
  ['duplicate Subject and Message-ID', bytes('From: a@example.org\nSubject: first\nSubject: second\nMessage-ID: <one@x>\nMessage-ID: <two@x>\n\nhi\n')],
  ['empty Subject, empty To', bytes('From: a@example.org\nTo:\nSubject:\nMessage-ID: <e@x>\n\nhi\n')],
];

// ---- inputs ----

interface Input {
  source: string;
  name: string;
  message: Buffer;
}

const inputs: Input[] = [];
for (const m of generateCorpus({ messages: Number(values.messages), seed: Number(values.seed) }).messages) inputs.push({ source: 'corpus', name: m.id, message: m.raw });
for (const [mod, label] of [[agentFixtures, 'test/agent/email-fixtures.ts'], [collectorFixtures, 'test/email-collectors/fixtures.ts']] as const) {
  for (const [name, v] of Object.entries(mod)) {
    if (typeof v === 'string' && /^[A-Za-z-]+:/.test(v) && !inputs.some((i) => i.source === 'fixtures' && i.message.equals(Buffer.from(v, 'latin1')))) {
      inputs.push({ source: 'fixtures', name: `${label} ${name}`, message: Buffer.from(v, name === 'LATIN1' ? 'latin1' : 'utf8') });
    }
  }
}
for (const [name, message] of EDGE) inputs.push({ source: 'edge cases', name, message });

async function addDir(dir: string): Promise<void> {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath ?? dir, entry.name);
    const rel = path.relative(dir, file);
    const lower = entry.name.toLowerCase();
    if (lower.endsWith('.emlx')) inputs.push({ source: dir, name: rel, message: splitEmlx(fs.readFileSync(file)).message });
    else if (lower.endsWith('.eml') || lower.endsWith('.msg') || lower.endsWith('.txt')) inputs.push({ source: dir, name: rel, message: fs.readFileSync(file) });
    else if (lower.endsWith('.mbox') || lower === 'mbox') {
      for await (const m of readMboxFile(file, { maxMessageBytes: 64 << 20 })) {
        if (!m.oversized && m.bytes.length) inputs.push({ source: dir, name: `${rel} #${m.index}`, message: m.bytes });
      }
    }
  }
}
for (const dir of values.dir ?? []) await addDir(dir);

// ---- compare ----

type Field = keyof MailMessage;
const FIELDS: Field[] = ['headerLines', 'messageId', 'subject', 'from', 'sender', 'to', 'cc', 'bcc', 'inReplyTo', 'references', 'text', 'html', 'attachments'];

/**
 * What each field means to memex: bodies are compared as the email document builder reads them (line
 * breaks as LF, trimmed: normaliseBody), header lines with their folding as LF (mailparser kept the CR,
 * postal-mime does not; every reader unfolds them).
 */
function comparable(m: MailMessage, field: Field): unknown {
  if (field === 'text' || field === 'html') {
    const v = m[field];
    return v === null ? null : normaliseBody(v) || null;
  }
  if (field === 'headerLines') return m.headerLines.map((h) => ({ key: h.key, line: h.line.replace(/\r\n/g, '\n') }));
  if (field === 'attachments') {
    return m.attachments.map((a) => ({ filename: a.filename, mimeType: a.mimeType, contentId: a.contentId, disposition: a.disposition, bytes: a.content.length, sha: a.content.toString('base64').slice(0, 24) }));
  }
  return m[field];
}

const short = (v: unknown) => {
  const s = JSON.stringify(v) ?? 'undefined';
  return s.length > 300 ? `${s.slice(0, 300)}… (${s.length} chars)` : s;
};

const cpu = (s: NodeJS.CpuUsage) => {
  const d = process.cpuUsage(s);
  return (d.user + d.system) / 1000;
};

const examples = Number(values.examples);
const bySource = new Map<string, { n: number; identical: number; errors: { mailparser: number; postal: number } }>();
const byField = new Map<string, { count: number; samples: string[] }>();
let cpuMailparser = 0;
let cpuPostal = 0;
for (const input of inputs) {
  const repaired = repairMime(input.message);
  let a: MailMessage | Error;
  let b: MailMessage | Error;
  let t = process.cpuUsage();
  try {
    a = await viaMailparser(repaired);
  } catch (err) {
    a = err as Error;
  }
  cpuMailparser += cpu(t);
  t = process.cpuUsage();
  try {
    b = await parseMime(repaired);
  } catch (err) {
    b = err as Error;
  }
  cpuPostal += cpu(t);
  const s = bySource.get(input.source) ?? { n: 0, identical: 0, errors: { mailparser: 0, postal: 0 } };
  bySource.set(input.source, s);
  s.n++;
  if (a instanceof Error || b instanceof Error) {
    if (a instanceof Error) s.errors.mailparser++;
    if (b instanceof Error) s.errors.postal++;
    const key = 'parse error';
    const f = byField.get(key) ?? { count: 0, samples: [] };
    byField.set(key, f);
    f.count++;
    if (f.samples.length < examples) f.samples.push(`${input.name}: mailparser ${a instanceof Error ? a.message : 'ok'} / postal-mime ${b instanceof Error ? b.message : 'ok'}`);
    continue;
  }
  let same = true;
  for (const field of FIELDS) {
    const x = short(comparable(a, field));
    const y = short(comparable(b, field));
    if (JSON.stringify(comparable(a, field)) === JSON.stringify(comparable(b, field))) continue;
    same = false;
    const f = byField.get(field) ?? { count: 0, samples: [] };
    byField.set(field, f);
    f.count++;
    if (f.samples.length < examples) f.samples.push(`${input.source} / ${input.name}\n      mailparser:  ${x}\n      postal-mime: ${y}`);
  }
  if (same) s.identical++;
}

console.log(`${inputs.length} messages; CPU for the parse alone: mailparser ${(cpuMailparser / inputs.length).toFixed(3)} ms / message, postal-mime (with memex's shaping) ${(cpuPostal / inputs.length).toFixed(3)} ms / message`);
for (const [source, s] of bySource) {
  console.log(`  ${source}: ${s.n} messages, ${s.identical} identical in every field; parse errors mailparser ${s.errors.mailparser}, postal-mime ${s.errors.postal}`);
}
console.log(byField.size ? 'Fields that differ (messages, first examples):' : 'No field differs.');
for (const [field, f] of byField) {
  console.log(`  ${field}: ${f.count}`);
  for (const sample of f.samples) console.log(`    - ${sample}`);
}
