/**
 * The email document sent to the gateway (host-agent spec §2.6, spec-notes B2.6) and the meta of its
 * attachment uploads. Pure functions: the same message always gives the same payload and keys.
 *
 * Determinism matters twice: the collector's own idempotency key (SHA-256 of
 * `source_type:source_id:text_hash`) and the memex gateway's key, which it computes from the text AND
 * the metadata. So metadata holds nothing that changes between runs (no run time, no file path, no
 * IMAP UID): a resend of an unchanged message is a duplicate, never a new version.
 */
import crypto from 'node:crypto';
import type { RedactOptions } from '../privacy/policy.ts';
import { classifyIntent, isNoiseEmail, redactPii, type IntentClassification } from './analyze.ts';
import type { FileUploadMeta } from '../client/submit.ts';
import { baseSubject, emailThreadExternalId, emailThreadId, messageLinks, normaliseMessageId, uuidFromName } from './thread.ts';
import { bodyParts, type BodyPart } from './body-parts.ts';
import { emailBodyText } from './body-text.ts';
import { isListSender, listOfRecipient, mailListOf, type MailList } from './mailing-list.ts';

export { normaliseMessageId, uuidFromName };
import type { CollectedMessage, MailAddress, MailAttachment } from './collected-message.ts';

export const SNIPPET_CHARS = 280;

export function sha256(data: string | Buffer): string {
  return crypto.createHash('sha256').update(data).digest('hex');
}

/** CRLF/CR -> LF and trimmed: the text whose hash is the document's text_hash. */
export function normaliseBody(text: string): string {
  return text.replace(/\r\n?/g, '\n').trim();
}

export interface EmailPerson {
  identifier: string;
  identifier_type: 'email';
  role: 'sender' | 'recipient';
  display_name: string | null;
  /** A mailing list's address (issue 40): `{list: <list id>}`; the gateway keeps it as a list, not a person. */
  metadata?: { list: string };
}

/**
 * From is the sender, To, Cc and Bcc recipients; lower-cased, each address once per role, so a person who
 * writes to themselves (or is in Cc of their own mail) is both sender and recipient and `to:` finds it.
 * `Sender:` is a sender only when it is someone writing on the author's behalf: a list's bounce address
 * (`linux-mips-owner@…`) or the list itself is the venue, not a sender beside the author. A list's own
 * address among the recipients is marked with its list id.
 */
export function emailPeople(msg: Pick<CollectedMessage, 'from' | 'sender' | 'to' | 'cc' | 'bcc'>, list: MailList | null = null): EmailPerson[] {
  const out: EmailPerson[] = [];
  const seen = new Set<string>();
  const from = new Set(msg.from.map((a) => a.address.trim().toLowerCase()));
  const add = (addrs: MailAddress[], role: EmailPerson['role']) => {
    for (const a of addrs) {
      const id = a.address.trim().toLowerCase();
      if (!id || seen.has(`${role}:${id}`)) continue;
      if (role === 'sender' && !from.has(id) && isListSender(id, list)) continue;
      seen.add(`${role}:${id}`);
      const person: EmailPerson = { identifier: id, identifier_type: 'email', role, display_name: a.name?.trim() || null };
      const listId = role === 'recipient' ? listOfRecipient(a, list) : null;
      if (listId) person.metadata = { list: listId };
      out.push(person);
    }
  };
  add(msg.from, 'sender');
  add(msg.sender, 'sender');
  add(msg.to, 'recipient');
  add(msg.cc, 'recipient');
  add(msg.bcc, 'recipient');
  return out;
}

/**
 * A relevance score in 0..1 (the spec names the field, not the formula): noise 0.2; messages that ask
 * for something (bills, appointments, action required) 0.8; receipts and orders 0.6; others 0.5.
 */
export function relevanceScore(noise: boolean, intent: IntentClassification): number {
  if (noise) return 0.2;
  switch (intent.primaryIntent) {
    case 'bill':
    case 'appointment':
    case 'actionRequired':
      return 0.8;
    case 'receipt':
    case 'orderConfirmation':
      return 0.6;
    case 'promotional':
    case 'newsletter':
      return 0.3;
    default:
      return 0.5;
  }
}

export interface EmailSourceInfo {
  /** `email_local` for local stores and imports, `email` for IMAP. */
  sourceType: 'email_local' | 'email';
  /** source_id prefix: `email` (local), `email_imap/<account>` (IMAP). */
  prefix: string;
  redaction: RedactOptions;
  /** Mailbox / folder name, kept in metadata (stable between runs). */
  mailbox?: string | null;
  /** Used when the message has no Date header (e.g. the IMAP internal date); UTC ISO. */
  fallbackTimestamp?: string | null;
}

export interface EmailDocument {
  source_type: 'email_local' | 'email';
  source_id: string;
  title: string | null;
  canonical_uri: string | null;
  content: { mime_type: 'text/plain'; data: string; encoding: null };
  people: EmailPerson[];
  metadata: Record<string, unknown>;
  content_timestamp?: string;
  content_timestamp_type: 'received';
  thread_id?: string;
  thread?: {
    external_id: string;
    source_type: 'email';
    title: string | null;
    participants: EmailPerson[];
    metadata: { root_message_id: string };
  };
  relevance_score: number;
  intent: Record<string, unknown>;
}

export interface BuiltEmail {
  document: EmailDocument;
  /** The collector idempotency key: SHA-256 of `source_type:source_id:text_hash`. */
  idempotencyKey: string;
  /** SHA-256 of the normalised body before redaction. */
  textHash: string;
  messageId: string | null;
  /** The `<message_id_or_hash>` part of attachment keys and paths. */
  messageKey: string;
}

/** source_id suffix used when two different messages share one Message-ID (see `withSourceIdSuffix`). */
export function disambiguatedSourceId(sourceId: string, textHash: string): string {
  return `${sourceId}#${textHash.slice(0, 16)}`;
}

export function documentKey(sourceType: string, sourceId: string, textHash: string): string {
  return sha256(`${sourceType}:${sourceId}:${textHash}`);
}

/**
 * Builds the §2.6 payload. `sourceIdOverride` lets a collector give a colliding Message-ID a distinct
 * source id (two different messages with one Message-ID must not overwrite each other).
 */
export function buildEmailDocument(msg: CollectedMessage, src: EmailSourceInfo, opts: { sourceIdOverride?: string } = {}): BuiltEmail {
  // The whole body as written (issue 40): quotes, signatures, patches and footers are marked, not cut.
  const body = emailBodyText(msg.text, msg.html);
  let text = normaliseBody(body.text);
  const bodyEmpty = text === '';
  // The gateway refuses an empty text. A message with no words (only attachments, or empty) still is a
  // message: its subject (or a marker) stands in, flagged in metadata, instead of losing it.
  if (bodyEmpty) text = normaliseBody(msg.subject ?? '') || '(no text)';
  const textHash = sha256(text);
  // Parts are spans of the text as stored (redaction may change lengths), so they are found after it.
  const redacted = normaliseBody(redactPii(text, src.redaction));
  const parts = bodyEmpty ? [] : bodyParts(redacted);
  const own = ownWords(redacted, parts);

  const messageId = normaliseMessageId(msg.messageId);
  const fromFirst = msg.from[0]?.address.toLowerCase() ?? null;
  // Only dates the message itself carries (Date, Received) key a message without Message-ID: a file's
  // mtime or a mailbox's record of it must not give the same message another source id.
  const ownDate = msg.date && (msg.dateSource === 'date_header' || msg.dateSource === 'received');
  const epoch = ownDate ? String(Math.floor(Date.parse(msg.date!) / 1000)) : null;
  const fallbackParts = [epoch, msg.subject, fromFirst].filter((p): p is string => p !== null && p !== '');
  const messageKey = messageId ?? sha256(fallbackParts.length ? fallbackParts.join('|') : textHash);
  const sourceId = opts.sourceIdOverride ?? `${src.prefix}:${messageKey}`;

  const noise = isNoiseEmail({ subject: msg.subject, from: msg.from.map((a) => a.address), listUnsubscribe: msg.listUnsubscribe });
  // Intent runs on the redacted text so extracted entities never carry what redaction removed.
  // and on the author's own words: what a quoted message asked is that message's intent.
  const intent = classifyIntent({ subject: msg.subject ?? '', body: own, sender: msg.from[0]?.address ?? null });
  const relevance = relevanceScore(noise, intent);
  const intentSnake = {
    primary_intent: intent.primaryIntent,
    confidence: intent.confidence,
    secondary_intents: intent.secondaryIntents,
    extracted_entities: intent.extractedEntities,
  };
  const list = mailListOf(msg);
  const people = emailPeople(msg, list);
  const references = msg.references.map(normaliseMessageId).filter((r): r is string => r !== null);
  const inReplyTo = normaliseMessageId(msg.inReplyTo);
  const attachments = msg.attachments;

  const metadata: Record<string, unknown> = {
    message_id: messageId,
    subject: msg.subject,
    snippet: Array.from(own).length > SNIPPET_CHARS ? `${Array.from(own).slice(0, SNIPPET_CHARS).join('')}...` : own,
    content_hash: textHash,
    in_reply_to: inReplyTo,
    references,
    has_attachments: attachments.length > 0,
    attachment_count: attachments.length,
    attachments: attachments.map((a, i) => attachmentEntry(a, i, src.sourceType, messageKey)),
    intent: intentSnake,
    relevance_score: relevance,
    is_noise: noise,
    list_unsubscribe: msg.listUnsubscribe,
    date_offset: msg.dateOffset,
    body_source: body.source,
    body_parts: parts,
  };
  // Only when present: documents of mail without them keep the metadata (and idempotency key) they always had.
  if (msg.precedence) metadata.precedence = msg.precedence;
  if (msg.autoSubmitted) metadata.auto_submitted = msg.autoSubmitted;
  if (msg.listId) metadata.list_id = msg.listId;
  // The list the message came through (mailing-list.ts): the thread's venue and what `list:` finds.
  if (list) metadata.list = list;
  if (src.mailbox) metadata.mailbox = src.mailbox;
  if (body.imageCaptions.length) metadata.image_captions = body.imageCaptions;
  if (bodyEmpty) metadata.body_empty = true;
  if (msg.attachmentsMissing?.length) metadata.attachments_missing = msg.attachmentsMissing;
  // Only a fallback is recorded: documents dated by their Date header keep the metadata (and so the
  // gateway's idempotency key) they always had.
  if (msg.dateSource && msg.dateSource !== 'date_header') metadata.date_source = msg.dateSource;
  else if (!msg.date && src.fallbackTimestamp) metadata.date_source = 'imap_internal_date';

  const doc: EmailDocument = {
    source_type: src.sourceType,
    source_id: sourceId,
    title: msg.subject,
    canonical_uri: messageId ? `message://${encodeURIComponent(messageId)}` : null,
    content: { mime_type: 'text/plain', data: redacted, encoding: null },
    people,
    metadata,
    content_timestamp_type: 'received',
    relevance_score: relevance,
    intent: intentSnake,
  };
  const ts = msg.date ?? src.fallbackTimestamp ?? null;
  if (ts) doc.content_timestamp = ts;

  // Thread: the conversation's root (References[0], else In-Reply-To, else this message), so every
  // collector path names the same thread; the catalog links and merges threads that arrive out of order.
  const links = messageLinks(messageId, inReplyTo, references);
  const root = links.root ?? messageKey;
  doc.thread_id = emailThreadId(root);
  doc.thread = {
    external_id: emailThreadExternalId(root),
    source_type: 'email',
    title: baseSubject(msg.subject),
    participants: people,
    metadata: { root_message_id: root },
  };

  return {
    document: doc,
    idempotencyKey: documentKey(src.sourceType, sourceId, textHash),
    textHash,
    messageId,
    messageKey,
  };
}

/**
 * The author's own words: the text without its quoted, attribution, forward, signature, footer and
 * patch parts (for the snippet and the intent); the whole text when nothing else is left.
 */
function ownWords(text: string, parts: BodyPart[]): string {
  if (parts.length === 0) return text;
  let out = '';
  let at = 0;
  for (const p of parts) {
    out += text.slice(at, p.start);
    at = p.end;
  }
  out += text.slice(at);
  const own = out.replace(/\n{3,}/g, '\n\n').trim();
  return own || text;
}

/** Spec §2.1 attachment kind from a MIME type. */
function attachmentKind(mime: string): 'image' | 'pdf' | 'file' | 'other' {
  const m = mime.toLowerCase();
  if (m.startsWith('image/')) return 'image';
  if (m === 'application/pdf') return 'pdf';
  return m ? 'file' : 'other';
}

/** The upload file name and path of attachment `i` (the same in metadata and in the upload). */
function attachmentFile(a: MailAttachment, i: number, sourceType: string, messageKey: string) {
  const filename = a.filename?.replace(/[/\\\0]/g, '_') || `attachment-${i + 1}`;
  return { filename, path: `${sourceType}/${messageKey}/${filename}` };
}

/**
 * metadata.attachments entry of gateway spec §2.1: index, kind, role (inline parts are `inline`),
 * mime_type, size_bytes, filename, sha256 and source_ref {path of the uploaded file, position in
 * the message, content id}.
 */
function attachmentEntry(a: MailAttachment, i: number, sourceType: string, messageKey: string): Record<string, unknown> {
  const { filename, path } = attachmentFile(a, i, sourceType, messageKey);
  const sourceRef: Record<string, unknown> = { path, message_attachment_id: i };
  if (a.contentId) sourceRef.content_id = normaliseMessageId(a.contentId) ?? a.contentId;
  return {
    index: i,
    kind: attachmentKind(a.mimeType),
    role: a.inline ? 'inline' : 'attachment',
    mime_type: a.mimeType || 'application/octet-stream',
    size_bytes: a.size,
    filename,
    sha256: a.sha256,
    source_ref: sourceRef,
  };
}

export interface AttachmentUpload {
  meta: FileUploadMeta;
  idempotencyKey: string;
  data: Buffer;
}

/** Upload meta of §2.6 for each attachment (`email-attachment:<message_id_or_hash>:<file_sha256>`). */
export function attachmentUploads(built: BuiltEmail, attachments: MailAttachment[]): AttachmentUpload[] {
  const intent = built.document.intent as { primary_intent: string; confidence: number };
  return attachments.map((a, i) => {
    const { filename, path } = attachmentFile(a, i, built.document.source_type, built.messageKey);
    const meta: FileUploadMeta = {
      source: built.document.source_type,
      path,
      filename,
      mime_type: a.mimeType,
      sha256: a.sha256,
      size: a.size,
      message_id: built.messageId ?? built.messageKey,
      intent: { primary_intent: intent.primary_intent, confidence: intent.confidence },
      relevance_score: built.document.relevance_score,
    };
    if (a.contentId) meta.content_id = normaliseMessageId(a.contentId) ?? a.contentId;
    // The attachment is dated by its message (else the upload's time dates it: a mailbox imported today
    // would be all "last 30 days", embedded before this month's mail and counted in its share).
    if (built.document.content_timestamp) meta.mtime = built.document.content_timestamp;
    return { meta, idempotencyKey: `email-attachment:${built.messageKey}:${a.sha256}`, data: a.content };
  });
}
