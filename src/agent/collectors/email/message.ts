/**
 * One parse of an RFC 822 message for the collectors. The parse route's `parseEmailBytes`
 * (src/agent/email/parse.ts) keeps only address strings and attachment descriptions; a collector also
 * needs display names (people[]), the raw Date offset (metadata) and the attachment bytes (upload), so
 * this wraps mailparser once with the same options and peels .emlx envelopes with the same `splitEmlx`.
 */
import crypto from 'node:crypto';
import type { AddressObject } from 'mailparser';
import type { DateSource } from '../../email/mail-date.ts';
import { dateOfMail, isoSeconds, messageBytes, readMail } from '../../email/parse.ts';
import type { MissingAttachment } from '../../email/partial-emlx.ts';

export interface MailAddress {
  address: string;
  name: string | null;
}

export interface MailAttachment {
  filename: string | null;
  mimeType: string;
  contentId: string | null;
  size: number;
  sha256: string;
  content: Buffer;
  inline: boolean;
}

export interface CollectedMessage {
  messageId: string | null;
  subject: string | null;
  from: MailAddress[];
  sender: MailAddress[];
  to: MailAddress[];
  cc: MailAddress[];
  bcc: MailAddress[];
  /**
   * UTC instant of the Date header, ISO 8601 without fractions; when the header is absent or unreadable,
   * the first trustworthy fallback (Received, mbox From line, .emlx plist, file mtime); null when none.
   */
  date: string | null;
  /** Where `date` came from; null with it. */
  dateSource: DateSource | null;
  /** The Date header's own offset ("+09:00"), when it had one and `date` is from it. */
  dateOffset: string | null;
  inReplyTo: string | null;
  references: string[];
  listUnsubscribe: string | null;
  text: string | null;
  html: string | null;
  attachments: MailAttachment[];
  /** `.partial.emlx` attachments whose file is not in the mailbox's Attachments folder. */
  attachmentsMissing: MissingAttachment[];
  /** Size of the RFC 822 message in bytes. */
  size: number;
}

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

/** "+0900" / "-0800" at the end of a Date header (an optional "(PST)" comment after it) as "+09:00". */
export function dateHeaderOffset(raw: string | undefined): string | null {
  if (!raw) return null;
  const m = /([+-])(\d{2})(\d{2})\s*(\([^)]*\))?\s*$/.exec(raw.trim());
  if (m) return `${m[1]}${m[2]}:${m[3]}`;
  if (/\b(GMT|UT|UTC|Z)\s*$/i.test(raw.trim())) return '+00:00';
  return null;
}

/**
 * Parses message bytes (an .emlx file when `emlx`; its `path` lets a `.partial.emlx` get its
 * attachments back). Throws EmailInputError(422) for unreadable input.
 */
export async function parseCollectedMessage(
  bytes: Buffer,
  opts: { emlx?: boolean; path?: string; mboxFromLine?: string | null; mtime?: Date | null } = {},
): Promise<CollectedMessage> {
  const { message, attachmentsMissing, emlxPlist } = await messageBytes(bytes, opts);
  const parsed = await readMail(message);
  const rawDate = parsed.headers.get('date');
  const dated = dateOfMail(parsed, { mboxFromLine: opts.mboxFromLine, emlxPlist, fileMtime: opts.mtime });
  const dateOk = dated?.source === 'date_header';
  const refs = parsed.references === undefined ? [] : Array.isArray(parsed.references) ? parsed.references : parsed.references.split(/\s+/);
  const listUnsub = (parsed.headerLines ?? []).find((h) => h.key.toLowerCase() === 'list-unsubscribe');
  const rawDateLine = (parsed.headerLines ?? []).find((h) => h.key.toLowerCase() === 'date')?.line;
  const rawDateValue = rawDateLine ? rawDateLine.slice(rawDateLine.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim() : typeof rawDate === 'string' ? rawDate : undefined;
  return {
    messageId: parsed.messageId ?? null,
    subject: parsed.subject ?? null,
    from: addressList(parsed.from),
    sender: addressList(parsed.headers.get('sender') as AddressObject | undefined),
    to: addressList(parsed.to),
    cc: addressList(parsed.cc),
    bcc: addressList(parsed.bcc),
    date: dated ? isoSeconds(dated.date) : null,
    dateSource: dated?.source ?? null,
    dateOffset: dateOk ? dateHeaderOffset(rawDateValue) : null,
    inReplyTo: parsed.inReplyTo ?? null,
    references: refs.filter((r) => r.length > 0),
    listUnsubscribe: listUnsub ? listUnsub.line.slice(listUnsub.line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim() : null,
    text: parsed.text ?? null,
    html: typeof parsed.html === 'string' ? parsed.html : null,
    attachments: parsed.attachments.map((a) => ({
      filename: a.filename ?? null,
      mimeType: a.contentType || 'application/octet-stream',
      contentId: a.contentId ?? null,
      size: a.content.length,
      sha256: crypto.createHash('sha256').update(a.content).digest('hex'),
      content: a.content,
      inline: a.contentDisposition === 'inline',
    })),
    attachmentsMissing,
    size: message.length,
  };
}
