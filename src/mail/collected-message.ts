/**
 * One parse of an RFC 822 message for the collectors. The parse route's `parseEmailBytes`
 * (src/mail/parse.ts) keeps only address strings and attachment descriptions; a collector also
 * needs display names (people[]), the raw Date offset (metadata) and the attachment bytes (upload), so
 * this reads the same parse (readMail, src/mail/message.ts) and peels .emlx envelopes with the
 * same `splitEmlx`.
 */
import crypto from 'node:crypto';
import type { DateSource } from './date.ts';
import { emlxPlistFlags } from './date.ts';
import { headerValues, type MailAddress, type MailMessage } from './message.ts';
import { dateOfMail, isoSeconds, messageBytes, readMail } from './parse.ts';
import type { MissingAttachment } from './partial-emlx.ts';

export type { MailAddress };

export interface MailAttachment {
  filename: string | null;
  mimeType: string;
  contentId: string | null;
  size: number;
  sha256: string;
  content: Buffer;
  inline: boolean;
}

/** The parsed message's fields as read (message.ts), and what a collector adds to them. */
export interface CollectedMessage
  extends Pick<MailMessage, 'messageId' | 'subject' | 'from' | 'sender' | 'to' | 'cc' | 'bcc' | 'inReplyTo' | 'references' | 'text' | 'html'> {
  /**
   * UTC instant of the Date header, ISO 8601 without fractions; when the header is absent or unreadable,
   * the first trustworthy fallback (Received, mbox From line, .emlx plist, file mtime); null when none.
   */
  date: string | null;
  /** Where `date` came from; null with it. */
  dateSource: DateSource | null;
  /** The Date header's own offset ("+09:00"), when it had one and `date` is from it. */
  dateOffset: string | null;
  listUnsubscribe: string | null;
  /** Headers that say a machine sent it (the relationship job marks such senders automated). */
  precedence?: string | null;
  autoSubmitted?: string | null;
  listId?: string | null;
  /** List-Post, X-Mailing-List and Errors-To: how a mailing list is recognised (mailing-list.ts). */
  listPost?: string | null;
  mailingList?: string | null;
  errorsTo?: string | null;
  attachments: MailAttachment[];
  /** `.partial.emlx` attachments whose file is not in the mailbox's Attachments folder. */
  attachmentsMissing: MissingAttachment[];
  /** Size of the RFC 822 message in bytes. */
  size: number;
  /** The RFC 822 message as read (an .emlx file's message part): what the gateway keeps as its original. */
  original: Buffer;
  /** An .emlx file's flags (read, answered, flagged, draft) from its property list, as IMAP names; else null. */
  emlxFlags: string[] | null;
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
  const dated = dateOfMail(parsed, { mboxFromLine: opts.mboxFromLine, emlxPlist, fileMtime: opts.mtime });
  const dateOk = dated?.source === 'date_header';
  return {
    messageId: parsed.messageId,
    subject: parsed.subject,
    from: parsed.from,
    sender: parsed.sender,
    to: parsed.to,
    cc: parsed.cc,
    bcc: parsed.bcc,
    date: dated ? isoSeconds(dated.date) : null,
    dateSource: dated?.source ?? null,
    dateOffset: dateOk ? dateHeaderOffset(headerValues(parsed.headerLines, 'date')[0]) : null,
    inReplyTo: parsed.inReplyTo,
    references: parsed.references,
    listUnsubscribe: headerValues(parsed.headerLines, 'list-unsubscribe')[0] ?? null,
    precedence: headerValues(parsed.headerLines, 'precedence')[0] ?? null,
    autoSubmitted: headerValues(parsed.headerLines, 'auto-submitted')[0] ?? null,
    listId: headerValues(parsed.headerLines, 'list-id')[0] ?? null,
    listPost: headerValues(parsed.headerLines, 'list-post')[0] ?? null,
    mailingList: headerValues(parsed.headerLines, 'x-mailing-list')[0] ?? null,
    errorsTo: headerValues(parsed.headerLines, 'errors-to')[0] ?? null,
    text: parsed.text,
    html: parsed.html,
    attachments: parsed.attachments.map((a) => ({
      filename: a.filename,
      mimeType: a.mimeType,
      contentId: a.contentId,
      size: a.content.length,
      sha256: crypto.createHash('sha256').update(a.content).digest('hex'),
      content: a.content,
      inline: a.disposition === 'inline',
    })),
    attachmentsMissing,
    size: message.length,
    original: message,
    emlxFlags: emlxPlistFlags(emlxPlist),
  };
}
