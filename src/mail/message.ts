/**
 * The one place that turns RFC 822 bytes into a parsed message: postal-mime reads the MIME (never parsed
 * by hand here), and this shapes what memex uses of it, so nothing else imports a parser's types.
 *
 * postal-mime (buffer-based, no Node streams; mailparser's author) replaced mailparser for issue 17: the
 * importer spent most of mailparser's time in its stream machinery. Where the two differ, this module
 * keeps mailparser's meaning:
 * - text and HTML are the message's own parts: postal-mime would write an HTML version of a text part
 *   (and a text version of an HTML part) when a message mixes the two outside multipart/alternative;
 *   `OwnPartsParser` joins the parts as they are instead (see below);
 * - From and Sender list every address of their (first) header, not just the first address;
 * - Message-ID, In-Reply-To and each References entry are written `<id>`; every References header counts;
 * - internationalised domains (`xn--`) are shown in Unicode, as mailparser did;
 * - the Subject's folding counts as one blank; a delivery report's status part is text;
 * - attached messages (message/rfc822) are attachments, never mixed into the body.
 * Charsets TextDecoder lacks or Node 20 misreads, split encoded words, QP transport blanks and the bytes of
 * non-base64 attachments are dealt with before parsing (mime-repair.ts). bench/email/parsers.ts compares
 * the two parsers field by field.
 */
import { domainToUnicode } from 'node:url';
import PostalMime, { addressParser, decodeWords, type Address, type Email } from 'postal-mime';

export interface MailAddress {
  address: string;
  name: string | null;
}

/** A raw header line: `key` lowercased, `line` the whole field as written (folding kept). */
export interface MailHeaderLine {
  key: string;
  line: string;
}

export interface MailPart {
  filename: string | null;
  /** Lowercased MIME type. */
  mimeType: string;
  /** The Content-ID header as written (angle brackets included), or null. */
  contentId: string | null;
  /** `inline`, `attachment` (or another token the message carries), null without the header. */
  disposition: string | null;
  content: Buffer;
}

export interface MailMessage {
  headerLines: MailHeaderLine[];
  messageId: string | null;
  subject: string | null;
  from: MailAddress[];
  sender: MailAddress[];
  to: MailAddress[];
  cc: MailAddress[];
  bcc: MailAddress[];
  inReplyTo: string | null;
  references: string[];
  /** The message's own text/plain parts, joined with a line break; null when it has none. */
  text: string | null;
  /** The message's own text/html parts, joined with `<br/>\n` (as mailparser did); null when it has none. */
  html: string | null;
  attachments: MailPart[];
}

/** Values (folding removed) of every header named `name` (lowercase), top to bottom. */
export function headerValues(lines: readonly MailHeaderLine[], name: string): string[] {
  const out: string[] = [];
  for (const h of lines) {
    if (h.key === name) out.push(h.line.slice(h.line.indexOf(':') + 1).replace(/\r?\n[ \t]+/g, ' ').trim());
  }
  return out;
}

/**
 * The parts of postal-mime 4.0 this module reads: the parse tree (to drop the line break its decoders add
 * after a part's last line) and the text entries `renderTextContent` joins. Each key of `textMap` is a
 * text part, or a multipart/alternative holding its representations.
 */
interface PostalNode {
  childNodes: PostalNode[];
  contentType: { multipart: string | false };
  contentTransferEncoding: { encoding: string };
  content: ArrayBuffer | null;
}
interface PostalInternals {
  root: PostalNode;
  attachments: { mimeType: string; content: ArrayBuffer | Uint8Array | string }[];
  textMap: Map<unknown, { plain?: { type: string; value: unknown }[]; html?: { type: string; value: unknown }[] }>;
  textContent: Record<string, string>;
}

/**
 * postal-mime with three steps changed, all relying on its internals (hence the exact version in
 * package.json, the check below, and test/agent/email-mime.test.ts):
 * - `renderTextContent` fills a missing text or HTML representation by converting the other one. memex
 *   stores what the sender wrote (the host-agent spec's bodyPlainText/bodyHTML), so parts are joined as
 *   they are;
 * - its line decoders (7bit, 8bit, quoted-printable) end a part with a line break of their own, where the
 *   line break before a boundary belongs to the boundary (RFC 2046 §5.1.1): it is dropped before the parts
 *   are collected, so parts join as mailparser joined them. (Attachments in those encodings are rewritten
 *   as base64 before parsing, mime-repair.ts, so their bytes are exact.)
 * - `collectAttachment` turns a calendar attachment (text/calendar, application/ics) into UTF-8 text with LF
 *   line ends; its bytes as the message carries them are kept instead (its SHA-256 names the stored file).
 */
class OwnPartsParser extends PostalMime {
  collectNode(node: unknown, alternative: unknown, related: boolean): Promise<void> {
    const self = this as unknown as PostalInternals;
    if (node === self.root) dropDecoderLineBreaks(self.root);
    return (PostalMime.prototype as unknown as { collectNode: (n: unknown, a: unknown, r: boolean) => Promise<void> }).collectNode.call(this, node, alternative, related);
  }

  /** A calendar attachment keeps its bytes: postal-mime re-encodes it as UTF-8 with LF line ends. */
  collectAttachment(node: unknown, content: ArrayBuffer, related: boolean, rfc822DepthExceeded: boolean): void {
    const self = this as unknown as PostalInternals;
    (PostalMime.prototype as unknown as { collectAttachment: (n: unknown, c: ArrayBuffer, r: boolean, d: boolean) => void }).collectAttachment.call(
      this,
      node,
      content,
      related,
      rfc822DepthExceeded,
    );
    const added = self.attachments[self.attachments.length - 1];
    if (added && (added.mimeType === 'text/calendar' || added.mimeType === 'application/ics')) added.content = content;
  }

  renderTextContent(): void {
    const self = this as unknown as PostalInternals;
    const plain: string[] = [];
    const html: string[] = [];
    for (const entry of self.textMap.values()) {
      for (const e of entry.plain ?? []) if (e.type === 'text') plain.push(String(e.value));
      for (const e of entry.html ?? []) if (e.type === 'text') html.push(String(e.value));
    }
    if (plain.length) self.textContent.plain = plain.join('\n');
    if (html.length) self.textContent.html = html.join('<br/>\n');
  }
}
for (const method of ['collectNode', 'collectAttachment', 'renderTextContent']) {
  if (typeof (PostalMime.prototype as unknown as Record<string, unknown>)[method] !== 'function') {
    throw new Error(`postal-mime no longer has ${method}: src/mail/message.ts needs updating`);
  }
}

function dropDecoderLineBreaks(node: PostalNode): void {
  for (const child of node.childNodes) dropDecoderLineBreaks(child);
  const content = node.content;
  if (node.contentType.multipart || !content || content.byteLength === 0 || node.contentTransferEncoding.encoding === 'base64') return;
  if (new Uint8Array(content)[content.byteLength - 1] === 0x0a) node.content = content.slice(0, content.byteLength - 1);
}

function messageIdFormat(value: string): string | null {
  const v = value.trim();
  if (!v) return null;
  return `${v.startsWith('<') ? '' : '<'}${v}${v.endsWith('>') ? '' : '>'}`;
}

function unicodeDomain(address: string): string {
  const at = address.lastIndexOf('@');
  if (at === -1 || !/^xn--|\.xn--/i.test(address.slice(at + 1))) return address;
  const domain = domainToUnicode(address.slice(at + 1));
  return domain ? `${address.slice(0, at + 1)}${domain}` : address;
}

function mailboxes(list: readonly Address[] | Address | undefined): MailAddress[] {
  if (!list) return [];
  const out: MailAddress[] = [];
  const visit = (entries: readonly Address[]) => {
    for (const e of entries) {
      if (e.group) visit(e.group);
      else if (e.address) out.push({ address: unicodeDomain(e.address), name: e.name?.trim() ? e.name.trim() : null });
    }
  };
  visit(Array.isArray(list) ? list : [list as Address]);
  return out;
}

/** Every address of the first header `name` (From and Sender: postal-mime keeps only the first address). */
function firstHeaderAddresses(email: Email, name: string): MailAddress[] {
  const h = email.headers.find((x) => x.key === name);
  return h?.value ? mailboxes(addressParser(h.value)) : [];
}

function toBuffer(content: ArrayBuffer | Uint8Array | string): Buffer {
  if (typeof content === 'string') return Buffer.from(content, 'utf8');
  return content instanceof Uint8Array ? Buffer.from(content.buffer, content.byteOffset, content.byteLength) : Buffer.from(content);
}

/** Parses RFC 822 bytes (already repaired, see mime-repair.ts). Throws what postal-mime throws. */
export async function parseMime(message: Buffer): Promise<MailMessage> {
  const email = await new OwnPartsParser({ forceRfc822Attachments: true, attachmentEncoding: 'arraybuffer' }).parse(message);
  const headerLines = email.headerLines.map((h) => ({ key: h.key, line: h.line }));
  const references: string[] = [];
  for (const h of email.headers) {
    if (h.key !== 'references' || !h.value) continue;
    for (const r of decodeWords(h.value).split(/\s+/)) {
      const id = messageIdFormat(r);
      if (id) references.push(id);
    }
  }
  // A delivery report's status part is text (who could not be reached and why), as mailparser read it.
  const status = email.attachments.filter((a) => a.mimeType === 'message/delivery-status' && a.disposition !== 'attachment');
  const attachments = status.length ? email.attachments.filter((a) => !status.includes(a)) : email.attachments;
  const text = status.length ? [email.text ?? '', ...status.map((a) => toBuffer(a.content).toString('utf8'))].filter((t) => t).join('\n') : email.text;
  // Folding whitespace counts once, as mailparser unfolded the Subject (postal-mime keeps every blank).
  const subjectLine = headerLines.find((h) => h.key === 'subject')?.line;
  const subject = subjectLine ? decodeWords(subjectLine.slice(subjectLine.indexOf(':') + 1).replace(/\r?\n\s+/g, ' ').trim()) : '';
  return {
    headerLines,
    messageId: email.messageId ? messageIdFormat(email.messageId) : null,
    subject: subject || null,
    from: firstHeaderAddresses(email, 'from'),
    sender: firstHeaderAddresses(email, 'sender'),
    to: mailboxes(email.to),
    cc: mailboxes(email.cc),
    bcc: mailboxes(email.bcc),
    inReplyTo: email.inReplyTo ? messageIdFormat(email.inReplyTo) : null,
    references,
    text: text || null,
    html: email.html ?? null,
    attachments: attachments.map((a) => ({
      filename: a.filename ?? null,
      mimeType: a.mimeType || 'application/octet-stream',
      contentId: a.contentId?.trim() || null,
      disposition: a.disposition ?? null,
      content: toBuffer(a.content),
    })),
  };
}
