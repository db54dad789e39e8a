/**
 * Real-shaped mailing-list mail (issue 40): `git format-patch` of this repository's own history, each
 * patch posted to a list that appends Mailman's footer, and replies that quote it the ways people do:
 * interleaved reviews quoting commit message and diff lines, top-posted "Applied" notes over the whole
 * quoted patch, Outlook replies with the original unquoted under its header block, forwards, HTML-only
 * replies with a <blockquote>, quoted-printable bodies with accents, signatures with `-- ` and with a bare
 * `--`, "Sent from my phone" lines. Seeded: the same repository history and seed give the same mail.
 *
 * Each message comes with its decoded body as composed and, for plain bodies, the segments it was made
 * of (kind null: the author's own text), so a test can check that nothing is lost and each part is found.
 */
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BodyPartKind } from '../../src/mail/body-parts.ts';
import { PEOPLE, rng, sentence } from '../lib/generate.ts';

export type Shape = 'patch' | 'interleaved' | 'top-posted' | 'outlook' | 'forward' | 'html-only' | 'qp-signature';

export interface Segment {
  kind: BodyPartKind | null;
  text: string;
}

export interface ListMessage {
  /** Message-ID without angle brackets. */
  id: string;
  shape: Shape;
  parent: string | null;
  subject: string;
  /** UTC milliseconds. */
  date: number;
  raw: Buffer;
  /** The decoded body as composed (LF line breaks), for a plain body; for html-only, the HTML. */
  body: string;
  /** The plain body's segments, in order, joined by nothing (separators are own segments); empty for html-only. */
  segments: Segment[];
}

export interface ListMailOptions {
  /** Patch mails (commits of the repository, oldest first after the root, larger than maxPatchBytes left out). */
  patches: number;
  /** Replies per patch (on average; seeded). */
  repliesPerPatch?: number;
  seed?: number;
  repo?: string;
  maxPatchBytes?: number;
  /** Domain of the Message-IDs. */
  domain?: string;
}

export const LIST = { name: 'Memex-devel', address: 'memex-devel@lists.memex.example', id: 'memex-devel.lists.memex.example' };
export const FOOTER = `_______________________________________________\n${LIST.name} mailing list\n${LIST.address}\nhttps://lists.memex.example/mailman/listinfo/memex-devel`;

const here = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(here, '../..');

const git = (repo: string, args: string[]) => execFileSync('git', ['-C', repo, ...args], { maxBuffer: 1 << 28 }).toString('utf8');

/** A commit as `git format-patch` writes it: its header lines (From, Date, Subject…) and body. */
function formatPatch(repo: string, sha: string): { headers: string; body: string } {
  const out = git(repo, ['format-patch', '-1', sha, '--stdout']);
  const lines = out.split('\n');
  if (lines[0].startsWith('From ')) lines.shift(); // mbox separator
  const text = lines.join('\n');
  const cut = text.indexOf('\n\n');
  return { headers: text.slice(0, cut), body: text.slice(cut + 2) };
}

const quote = (text: string) => text.split('\n').map((l) => (l ? `> ${l}` : '>')).join('\n');
const rfcDate = (ms: number) => new Date(ms).toUTCString().replace('GMT', '+0000');

function qpEncode(s: string): string {
  const bytes = Buffer.from(s, 'utf8');
  let out = '';
  let lineLen = 0;
  for (const b of bytes) {
    let piece: string;
    if (b === 0x0a) {
      out += '\r\n';
      lineLen = 0;
      continue;
    }
    if ((b >= 33 && b <= 126 && b !== 61) || b === 32) piece = String.fromCharCode(b);
    else piece = `=${b.toString(16).toUpperCase().padStart(2, '0')}`;
    if (lineLen + piece.length > 75) {
      out += '=\r\n';
      lineLen = 0;
    }
    out += piece;
    lineLen += piece.length;
  }
  // A space before a line break is protected (transport may strip it).
  return out.replace(/ (\r\n)/g, '=20$1');
}

const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');

/** The commit message and the diff of a patch body (format-patch: message, `---`, diffstat, diffs, `-- `, version). */
function splitPatch(body: string): { message: string; patch: string; signature: string } | null {
  const sep = body.indexOf('\n---\n');
  const sig = body.lastIndexOf('\n-- \n');
  if (sep < 0 || sig < sep) return null;
  const message = body.slice(0, sep);
  // A message with a line of its own that git am would also cut at is left out (format-patch's own ambiguity).
  if (/^(---|-- ?)$/m.test(message)) return null;
  return { message, patch: body.slice(sep + 1, sig), signature: body.slice(sig + 1).replace(/\n+$/, '') };
}

export function generateListMail(opts: ListMailOptions): ListMessage[] {
  const repo = opts.repo ?? REPO;
  const r = rng(opts.seed ?? 40);
  const domain = opts.domain ?? 'memex-list.example';
  const maxBytes = opts.maxPatchBytes ?? 120_000;
  const shas = git(repo, ['rev-list', '--reverse', '--no-merges', 'HEAD']).trim().split('\n').slice(1);
  const out: ListMessage[] = [];
  const listHeaders = [
    `To: ${LIST.name} <${LIST.address}>`,
    `List-Id: ${LIST.name} <${LIST.id}>`,
    `List-Post: <mailto:${LIST.address}>`,
    'Precedence: list',
  ];
  let date = Date.UTC(2025, 0, 6, 9, 0, 0);
  for (const sha of shas) {
    if (out.filter((m) => m.shape === 'patch').length >= opts.patches) break;
    const fp = formatPatch(repo, sha);
    const parts = splitPatch(fp.body);
    if (!parts || Buffer.byteLength(fp.body) > maxBytes) continue;
    const n = out.length;
    const id = `patch-${n}-${sha.slice(0, 12)}@${domain}`;
    date += Math.floor(r() * 6 * 3600_000) + 60_000;
    const subject = /^Subject: (.*(?:\n[ \t].*)*)/m.exec(fp.headers)![1].replace(/\n[ \t]+/g, ' ');
    const headers = fp.headers.replace(/^Date: .*$/m, `Date: ${rfcDate(date)}`);
    const segments: Segment[] = [
      { kind: null, text: `${parts.message}\n` },
      { kind: 'patch', text: parts.patch.replace(/\n$/, '') },
      { kind: null, text: '\n' },
      { kind: 'signature', text: parts.signature },
      { kind: null, text: '\n\n' },
      { kind: 'footer', text: FOOTER },
    ];
    const body = segments.map((s) => s.text).join('');
    const raw = `${headers}\n${listHeaders.join('\n')}\nMessage-ID: <${id}>\n\n${body}\n`;
    out.push({ id, shape: 'patch', parent: null, subject, date, raw: Buffer.from(crlf(raw)), body, segments });

    const replies = Math.floor(r() * 2 * (opts.repliesPerPatch ?? 1.5) + 0.5);
    let parent = out[out.length - 1];
    for (let k = 0; k < replies; k++) {
      const shapes: Shape[] = ['interleaved', 'interleaved', 'top-posted', 'outlook', 'forward', 'html-only', 'qp-signature'];
      const shape = shapes[Math.floor(r() * shapes.length)];
      const who = PEOPLE[Math.floor(r() * PEOPLE.length)];
      date += Math.floor(r() * 3 * 3600_000) + 60_000;
      const replyId = `reply-${out.length}@${domain}`;
      const reSubject = `Re: ${parent.subject.replace(/^Re: /, '')}`;
      const author = parent.shape === 'patch' ? 'Seed maintainers' : (/^From: (.*)$/m.exec(parent.raw.toString('utf8'))?.[1].trim() ?? 'someone');
      const attribution = `On ${new Date(parent.date).toUTCString().replace(' GMT', '')}, ${author} wrote:`;
      const parentMessage = parent.segments.filter((s) => s.kind === null).map((s) => s.text).join('').trim() || sentence(r);
      const parentPlain = parent.segments.map((s) => s.text).join('') || parentMessage;
      const diffLines = parent.segments.find((s) => s.kind === 'patch')?.text.split('\n').filter((l) => /^[+-][^+-]/.test(l)) ?? [];
      const own = () => sentence(r, 8, 20);
      const sig = `-- \n${who.name}`;
      let segs: Segment[];
      let ctype = 'Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit';
      let html: string | null = null;
      let encoded: ((b: string) => string) | null = null;
      switch (shape) {
        case 'interleaved': {
          const lines = parentMessage.split('\n');
          const hunk = diffLines.slice(0, 2 + Math.floor(r() * 4)).join('\n');
          segs = [
            // A greeting first, as people write: a cleaner that cut at the attribution kept only this.
            { kind: null, text: `Hi ${author.split(' ')[0]},\n\n` },
            { kind: 'attribution', text: attribution },
            { kind: null, text: '\n' },
            { kind: 'quote', text: quote(lines.slice(0, 2).join('\n')) },
            { kind: null, text: `\n\n${own()}\n\n` },
            ...(hunk ? [{ kind: 'quote' as const, text: quote(hunk) }, { kind: null, text: `\n\n${r() < 0.3 ? `Applied and queued for v0.${Math.floor(r() * 9)}, thanks.` : own()}\n\n` }] : []),
            { kind: 'signature', text: sig },
          ];
          break;
        }
        case 'top-posted':
          segs = [
            { kind: null, text: `${r() < 0.5 ? 'Applied, thanks.' : own()}\n\n` },
            { kind: 'signature', text: 'Sent from my phone'.replace('phone', 'iPhone') },
            { kind: null, text: '\n\n' },
            { kind: 'attribution', text: attribution },
            { kind: null, text: '\n' },
            { kind: 'quote', text: quote(parentPlain.trim()) },
          ];
          break;
        case 'outlook':
          segs = [
            { kind: null, text: `${own()}\n\n` },
            { kind: 'forward', text: `________________________________\nFrom: ${author}\nSent: ${new Date(parent.date).toUTCString()}\nTo: ${LIST.address}\nSubject: ${parent.subject}` },
            { kind: null, text: '\n\n' },
            { kind: 'quote', text: parentMessage },
          ];
          break;
        case 'forward':
          segs = [
            { kind: null, text: `FYI, ${own()}\n\n` },
            { kind: 'forward', text: `---------- Forwarded message ---------\nFrom: ${author}\nDate: ${new Date(parent.date).toUTCString()}\nSubject: ${parent.subject}\nTo: ${LIST.address}` },
            { kind: null, text: `\n\n${parentMessage}` },
          ];
          break;
        case 'qp-signature':
          segs = [
            { kind: null, text: `Café test: ${own()} Déjà vu, naïve résumé.\n\n` },
            { kind: 'signature', text: `--\n${who.name}\n${who.phone}` },
          ];
          ctype = 'Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable';
          encoded = qpEncode;
          break;
        case 'html-only':
        default: {
          const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
          html = `<html><body><p>${esc(own())}</p><div>${esc(attribution)}</div><blockquote>${parentMessage
            .split('\n\n')
            .map((p) => `<p>${esc(p)}</p>`)
            .join('')}</blockquote><p>${esc(who.name)}</p></body></html>`;
          segs = [];
          ctype = 'Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: 8bit';
          break;
        }
      }
      // The list appends its footer to every plain body.
      if (!html) segs.push({ kind: null, text: '\n\n' }, { kind: 'footer', text: FOOTER });
      const replyBody = html ?? segs.map((s) => s.text).join('');
      const head = [
        `From: ${who.name} <${who.email}>`,
        ...listHeaders,
        `Subject: ${reSubject}`,
        `Date: ${rfcDate(date)}`,
        `Message-ID: <${replyId}>`,
        `In-Reply-To: <${parent.id}>`,
        `References: <${parent.id}>`,
        'MIME-Version: 1.0',
        ctype,
      ].join('\n');
      const rawBody = encoded ? encoded(replyBody) : crlf(replyBody);
      const msg: ListMessage = {
        id: replyId,
        shape,
        parent: parent.id,
        subject: reSubject,
        date,
        raw: Buffer.concat([Buffer.from(crlf(`${head}\n\n`)), Buffer.from(rawBody), Buffer.from('\r\n')]),
        body: replyBody,
        segments: segs,
      };
      out.push(msg);
      if (r() < 0.5) parent = msg;
    }
  }
  return out;
}
