/**
 * What every chat export becomes before it is sent (WhatsApp, Telegram, Slack): chats of messages with their
 * senders, and the ingest documents built from them in the shape of the Messages collector's
 * (src/agent/collectors/chatapp/document.ts): source_type `chatapp`, the app as source_provider, one thread per
 * chat, the sender as a `sender` person and the other members as `recipient`s, the message's facts under
 * metadata.message, its media under metadata.attachments.
 */
import crypto from 'node:crypto';
import type { SkipReason } from '../../schemas/coverage.ts';

export type ChatProvider = 'whatsapp' | 'telegram' | 'slack';

export interface ChatPerson {
  identifier: string;
  identifier_type: 'phone' | 'email' | 'chatapp' | 'social';
  display_name?: string;
  /** The person who made the export (from --me, or the export's own account). */
  self?: boolean;
}

export interface MediaRef {
  /** The media's name as the message gives it. */
  name: string;
  /** Where its bytes are in the export (a zip entry or a file), when they are there. */
  entry: string | null;
}

export interface ChatMessage {
  sourceId: string;
  /** ISO 8601 instant. */
  at: string;
  sender: ChatPerson | null;
  text: string;
  media: MediaRef[];
  /** source_id of the message this one answers. */
  replyTo?: string | null;
  /** Root of a Slack thread. */
  threadRoot?: string | null;
  edited?: boolean;
  editedAt?: string | null;
  /** Facts of the app kept under metadata.message (ids, the wall-clock time as written, …). */
  facts?: Record<string, unknown>;
}

/** An item of the export that is no message to store, with why (coverage). */
export interface SkippedItem {
  ref: string;
  reason: SkipReason;
  detail: string;
}

export interface ChatExport {
  provider: ChatProvider;
  /** Stable identity of the chat across exports. */
  chatKey: string;
  title: string;
  kind: 'direct' | 'group' | 'channel';
  participants: ChatPerson[];
  messages: ChatMessage[];
  skipped: SkippedItem[];
  /** Thread-level facts (Telegram chat id, Slack channel id, WhatsApp platform and date order). */
  facts: Record<string, unknown>;
}

export const SOURCE_TYPE = 'chatapp';
/** Thread.source_type values the gateway takes (gateway spec 2.2); Telegram has none of its own. */
const THREAD_TYPE: Record<ChatProvider, string> = { whatsapp: 'whatsapp', slack: 'slack', telegram: 'chatapp' };
/** Members listed as recipients of each message up to this many (a large channel's messages name only their sender). */
export const MAX_RECIPIENTS = 50;

export function shortHash(s: string, n = 16): string {
  return crypto.createHash('sha256').update(s).digest('hex').slice(0, n);
}

const EXT_MIME: Record<string, string> = {
  jpg: 'image/jpeg', jpeg: 'image/jpeg', png: 'image/png', gif: 'image/gif', heic: 'image/heic', webp: 'image/webp',
  pdf: 'application/pdf', txt: 'text/plain', mov: 'video/quicktime', mp4: 'video/mp4', '3gp': 'video/3gpp',
  opus: 'audio/ogg', ogg: 'audio/ogg', m4a: 'audio/mp4', mp3: 'audio/mpeg', aac: 'audio/aac', vcf: 'text/vcard',
  docx: 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', xlsx: 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet',
  zip: 'application/zip', csv: 'text/csv', json: 'application/json', webm: 'video/webm',
};

export function mimeOf(name: string): string {
  const ext = /\.([A-Za-z0-9]+)$/.exec(name)?.[1]?.toLowerCase() ?? '';
  return EXT_MIME[ext] ?? 'application/octet-stream';
}

function kindOf(mime: string): 'image' | 'pdf' | 'file' | 'other' {
  if (mime.startsWith('image/')) return 'image';
  if (mime === 'application/pdf') return 'pdf';
  if (mime === 'application/octet-stream') return 'other';
  return 'file';
}

/** The path an attachment of a chat is uploaded under (and named by in its message's metadata). */
export function mediaPath(chat: ChatExport, name: string): string {
  return `${chat.provider}/${shortHash(chat.chatKey)}/${name.replace(/[\\/\0]/g, '_')}`;
}

const personKey = (p: ChatPerson) => `${p.identifier_type}:${p.identifier.toLowerCase()}`;

function personEntry(p: ChatPerson, role: 'sender' | 'recipient' | 'participant') {
  return {
    identifier: p.identifier,
    identifier_type: p.identifier_type,
    role,
    ...(p.display_name ? { display_name: p.display_name } : {}),
    ...(p.self ? { metadata: { self: true } } : {}),
  };
}

export type ChatIngestDocument = ReturnType<typeof buildDocument>;

/** The ingest document of one message (IngestRequestModel). */
export function buildDocument(chat: ChatExport, m: ChatMessage, media: { name: string; sha256?: string; size?: number }[] = m.media.map((r) => ({ name: r.name }))) {
  const sender = m.sender;
  const people = [] as ReturnType<typeof personEntry>[];
  if (sender) people.push(personEntry(sender, 'sender'));
  if (chat.participants.length <= MAX_RECIPIENTS) {
    for (const p of chat.participants) if (!sender || personKey(p) !== personKey(sender)) people.push(personEntry(p, 'recipient'));
  }
  const attachments = media.map((a, index) => {
    const mime = mimeOf(a.name);
    return {
      index,
      id: `${m.sourceId}:${index}`,
      kind: kindOf(mime),
      role: 'attachment' as const,
      mime_type: mime,
      filename: a.name,
      ...(a.size !== undefined ? { size_bytes: a.size } : {}),
      ...(a.sha256 ? { sha256: a.sha256 } : {}),
      source_ref: { path: mediaPath(chat, a.name), message_attachment_id: index },
    };
  });
  const fromMe = sender?.self === true;
  const text = m.text || (media.length ? media.map((a) => `[Attachment: ${a.name}]`).join('\n') : '');
  const message: Record<string, unknown> = {
    sent_at: m.at,
    is_from_me: fromMe,
    direction: fromMe ? 'outgoing' : 'incoming',
    sender: sender?.identifier ?? null,
    sender_name: sender?.display_name ?? null,
    service: chat.provider,
    ...(m.facts ?? {}),
  };
  if (m.edited) {
    message.edited = true;
    if (m.editedAt) message.edited_at = m.editedAt;
  }
  const timestampType = fromMe ? 'sent' : 'received';
  const threadType = chat.kind === 'direct' ? 'direct' : 'group';
  return {
    source_type: SOURCE_TYPE,
    source_id: m.sourceId,
    external_id: m.sourceId,
    source_provider: chat.provider,
    title: chat.title,
    content: { mime_type: 'text/plain', data: text },
    metadata: {
      source: chat.provider,
      message,
      reply_to_guid: m.replyTo ?? null,
      thread_originator_guid: m.threadRoot ?? null,
      attachments,
      has_attachments: attachments.length > 0,
      attachment_count: attachments.length,
      reactions: [] as unknown[],
      extraction: { status: m.text ? 'ok' : 'attachments_only', method: `${chat.provider}_export` },
      timestamps: { primary: { value: m.at, type: timestampType }, source_specific: { sent_at: m.at } },
    },
    content_timestamp: m.at,
    content_timestamp_type: timestampType,
    people,
    thread: {
      external_id: `${chat.provider}:${shortHash(chat.chatKey, 32)}`,
      source_type: THREAD_TYPE[chat.provider],
      source_provider: chat.provider,
      title: chat.title,
      participants: chat.participants.slice(0, 1000).map((p) => personEntry(p, 'participant')),
      thread_type: threadType,
      is_group: threadType === 'group',
      participant_count: chat.participants.length,
      metadata: { chat_kind: chat.kind, ...chat.facts },
    },
  };
}
