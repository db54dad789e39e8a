/**
 * .emlx / .eml parsing (host-agent spec §2.2, spec-notes B2.2). MIME is parsed by postal-mime
 * (message.ts), never by hand; this module only peels Apple Mail's .emlx envelope (a byte-count line before the RFC 822 message
 * and an XML property list after it) and shapes the result.
 *
 * These are plain functions so the email collectors can reuse them without the HTTP layer.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { expandHome } from '../util/fs.ts';
import { messageDate, type DateClues, type DateSource } from './date.ts';
import { headerValues, parseMime, type MailAddress, type MailHeaderLine, type MailMessage } from './message.ts';
import { repairMime } from './mime-repair.ts';
import { isSignaturePart } from './signature.ts';
import { MAX_EMAIL_FILE_BYTES } from './limits.ts';
import { restorePartialEmlx, type MissingAttachment } from './partial-emlx.ts';
import { MemexError } from '../util/errors.ts';

export interface EmailAttachmentInfo {
  filename: string | null;
  mimeType: string;
  contentId: string | null;
  size: number;
  /** Position among the message's attachments, 0-based. */
  partIndex: number;
}

export interface ParsedEmail {
  messageId: string | null;
  subject: string | null;
  from: string[];
  to: string[];
  cc: string[];
  bcc: string[];
  /**
   * ISO 8601 without fractional seconds: the Date header, or when it is absent or unreadable the first
   * trustworthy fallback (see date.ts); null when there is none.
   */
  date: string | null;
  /** Where `date` came from (`date_header`, `received`, `mbox_from`, `emlx_plist`, `file_mtime`), null with it. */
  dateSource: DateSource | null;
  inReplyTo: string | null;
  references: string[];
  listUnsubscribe: string | null;
  bodyPlainText: string | null;
  bodyHTML: string | null;
  attachments: EmailAttachmentInfo[];
  /** Raw header values (folding removed) keyed by lowercased name; the last duplicate wins. */
  headers: Record<string, string>;
  /** `.partial.emlx` attachments whose file is not in the mailbox's Attachments folder. */
  attachmentsMissing: MissingAttachment[];
}

/** An input problem, carrying the HTTP status the agent answers with. */
export class EmailInputError extends MemexError {
  override name = 'EmailInputError';
  constructor(
    status: number,
    message: string,
  ) {
    super(message, 'AGENT.EMAIL_INPUT', status);
  }
}

/** Largest message file accepted by the parse route and the collectors (limits.ts). */
export { MAX_EMAIL_FILE_BYTES };

export interface EmlxEnvelope {
  message: Buffer;
  /** The declared byte count, or null when the first line is not a number (then the file is taken as .eml). */
  declaredLength: number | null;
  /** True when the declared count and the actual message length disagree (handled, but worth logging). */
  lengthMismatch: boolean;
  hasPlist: boolean;
  /** The property-list trailer (latin1 text), when there is one. */
  plist: string | null;
}

const PLIST_START = /\r?\n<\?xml[^>]*\?>\s*(<!DOCTYPE plist|<plist)/g;

/**
 * Splits an .emlx file into its RFC 822 message. The count on the first line is trusted only when it
 * lands exactly on the plist trailer; otherwise the trailer is found by searching for the XML prolog
 * (Haven's fixtures and real files both carry wrong counts). A count larger than the data with no trailer
 * means the file was cut short: that is an error, not a message.
 */
export function splitEmlx(file: Buffer): EmlxEnvelope {
  const nl = file.indexOf(0x0a);
  const firstLine = file.subarray(0, nl === -1 ? file.length : nl).toString('latin1').trim();
  if (!/^\d{1,12}$/.test(firstLine)) {
    return { message: file, declaredLength: null, lengthMismatch: false, hasPlist: false, plist: null };
  }
  const declared = Number(firstLine);
  const rest = file.subarray(nl + 1);
  const atCount = rest.subarray(declared, declared + 64).toString('latin1');
  if (declared <= rest.length && /^\s*<\?xml/.test(atCount)) {
    return { message: rest.subarray(0, declared), declaredLength: declared, lengthMismatch: false, hasPlist: true, plist: rest.subarray(declared).toString('latin1') };
  }
  // Find the last XML prolog that starts a plist: the trailer is at the end of the file.
  const text = rest.toString('latin1'); // latin1 keeps byte offsets equal to string offsets
  let plistAt = -1;
  // Cut just before `<?xml`, keeping the message's own last line break.
  for (const m of text.matchAll(PLIST_START)) plistAt = (m.index ?? 0) + m[0].indexOf('<?xml');
  if (plistAt >= 0) {
    return { message: rest.subarray(0, plistAt), declaredLength: declared, lengthMismatch: true, hasPlist: true, plist: text.slice(plistAt) };
  }
  if (declared > rest.length) {
    throw new EmailInputError(
      422,
      `Truncated .emlx file: the first line declares ${declared} bytes but only ${rest.length} follow and there is no property-list trailer`,
    );
  }
  return { message: rest.subarray(0, declared), declaredLength: declared, lengthMismatch: declared !== rest.length, hasPlist: false, plist: null };
}

function headerMap(lines: readonly MailHeaderLine[]): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const { key, line } of lines) {
    const colon = line.indexOf(':');
    headers[key] = (colon === -1 ? '' : line.slice(colon + 1)).replace(/\r?\n[ \t]+/g, ' ').trim();
  }
  return headers;
}

const addressStrings = (list: MailAddress[]) => list.map((a) => a.address);

/** The RFC 822 message of a mail file, with what had to be done to get it whole. */
export interface MessageBytes {
  message: Buffer;
  /** `.partial.emlx` attachments that could not be put back (see partial-emlx.ts). */
  attachmentsMissing: MissingAttachment[];
  /** The .emlx property-list trailer (it carries `date-received`), when there is one. */
  emlxPlist: string | null;
}

/**
 * The message of a mail file: the .emlx envelope peeled when `emlx`, and, when the file's path is
 * known, a `.partial.emlx` message's left-out attachments restored from the mailbox's Attachments folder.
 */
export async function messageBytes(file: Buffer, opts: { emlx?: boolean; path?: string } = {}): Promise<MessageBytes> {
  const envelope = opts.emlx ? splitEmlx(file) : null;
  const message = envelope ? envelope.message : file;
  const emlxPlist = envelope?.plist ?? null;
  if (!opts.emlx || !opts.path) return { message, attachmentsMissing: [], emlxPlist };
  const restored = await restorePartialEmlx(message, opts.path);
  return { message: restored.message, attachmentsMissing: restored.missing, emlxPlist };
}

/**
 * The message's date from its own Date header (not a parser's reading of it: mailparser made an unreadable
 * header "now"), else from the fallbacks of `clues` plus the message's Received headers.
 */
export function dateOfMail(parsed: MailMessage, clues: DateClues = {}): { date: Date; source: DateSource } | null {
  return messageDate(headerValues(parsed.headerLines, 'date')[0], { ...clues, received: headerValues(parsed.headerLines, 'received') });
}

export function isoSeconds(d: Date): string {
  return d.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

/**
 * Reads an RFC 822 message (bytes of an .eml, or an .emlx file when `emlx` is true) after repairMime.
 * Throws EmailInputError(422) for empty input, unparsable bytes or a missing header block. Shared by
 * the email utilities and the collectors.
 */
export async function readMail(file: Buffer, opts: { emlx?: boolean } = {}): Promise<MailMessage> {
  const message = opts.emlx ? splitEmlx(file).message : file;
  if (message.toString('latin1', 0, Math.min(message.length, 65536)).trim() === '') {
    throw new EmailInputError(422, 'The file contains no email message');
  }
  let parsed: MailMessage;
  try {
    parsed = await parseMime(repairMime(message));
  } catch (err) {
    throw new EmailInputError(422, `Not a readable email message: ${(err as Error).message}`);
  }
  // An attached message (message/rfc822) is an attachment, as mutt and Apple Mail list it, even when
  // marked inline; its text is not mixed into the body of the message that carries it.
  for (const a of parsed.attachments) {
    if (!a.filename && a.mimeType === 'message/rfc822') a.filename = 'attached-message.eml';
  }
  // The signature of signed mail (signature.asc, smime.p7s) is no attachment: never a document of its own.
  parsed.attachments = parsed.attachments.filter((a) => !isSignaturePart(a));
  // A message needs a header block with at least one of the headers every mail carries.
  const names = new Set(parsed.headerLines.map((h) => h.key));
  if (!['from', 'to', 'subject', 'date', 'message-id', 'received', 'content-type'].some((h) => names.has(h))) {
    throw new EmailInputError(422, 'Not an email message: no RFC 822 header block found');
  }
  return parsed;
}

/**
 * Parses an RFC 822 message (bytes of an .eml, or an .emlx file when `emlx` is true; `path`, the
 * file's location, lets a `.partial.emlx` get its attachments back).
 */
export async function parseEmailBytes(file: Buffer, opts: { emlx?: boolean; path?: string; mtime?: Date } = {}): Promise<ParsedEmail> {
  const { message, attachmentsMissing, emlxPlist } = await messageBytes(file, opts);
  const parsed = await readMail(message);
  const dated = dateOfMail(parsed, { emlxPlist, fileMtime: opts.mtime });
  const headers = headerMap(parsed.headerLines);
  return {
    messageId: parsed.messageId ?? headers['message-id'] ?? null,
    subject: parsed.subject,
    from: addressStrings(parsed.from),
    to: addressStrings(parsed.to),
    cc: addressStrings(parsed.cc),
    bcc: addressStrings(parsed.bcc),
    date: dated ? isoSeconds(dated.date) : null,
    dateSource: dated?.source ?? null,
    inReplyTo: parsed.inReplyTo,
    references: parsed.references,
    listUnsubscribe: headers['list-unsubscribe'] ?? null,
    bodyPlainText: parsed.text,
    bodyHTML: parsed.html,
    attachments: parsed.attachments.map((a, i) => ({
      filename: a.filename,
      mimeType: a.mimeType,
      contentId: a.contentId,
      size: a.content.length,
      partIndex: i,
    })),
    headers,
    attachmentsMissing,
  };
}

/** True when `child` (a resolved real path) is `root` or inside it. */
function isInside(child: string, root: string): boolean {
  const rel = path.relative(root, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * Resolves a requested path (`~` expanded, symlinks followed) and checks it lies under one of the
 * allowed roots (themselves resolved). Throws EmailInputError 400/403/404.
 */
export async function confinePath(requested: string, roots: string[]): Promise<string> {
  if (typeof requested !== 'string' || requested.trim() === '') throw new EmailInputError(400, 'Missing required field: path');
  if (requested.includes('\0')) throw new EmailInputError(400, 'Invalid path');
  const abs = path.resolve(expandHome(requested.trim()));
  let real: string;
  try {
    real = await fs.realpath(abs);
  } catch {
    // Do not say whether a path outside the roots exists: check the unresolved path first.
    const lexicallyInside = roots.some((r) => isInside(abs, r));
    if (!lexicallyInside) throw new EmailInputError(403, 'Path is outside the configured mail roots');
    throw new EmailInputError(404, `File not found: ${requested}`);
  }
  const realRoots = await Promise.all(roots.map((r) => fs.realpath(r).catch(() => null)));
  if (!realRoots.some((r) => r !== null && isInside(real, r))) {
    throw new EmailInputError(403, 'Path is outside the configured mail roots');
  }
  return real;
}

/** Reads and parses a confined .emlx or .eml file. */
export async function parseEmailFile(requested: string, roots: string[]): Promise<ParsedEmail> {
  const real = await confinePath(requested, roots);
  const ext = path.extname(real).toLowerCase();
  if (ext !== '.emlx' && ext !== '.eml') throw new EmailInputError(400, 'Only .emlx and .eml files can be parsed');
  const stat = await fs.stat(real);
  if (!stat.isFile()) throw new EmailInputError(400, 'Path is not a file');
  if (stat.size > MAX_EMAIL_FILE_BYTES) {
    throw new EmailInputError(413, `File is ${stat.size} bytes; the limit is ${MAX_EMAIL_FILE_BYTES} bytes`);
  }
  const bytes = await fs.readFile(real);
  return parseEmailBytes(bytes, { emlx: ext === '.emlx', path: real, mtime: stat.mtime });
}
