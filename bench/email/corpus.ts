/**
 * A generated mail corpus with known conversations, for the email bench (bench/email/peer.ts) and the
 * threading tests. Seeded, so runs compare. Each conversation is a tree: a root and replies to earlier
 * messages of it; a reply carries the full References chain (70 %), only In-Reply-To (15 %), or a
 * truncated References that misses the root (15 %), as real mail does. 30 % of messages are
 * multipart/alternative with an HTML part, 10 % carry an attachment. Dates rise within a conversation.
 */
import fs from 'node:fs';
import path from 'node:path';
import { rng } from '../lib/generate.ts';

const WORDS = (
  'meeting lunch tomorrow project budget invoice flight hotel dinner weekend report draft review call ' +
  'schedule deadline client contract payment receipt appointment school birthday train ticket conference ' +
  'slides notes summary question answer update status plan launch design feedback garden repair insurance'
).split(' ');

export interface GeneratedMessage {
  /** Message-ID without angle brackets. */
  id: string;
  /** Index of its conversation in `GeneratedCorpus.threads`. */
  thread: number;
  parent: string | null;
  subject: string;
  /** UTC milliseconds of its Date header. */
  date: number;
  raw: Buffer;
}

export interface GeneratedCorpus {
  messages: GeneratedMessage[];
  /** Message ids of each conversation, root first. */
  threads: string[][];
}

export interface CorpusOptions {
  messages: number;
  seed?: number;
  /** Domain of the Message-IDs (distinct corpora in one database need distinct domains). */
  domain?: string;
  htmlShare?: number;
  attachmentShare?: number;
  /** UTC milliseconds of the first conversation's start (default 2024-01-01). */
  start?: number;
  /**
   * Mail as people write it: replies quote the message they answer ("On … wrote:" and `> ` lines),
   * and half the senders sign with a `-- ` signature. Off by default (the seeded corpus stays as it was).
   */
  quoting?: boolean;
}

export function generateCorpus(opts: CorpusOptions): GeneratedCorpus {
  const r = rng(opts.seed ?? 17);
  const domain = opts.domain ?? 'corpus.example';
  const html = opts.htmlShare ?? 0.3;
  const attach = opts.attachmentShare ?? 0.1;
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const words = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(' ');
  const people = Array.from({ length: 40 }, (_, i) => ({ name: `Person ${i}`, email: `p${i}@people.example` }));
  const messages: GeneratedMessage[] = [];
  const threads: string[][] = [];
  let t0 = opts.start ?? Date.UTC(2024, 0, 1);
  const bodies = new Map<string, { from: string; date: number; body: string }>();
  const signature = (p: { name: string }, i: number) => (i % 2 === 0 ? `\n\n-- \n${p.name}\nSenior ${pick(WORDS)} lead, Example Ltd.\n+1 555 0100 ${i}` : '');
  while (messages.length < opts.messages) {
    // 40 % single messages, the rest 2..14 messages.
    const size = Math.min(opts.messages - messages.length, r() < 0.4 ? 1 : 2 + Math.floor(r() * r() * 13));
    const ti = threads.length;
    const subject = `${words(3)} ${ti}`;
    const ids: string[] = [];
    const refsOf = new Map<string, string[]>();
    const cast = [pick(people), pick(people), pick(people)];
    let date = (t0 += 3_600_000 * (1 + Math.floor(r() * 20)));
    for (let k = 0; k < size; k++) {
      const id = `m${messages.length}.${ti}@${domain}`;
      const parent = k === 0 ? null : ids[Math.floor(r() * ids.length)];
      const chain = parent ? [...refsOf.get(parent)!, parent] : [];
      refsOf.set(id, chain);
      date += 60_000 * (1 + Math.floor(r() * 600));
      const style = r();
      const head: string[] = [
        `From: ${cast[k % 3].name} <${cast[k % 3].email}>`,
        `To: ${cast[(k + 1) % 3].name} <${cast[(k + 1) % 3].email}>`,
        `Subject: ${parent ? (r() < 0.2 ? 'Fwd: ' : 'Re: ') : ''}${subject}`,
        `Date: ${new Date(date).toUTCString().replace('GMT', '+0000')}`,
        `Message-ID: <${id}>`,
      ];
      if (parent) {
        head.push(`In-Reply-To: <${parent}>`);
        if (style < 0.7) head.push(`References: ${chain.map((c) => `<${c}>`).join(' ')}`);
        else if (style >= 0.85 && chain.length > 1) head.push(`References: ${chain.slice(1).map((c) => `<${c}>`).join(' ')}`);
      }
      head.push('MIME-Version: 1.0');
      let body = Array.from({ length: 1 + Math.floor(r() * 4) }, () => `${words(10 + Math.floor(r() * 30))}.`).join('\n\n');
      if (opts.quoting) {
        const sender = cast[k % 3];
        const quoted = parent ? bodies.get(parent) : undefined;
        body += signature(sender, people.indexOf(sender));
        if (quoted) {
          const when = new Date(quoted.date).toUTCString().replace('GMT', '+0000');
          body += `\n\nOn ${when}, ${quoted.from} wrote:\n${quoted.body.slice(0, 1500).split('\n').map((l) => `> ${l}`.trimEnd()).join('\n')}`;
        }
        bodies.set(id, { from: sender.name, date, body });
      }
      const raw = mime(head, body, r() < html, r() < attach ? Buffer.from(Array.from({ length: 2048 + Math.floor(r() * 8192) }, () => Math.floor(r() * 256))) : null, messages.length);
      messages.push({ id, thread: ti, parent, subject, date, raw: Buffer.from(raw) });
      ids.push(id);
    }
    threads.push(ids);
  }
  return { messages, threads };
}

function mime(head: string[], body: string, withHtml: boolean, attachment: Buffer | null, n: number): string {
  const text = ['Content-Type: text/plain; charset=utf-8', '', body];
  const alt = withHtml
    ? [`Content-Type: multipart/alternative; boundary="alt${n}"`, '', `--alt${n}`, ...text, `--alt${n}`,
        'Content-Type: text/html; charset=utf-8', '', `<html><body><p>${body.replace(/\n\n/g, '</p><p>')}</p></body></html>`, `--alt${n}--`]
    : text;
  if (!attachment) return [...head, ...alt, ''].join('\r\n');
  const b64 = attachment.toString('base64').replace(/.{76}/g, '$&\r\n');
  return [...head, `Content-Type: multipart/mixed; boundary="mix${n}"`, '', `--mix${n}`, ...alt, `--mix${n}`,
    'Content-Type: application/octet-stream', `Content-Disposition: attachment; filename="data-${n}.bin"`,
    'Content-Transfer-Encoding: base64', '', b64, `--mix${n}--`, ''].join('\r\n');
}

/** Writes the messages as a Maildir (cur/ files, flag S) and returns its path. */
export function writeMaildir(dir: string, messages: GeneratedMessage[]): string {
  for (const d of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  messages.forEach((m, i) => fs.writeFileSync(path.join(dir, 'cur', `${1700000000 + i}.M${i}P1.bench:2,S`), m.raw));
  return dir;
}

/**
 * Writes the messages as Apple Mail keeps them (what the `.emlx` collector reads): one mailbox folder,
 * `Messages/<n>.emlx` in folders of 1,000, each file the byte count, the message and a property list.
 */
export function writeEmlxTree(dir: string, messages: GeneratedMessage[]): string {
  messages.forEach((m, i) => {
    const folder = path.join(dir, 'INBOX.mbox', 'Data', String(Math.floor(i / 1000)), 'Messages');
    if (i % 1000 === 0) fs.mkdirSync(folder, { recursive: true });
    const plist = `<?xml version="1.0" encoding="UTF-8"?>\n<plist version="1.0"><dict><key>flags</key><integer>1</integer></dict></plist>\n`;
    fs.writeFileSync(path.join(folder, `${i}.emlx`), Buffer.concat([Buffer.from(`${m.raw.length}\n`), m.raw, Buffer.from(plist)]));
  });
  return dir;
}

/** Writes the messages as an mboxrd file. */
export function writeMbox(file: string, messages: GeneratedMessage[]): string {
  const out = fs.openSync(file, 'w');
  for (const m of messages) {
    const text = m.raw.toString('latin1').replace(/\r\n/g, '\n').replace(/^(>*From )/gm, '>$1');
    fs.writeSync(out, `From bench@example ${new Date(m.date).toUTCString()}\n${text}\n`, null, 'latin1');
  }
  fs.closeSync(out);
  return file;
}
