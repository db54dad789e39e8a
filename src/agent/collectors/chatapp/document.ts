/**
 * Builds the gateway ingest document (IngestRequestModel, gateway spec §2.9) for one Messages row, folds
 * tapbacks into their target's metadata, and tracks which documents changed since they were last sent.
 *
 * Identity: source_id = `chatapp:<message guid>`, thread external_id = `chatapp:<chat guid>`. An edited
 * message keeps its guid, so the gateway sees the same source identity with different text (or a message
 * with a new reaction: different metadata) and stores a new version. The VersionTracker decides when a
 * row that was already sent must be sent again.
 */
import { writeJsonAtomic } from '../../../util/fs.ts';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { isBplist, parseBplist } from './bplist.ts';
import { expandHome, type RawAttachment, type RawChat, type RawMessage } from './chatdb.ts';
import { decodeAttributedBodyDetailed } from './typedstream.ts';

export const SOURCE_TYPE = 'chatapp';
/** Text of the tombstone of a message unsent whole (the gateway refuses empty text). */
export const UNSENT_TEXT = '[Message unsent]';
export const SOURCE_PROVIDER = 'apple_messages';

export type PersonRole = 'sender' | 'recipient' | 'participant' | 'mentioned';
export type IdentifierType = 'phone' | 'email' | 'chatapp';

export interface DocumentPerson {
  identifier: string;
  identifier_type: IdentifierType;
  role: PersonRole;
  display_name?: string;
  metadata?: Record<string, unknown>;
}

export interface ThreadPayload {
  external_id: string;
  source_type: string;
  source_provider: string;
  title?: string;
  participants: DocumentPerson[];
  thread_type: 'group' | 'direct';
  is_group: boolean;
  participant_count: number;
  metadata: Record<string, unknown>;
}

export type ReactionType = 'love' | 'like' | 'dislike' | 'laugh' | 'emphasize' | 'question' | 'emoji' | 'sticker';

export interface Reaction {
  type: ReactionType;
  /** Identifier of who reacted (handle id, or the local account for our own tapbacks). */
  from: string;
  is_from_me: boolean;
  at: string | null;
}

export interface AttachmentEntry {
  index: number;
  id: string;
  kind: 'image' | 'pdf' | 'file' | 'other';
  role: 'attachment';
  mime_type: string;
  size_bytes?: number;
  filename?: string;
  source_ref: { path?: string; message_attachment_id: number };
}

/** The ingest request body for one message (gateway IngestRequestModel). */
export interface ChatDocument {
  source_type: typeof SOURCE_TYPE;
  source_id: string;
  external_id: string;
  source_provider: typeof SOURCE_PROVIDER;
  title?: string;
  content: { mime_type: 'text/plain'; data: string };
  metadata: Record<string, unknown> & {
    message: Record<string, unknown>;
    attachments: AttachmentEntry[];
    reactions: Reaction[];
    has_attachments: boolean;
    attachment_count: number;
  };
  content_timestamp?: string;
  content_timestamp_type: 'sent' | 'received';
  people: DocumentPerson[];
  thread?: ThreadPayload;
}

const REACTION_TYPES: ReactionType[] = ['love', 'like', 'dislike', 'laugh', 'emphasize', 'question', 'emoji', 'sticker'];

/** True for tapback add (2000-2007) and remove (3000-3007) rows: they never become documents. */
export function isReactionRow(m: Pick<RawMessage, 'associatedMessageType'>): boolean {
  const t = m.associatedMessageType;
  return (t >= 2000 && t <= 2007) || (t >= 3000 && t <= 3007);
}

/** The target message guid of a tapback: `p:0/<guid>` or `bp:<guid>` (or a bare guid). */
export function reactionTargetGuid(associatedGuid: string | null): string | null {
  if (!associatedGuid) return null;
  if (associatedGuid.startsWith('bp:')) return associatedGuid.slice(3) || null;
  const slash = associatedGuid.indexOf('/');
  if (slash >= 0) return associatedGuid.slice(slash + 1) || null;
  return associatedGuid;
}

/** Strips the service prefix Messages puts on accounts (`E:me@icloud.com`, `P:+1555…`). */
export function selfIdentifier(account: string | null): string | null {
  if (!account) return null;
  const s = account.replace(/^[EePp]:/, '').trim();
  return s.length > 0 ? s : null;
}

/**
 * Identifier type as Haven infers it: contains `@` -> email; `+` followed by digits/spaces, or almost only
 * digits (digit count within 2 of the length) -> phone; anything else (chat ids, business ids) -> chatapp.
 */
export function identifierType(id: string): IdentifierType {
  const s = id.trim();
  if (s.includes('@')) return 'email';
  if (/^\+[\d\s().-]{6,}$/.test(s)) return 'phone';
  const digits = s.replace(/\D/g, '').length;
  if (digits >= 3 && digits >= s.length - 2) return 'phone';
  return 'chatapp';
}

/**
 * Folds tapback rows (ascending ROWID) into the reactions standing now: an add (2000+k) by X sets X's
 * reaction k, a remove (3000+k) by X clears it. Messages allows one tapback per person, so a new add by X
 * replaces X's previous one.
 */
export function foldReactions(rows: RawMessage[]): Map<string, Reaction[]> {
  const byTarget = new Map<string, Map<string, Reaction>>();
  for (const r of rows) {
    if (!isReactionRow(r)) continue;
    const target = reactionTargetGuid(r.associatedMessageGuid);
    if (!target) continue;
    const from = (r.isFromMe ? selfIdentifier(r.account) ?? 'me' : r.handle?.id) ?? 'unknown';
    const add = r.associatedMessageType < 3000;
    const type = REACTION_TYPES[r.associatedMessageType % 1000];
    let m = byTarget.get(target);
    if (!m) byTarget.set(target, (m = new Map()));
    if (add) m.set(from, { type, from, is_from_me: r.isFromMe, at: r.date });
    else if (m.get(from)?.type === type) m.delete(from);
  }
  const out = new Map<string, Reaction[]>();
  for (const [target, m] of byTarget) out.set(target, [...m.values()]);
  return out;
}

const EXT_MIME: Record<string, string> = {
  jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', heic: 'image/heic', heif: 'image/heif',
  webp: 'image/webp', tif: 'image/tiff', tiff: 'image/tiff', pdf: 'application/pdf', txt: 'text/plain',
  mov: 'video/quicktime', mp4: 'video/mp4', m4a: 'audio/x-m4a', caf: 'audio/x-caf', mp3: 'audio/mpeg',
  vcf: 'text/vcard', zip: 'application/zip', docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
};
const UTI_MIME: Record<string, string> = {
  'public.jpeg': 'image/jpeg', 'public.png': 'image/png', 'public.heic': 'image/heic', 'com.compuserve.gif': 'image/gif',
  'com.adobe.pdf': 'application/pdf', 'public.plain-text': 'text/plain', 'com.apple.quicktime-movie': 'video/quicktime',
  'public.mpeg-4': 'video/mp4', 'com.apple.coreaudio-format': 'audio/x-caf', 'public.vcard': 'text/vcard',
};

function attachmentMime(a: RawAttachment): string {
  if (a.mimeType) return a.mimeType.toLowerCase();
  if (a.uti && UTI_MIME[a.uti]) return UTI_MIME[a.uti];
  const name = a.transferName ?? a.filename ?? '';
  const ext = path.extname(name).slice(1).toLowerCase();
  return EXT_MIME[ext] ?? 'application/octet-stream';
}

function attachmentKind(mime: string): AttachmentEntry['kind'] {
  if (mime.startsWith('image/')) return 'image';
  if (mime === 'application/pdf') return 'pdf';
  if (mime === 'application/octet-stream') return 'other';
  return 'file';
}

export function attachmentEntries(atts: RawAttachment[], homeDir?: string): AttachmentEntry[] {
  return atts.map((a, index) => {
    const mime = attachmentMime(a);
    const filename = a.transferName ?? (a.filename ? path.basename(a.filename) : undefined);
    const entry: AttachmentEntry = {
      index,
      id: a.guid,
      kind: attachmentKind(mime),
      role: 'attachment',
      mime_type: mime,
      source_ref: { message_attachment_id: a.rowId },
    };
    if (a.totalBytes != null && a.totalBytes > 0) entry.size_bytes = a.totalBytes;
    if (filename) entry.filename = filename;
    if (a.filename) entry.source_ref.path = expandHome(a.filename, homeDir);
    return entry;
  });
}

/**
 * Edit facts from message_summary_info (Ventura): `ec` holds the edit history per message part, `rp` the
 * indexes of the parts that were unsent (retracted).
 */
export function editInfo(m: RawMessage): { edited: boolean; editCount?: number; retracted: boolean; unsentParts: number[] } {
  let editCount: number | undefined;
  let retracted = m.dateRetracted !== null;
  let unsentParts: number[] = [];
  if (m.messageSummaryInfo && isBplist(m.messageSummaryInfo)) {
    const info = parseBplist(m.messageSummaryInfo);
    if (info && typeof info === 'object' && !Array.isArray(info) && !(info instanceof Uint8Array)) {
      const ec = (info as Record<string, unknown>)['ec'];
      if (ec && typeof ec === 'object') {
        const parts = Object.values(ec as Record<string, unknown>);
        // Each part's history lists the original plus every edit.
        const n = Math.max(0, ...parts.map((p) => (Array.isArray(p) ? p.length - 1 : 0)));
        if (n > 0) editCount = n;
      }
      const rp = (info as Record<string, unknown>)['rp'];
      if (rp !== undefined) {
        retracted = true;
        if (Array.isArray(rp)) unsentParts = rp.map(Number).filter((n) => Number.isInteger(n) && n >= 0).sort((a, b) => a - b);
      }
    }
  }
  // Unsending also sets date_edited: without an edit history, that date is the unsend's, not an edit's.
  return { edited: editCount !== undefined || (m.dateEdited !== null && !retracted), editCount, retracted, unsentParts };
}

/** Text of a message: `text` unless blank (or only the U+FFFC attachment placeholder), else attributedBody. */
export function messageText(m: RawMessage): { text: string | null; method: 'text' | 'typedstream' | 'keyed_archiver' | 'printable_fallback' | 'none' } {
  const plain = m.text?.replace(/\ufffc/g, '').trim();
  if (plain) return { text: plain, method: 'text' };
  const decoded = decodeAttributedBodyDetailed(m.attributedBody);
  const t = decoded?.text.replace(/\ufffc/g, '').trim();
  if (decoded && t) return { text: t, method: decoded.method };
  return { text: null, method: 'none' };
}

export interface BuildOptions {
  /** Reactions standing on this message (from foldReactions). */
  reactions?: Reaction[];
  /** Home directory used to expand `~/Library/Messages/Attachments/...` paths. */
  homeDir?: string;
}

/**
 * Builds the ingest document for one non-reaction message, or null when the row has nothing to ingest
 * (no text, no decodable attributedBody and no attachments: unsent/retracted or system rows).
 */
export function buildMessageDocument(m: RawMessage, chat: RawChat | null, opts: BuildOptions = {}): ChatDocument | null {
  if (isReactionRow(m)) return null;
  const { text, method } = messageText(m);
  const attachments = attachmentEntries(m.attachments, opts.homeDir);
  const edit = editInfo(m);
  // A message unsent whole keeps a tombstone (like an edit, a new version of the same message): that it
  // existed, when and between whom. Other rows with nothing to ingest are system rows.
  if (!text && attachments.length === 0 && !edit.retracted) return null;

  const self = selfIdentifier(m.account);
  const sender = m.isFromMe ? self : (m.handle?.id ?? null);
  const participants = chat?.participants ?? (m.handle ? [m.handle] : []);

  const people: DocumentPerson[] = [];
  const seen = new Set<string>();
  const add = (id: string | null, role: PersonRole, metadata?: Record<string, unknown>) => {
    if (!id) return;
    const key = `${role}:${id.toLowerCase()}`;
    if (seen.has(key)) return;
    seen.add(key);
    people.push({ identifier: id, identifier_type: identifierType(id), role, ...(metadata ? { metadata } : {}) });
  };
  if (m.isFromMe) add(self, 'sender', { self: true });
  else add(sender, 'sender');
  for (const p of participants) if (p.id.toLowerCase() !== sender?.toLowerCase()) add(p.id, 'recipient');
  // The local account received an incoming message; it lets the gateway find the self person.
  if (!m.isFromMe) add(self, 'recipient', { self: true });

  const bodyText = text ?? (attachments.length ? attachments.map((a) => `[Attachment: ${a.filename ?? a.mime_type}]`).join('\n') : UNSENT_TEXT);

  const message: Record<string, unknown> = {
    guid: m.guid,
    row_id: m.rowId,
    sent_at: m.date,
    is_from_me: m.isFromMe,
    direction: m.isFromMe ? 'outgoing' : 'incoming',
    sender,
    service: m.service ?? chat?.serviceName ?? null,
    read: m.isFromMe ? true : m.isRead,
  };
  if (m.dateDelivered) message.received_at = m.dateDelivered;
  if (m.dateRead) message.read_at = m.dateRead;
  if (edit.edited) {
    message.edited = true;
    message.edited_at = m.dateEdited;
    if (edit.editCount !== undefined) message.edit_count = edit.editCount;
  }
  if (edit.retracted) {
    message.unsent = true;
    message.unsent_at = m.dateRetracted ?? m.dateEdited;
    if (edit.unsentParts.length) message.unsent_parts = edit.unsentParts;
    // Unsent whole: nothing of it is left to read.
    message.unsent_whole = !text && attachments.length === 0;
  }

  const reactions = opts.reactions ?? [];
  const timestampType = m.isFromMe ? 'sent' : 'received';
  const sourceSpecific: Record<string, string> = {};
  if (m.date) sourceSpecific.sent_at = m.date;
  if (m.dateDelivered) sourceSpecific.received_at = m.dateDelivered;
  if (m.dateRead) sourceSpecific.read_at = m.dateRead;
  if (m.dateEdited) sourceSpecific.edited_at = m.dateEdited;

  const metadata: ChatDocument['metadata'] = {
    source: SOURCE_PROVIDER,
    message,
    reply_to_guid: m.replyToGuid ?? null,
    thread_originator_guid: m.threadOriginatorGuid ?? null,
    attachments,
    has_attachments: attachments.length > 0,
    attachment_count: attachments.length,
    reactions,
    extraction: { status: text ? 'ok' : attachments.length ? 'attachments_only' : 'unsent', method },
  };
  if (m.date) metadata.timestamps = { primary: { value: m.date, type: timestampType }, source_specific: sourceSpecific };
  if (m.associatedMessageGuid) {
    metadata.associated_message_guid = m.associatedMessageGuid;
    metadata.associated_message_type = m.associatedMessageType;
  }
  if (m.isAudioMessage) {
    metadata.is_audio_message = true;
    metadata.expire_state = m.expireState;
  }
  if (m.expressiveSendStyleId) metadata.expressive_send_style_id = m.expressiveSendStyleId;

  const title = chat?.displayName?.trim() || chat?.chatIdentifier || m.handle?.id || undefined;
  const doc: ChatDocument = {
    source_type: SOURCE_TYPE,
    source_id: `chatapp:${m.guid}`,
    external_id: `chatapp:${m.guid}`,
    source_provider: SOURCE_PROVIDER,
    ...(title ? { title } : {}),
    content: { mime_type: 'text/plain', data: bodyText },
    metadata,
    content_timestamp_type: timestampType,
    people,
  };
  const ts = m.date ?? m.dateDelivered ?? m.dateRead;
  if (ts) doc.content_timestamp = ts;

  if (chat) {
    const isGroup = chat.style != null ? chat.style === 43 : chat.participants.length > 1;
    doc.thread = {
      external_id: `chatapp:${chat.guid}`,
      source_type: SOURCE_TYPE,
      source_provider: SOURCE_PROVIDER,
      ...(title ? { title } : {}),
      participants: chat.participants.map((p) => ({ identifier: p.id, identifier_type: identifierType(p.id), role: 'participant' as const })),
      thread_type: isGroup ? 'group' : 'direct',
      is_group: isGroup,
      participant_count: chat.participants.length,
      metadata: { chat_guid: chat.guid, chat_identifier: chat.chatIdentifier, service: chat.serviceName },
    };
  }
  return doc;
}

/**
 * Remembers, per message guid, a hash of what was last accepted by the gateway (text, attachments,
 * reactions, edit facts), so that edits and new tapbacks resubmit a message and nothing else does.
 * Persisted as JSON next to the cursor state; a lost tracker only causes resubmissions that the gateway
 * deduplicates.
 */
export class VersionTracker {
  private readonly hashes: Map<string, string>;
  private dirty = false;

  constructor(entries?: Iterable<[string, string]>) {
    this.hashes = new Map(entries);
  }

  static load(file: string): VersionTracker {
    try {
      const data = JSON.parse(fs.readFileSync(file, 'utf8')) as { version?: number; hashes?: Record<string, string> };
      if (data && data.version === 1 && data.hashes && typeof data.hashes === 'object') {
        return new VersionTracker(Object.entries(data.hashes).filter(([, v]) => typeof v === 'string'));
      }
    } catch {
      // Missing or unreadable: start empty (worst case, unchanged messages are resent and deduplicated).
    }
    return new VersionTracker();
  }

  /** Content hash of the parts of a document that make a new version. */
  static hash(doc: ChatDocument): string {
    const m = doc.metadata;
    const material = JSON.stringify({
      text: doc.content.data,
      attachments: m.attachments.map((a) => [a.id, a.mime_type, a.size_bytes ?? null, a.source_ref.path ?? null]),
      reactions: m.reactions.map((r) => [r.type, r.from, r.at]),
      edited_at: m.message.edited_at ?? null,
      // Unsending a part is a change of its own (a tombstone version); absent for other messages so
      // their hashes, and the versions already recorded, stay as they were.
      ...(m.message.unsent ? { unsent: [m.message.unsent_at ?? null, m.message.unsent_parts ?? null] } : {}),
    });
    return crypto.createHash('sha256').update(material).digest('base64url').slice(0, 22);
  }

  get size(): number {
    return this.hashes.size;
  }

  has(guid: string): boolean {
    return this.hashes.has(guid);
  }

  /** True when the document differs from the last accepted version of its message (or was never sent). */
  changed(guid: string, doc: ChatDocument): boolean {
    return this.hashes.get(guid) !== VersionTracker.hash(doc);
  }

  record(guid: string, doc: ChatDocument): void {
    this.hashes.set(guid, VersionTracker.hash(doc));
    this.dirty = true;
  }

  /** Atomic write (temp file + rename); skipped when nothing changed. */
  save(file: string): void {
    if (!this.dirty) return;
    writeJsonAtomic(file, { version: 1, hashes: Object.fromEntries(this.hashes) });
    this.dirty = false;
  }
}

export { writeJsonAtomic };
