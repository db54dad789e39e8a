/**
 * Telegram Desktop's JSON export ("Export chat history" of one chat, or "Export Telegram data" of all of them):
 * `result.json` with one chat `{name, type, id, messages}` or many under `chats.list` (and `left_chats.list`).
 * Personal chats, groups, supergroups and channels become chats; each message is a document with id
 * `telegram:<chat id>:<message id>`, so a later export's edited text is a new version of the same document.
 * Text entities (bold, links, mentions…) are flattened to their text (a text link keeps its address);
 * `reply_to_message_id` links the reply; `from_id` (user123 / channel123) is the sender's identifier;
 * service messages (joins, pins, calls) are skipped as system lines. Times are `date_unixtime` when the export
 * has it, else `date` read in the time zone given. Media are the files the export holds next to result.json.
 */
import path from 'node:path';
import type { Bundle } from './bundle.ts';
import type { ChatExport, ChatMessage, ChatPerson, SkippedItem } from './model.ts';
import { zonedTimeToUtc } from './tz.ts';
import { codedError } from '../../util/errors.ts';

export class TelegramFormatError extends codedError('IMPORT.UNREADABLE') {
  override name = 'TelegramFormatError';
}

const CHAT_TYPES = [
  'personal_chat', 'bot_chat', 'saved_messages', 'private_group', 'private_supergroup', 'public_supergroup',
  'private_channel', 'public_channel',
];

/** The start of a result.json: a JSON object with Telegram's export keys. */
export function looksLikeTelegram(head: string): boolean {
  if (!/^\s*\{/.test(head)) return false;
  if (/"about"\s*:\s*"Here is the data you requested/.test(head)) return true;
  return new RegExp(`"type"\\s*:\\s*"(${CHAT_TYPES.join('|')})"`).test(head) && /"(messages|id)"\s*:/.test(head);
}

type Entity = string | { type?: string; text?: string; href?: string; user_id?: number };

/** Text entities as plain text: a text link keeps its address, everything else its text. */
export function flattenText(t: unknown): string {
  if (typeof t === 'string') return t;
  if (!Array.isArray(t)) return '';
  return (t as Entity[])
    .map((e) => {
      if (typeof e === 'string') return e;
      const text = typeof e?.text === 'string' ? e.text : '';
      if (e?.type === 'text_link' && e.href && e.href !== text) return `${text} (${e.href})`;
      return text;
    })
    .join('');
}

interface TgMessage {
  id?: number;
  type?: string;
  date?: string;
  date_unixtime?: string;
  edited?: string;
  edited_unixtime?: string;
  from?: string | null;
  from_id?: string;
  actor?: string;
  reply_to_message_id?: number;
  forwarded_from?: string | null;
  text?: unknown;
  photo?: string;
  file?: string;
  file_name?: string;
  media_type?: string;
  sticker_emoji?: string;
  poll?: { question?: string; answers?: { text?: string }[] };
  location_information?: { latitude?: number; longitude?: number };
  contact_information?: { first_name?: string; last_name?: string; phone_number?: string };
}

interface TgChat {
  name?: string | null;
  type?: string;
  id?: number;
  messages?: TgMessage[];
}

export interface TelegramOptions {
  region: string;
  timeZone: string;
}

function instant(unix: string | undefined, local: string | undefined, zone: string): string | null {
  if (unix && /^\d+$/.test(unix)) return new Date(Number(unix) * 1000).toISOString();
  const m = local ? /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(local) : null;
  if (!m) return null;
  const [y, mo, d, h, mi, s] = m.slice(1).map(Number);
  return zonedTimeToUtc(y, mo, d, h, mi, s, zone).toISOString();
}

const NOT_INCLUDED = /^\(File not included|^\(File exceeds maximum size/;

function kindOf(type: string | undefined): ChatExport['kind'] {
  if (type === 'personal_chat' || type === 'bot_chat' || type === 'saved_messages') return 'direct';
  if (type?.endsWith('channel')) return 'channel';
  return 'group';
}

function readChat(chat: TgChat, selfId: string | null, base: string, b: Bundle, names: Set<string>, opts: TelegramOptions): ChatExport {
  if (!Array.isArray(chat.messages)) throw new TelegramFormatError(`chat ${chat.name ?? chat.id ?? '?'} has no "messages" list`);
  const chatId = String(chat.id ?? chat.name ?? 'unknown');
  const title = chat.name?.trim() || (chat.type === 'saved_messages' ? 'Saved Messages' : `Telegram chat ${chatId}`);
  const people = new Map<string, ChatPerson>();
  const personOf = (id: string, name: string | null | undefined): ChatPerson => {
    let p = people.get(id);
    if (!p) {
      p = { identifier: `telegram:${id}`, identifier_type: 'social', ...(name ? { display_name: name } : {}), ...(selfId && id === selfId ? { self: true } : {}) };
      people.set(id, p);
    } else if (name && !p.display_name) p.display_name = name;
    return p;
  };
  const sid = (id: number) => `telegram:${chatId}:${id}`;
  const messages: ChatMessage[] = [];
  const skipped: SkippedItem[] = [];
  for (const m of chat.messages) {
    const ref = `${chatId}/${m.id ?? '?'}`;
    if (typeof m.id !== 'number') {
      skipped.push({ ref, reason: 'unsupported', detail: 'message without an id' });
      continue;
    }
    if (m.type === 'service') {
      skipped.push({ ref, reason: 'excluded', detail: 'system line' });
      continue;
    }
    const at = instant(m.date_unixtime, m.date, opts.timeZone);
    if (!at) {
      skipped.push({ ref, reason: 'unsupported', detail: 'message without a readable date' });
      continue;
    }
    let text = flattenText(m.text);
    if (m.poll?.question) text = [text, `Poll: ${m.poll.question}`, ...(m.poll.answers ?? []).map((a) => `- ${a.text ?? ''}`)].filter(Boolean).join('\n');
    if (m.contact_information) {
      const c = m.contact_information;
      text = [text, `Contact: ${[c.first_name, c.last_name].filter(Boolean).join(' ')} ${c.phone_number ?? ''}`.trim()].filter(Boolean).join('\n');
    }
    if (m.location_information?.latitude !== undefined) text = [text, `Location: ${m.location_information.latitude}, ${m.location_information.longitude}`].filter(Boolean).join('\n');
    if (!text && m.sticker_emoji) text = m.sticker_emoji;
    const media = [m.photo, m.file]
      .filter((f): f is string => typeof f === 'string' && f !== '' && !NOT_INCLUDED.test(f))
      .map((f) => {
        const rel = path.posix.normalize(base ? `${base}/${f}` : f);
        return { name: path.posix.basename(f), entry: names.has(rel) ? rel : null };
      });
    if (!text.trim() && media.length === 0) {
      skipped.push({ ref, reason: 'empty', detail: m.media_type ? `${m.media_type} left out of the export` : 'empty message' });
      continue;
    }
    const sender = m.from_id ? personOf(m.from_id, m.from ?? null) : null;
    const editedAt = instant(m.edited_unixtime, m.edited, opts.timeZone);
    messages.push({
      sourceId: sid(m.id),
      at,
      sender,
      text: text.trim(),
      media,
      replyTo: typeof m.reply_to_message_id === 'number' ? sid(m.reply_to_message_id) : null,
      edited: !!editedAt,
      editedAt,
      facts: {
        message_id: m.id,
        ...(m.forwarded_from ? { forwarded_from: m.forwarded_from } : {}),
        ...(m.media_type ? { media_type: m.media_type } : {}),
      },
    });
  }
  return {
    provider: 'telegram',
    chatKey: `telegram:${chatId}`,
    title,
    kind: kindOf(chat.type),
    participants: [...people.values()],
    messages,
    skipped,
    facts: { telegram_chat_id: chat.id ?? null, telegram_type: chat.type ?? null },
  };
}

/** Every chat of a Telegram export (a result.json, or the folder or zip that holds it). */
export function readTelegram(b: Bundle, opts: TelegramOptions): ChatExport[] {
  const resultName = b.names.filter((n) => path.posix.basename(n) === 'result.json').sort((x, y) => x.length - y.length)[0];
  if (!resultName) throw new TelegramFormatError('no result.json in the export');
  let data: unknown;
  try {
    data = JSON.parse(b.read(resultName).toString('utf8'));
  } catch (err) {
    throw new TelegramFormatError(`result.json is not readable JSON (truncated?): ${(err as Error).message}`);
  }
  if (!data || typeof data !== 'object') throw new TelegramFormatError('result.json holds no object');
  const d = data as { chats?: { list?: TgChat[] }; left_chats?: { list?: TgChat[] }; personal_information?: { user_id?: number }; messages?: unknown };
  const base = path.posix.dirname(resultName) === '.' ? '' : path.posix.dirname(resultName);
  const names = new Set(b.names);
  const selfId = d.personal_information?.user_id ? `user${d.personal_information.user_id}` : null;
  const chats: TgChat[] = Array.isArray(d.messages) ? [d as TgChat] : [...(d.chats?.list ?? []), ...(d.left_chats?.list ?? [])];
  if (chats.length === 0) throw new TelegramFormatError('result.json holds no chat (expected "messages" or "chats.list")');
  return chats.map((c) => readChat(c, selfId, base, b, names, opts));
}
