/**
 * A WhatsApp export (a .txt, or a .zip of the .txt and its media) as a ChatExport: the chat named from the
 * file name (or the group name iOS writes on its first line), senders as people (phone numbers in E.164 through
 * the region, names as `whatsapp:` handles with the name as display name), times read in the time zone given,
 * and stable message ids so a later, longer export of the same chat adds only its new messages:
 *
 *   whatsapp:<chat>:<wall-clock time>:<sender>:<ordinal among identical ones>:<text hash>
 *
 * The wall-clock time is the export's own (not the instant), so the id does not move with the zone chosen.
 */
import path from 'node:path';
import { canonicalPhone } from '../../identity/identifiers.ts';
import type { Bundle } from './bundle.ts';
import { shortHash, type ChatExport, type ChatMessage, type ChatPerson, type SkippedItem } from './model.ts';
import { zonedTimeToUtc } from './tz.ts';
import { chatNameFromFileName, looksLikeWhatsApp, parseWhatsApp, wallString, WhatsAppFormatError, type WaParseResult } from './whatsapp.ts';

export interface WhatsAppOptions {
  region: string;
  timeZone: string;
  /** The exporter's own name (or number) as the export writes it: their messages are from the self person. */
  me?: string | null;
  /** The chat's name, when the file name does not say it. */
  chatName?: string | null;
}

export interface WhatsAppExport extends ChatExport {
  /** Media files in the archive no message refers to. */
  unreferencedMedia: string[];
  parse: Pick<WaParseResult, 'platform' | 'dateOrder' | 'clock'>;
}

/** The chat text of a bundle: `_chat.txt`, or the one .txt that reads as a WhatsApp export. */
export function whatsAppTextEntry(b: Bundle): string | null {
  const txts = b.names.filter((n) => /\.txt$/i.test(n));
  const chat = txts.find((n) => path.posix.basename(n) === '_chat.txt') ?? txts.find((n) => /whatsapp/i.test(n));
  if (chat) return chat;
  for (const n of txts.slice(0, 5)) {
    if (b.size(n) > 0 && looksLikeWhatsApp(b.read(n).subarray(0, 16 * 1024).toString('utf8'))) return n;
  }
  return null;
}

const PHONE_LIKE = /^\+?[\d\s().\-‒–]{7,}$/;

export function whatsAppPerson(name: string, region: string, me: string | null | undefined): ChatPerson {
  const self = !!me && name.trim().toLowerCase() === me.trim().toLowerCase();
  if (PHONE_LIKE.test(name)) {
    const p = canonicalPhone(name, region);
    if (p?.kind === 'phone') return { identifier: p.value, identifier_type: 'phone', ...(self ? { self } : {}) };
  }
  return { identifier: `whatsapp:${name.trim()}`, identifier_type: 'chatapp', display_name: name.trim(), ...(self ? { self } : {}) };
}

export function readWhatsApp(b: Bundle, opts: WhatsAppOptions): WhatsAppExport {
  const entry = whatsAppTextEntry(b);
  if (!entry) throw new WhatsAppFormatError('no WhatsApp chat text (_chat.txt or "WhatsApp Chat with ….txt") in the export');
  const text = b.read(entry).toString('utf8');
  const parsed = parseWhatsApp(text);

  // The chat's name: given, else the export's file name (the zip's, then the text's), else the group name iOS
  // writes as the sender of its first system line, else the other senders.
  const firstSystem = parsed.messages.find((m) => m.kind === 'system' && m.sender);
  const senders = [...new Set(parsed.messages.filter((m) => m.kind !== 'system' && m.sender).map((m) => m.sender!))];
  const title =
    opts.chatName?.trim() ||
    chatNameFromFileName(path.basename(b.path)) ||
    chatNameFromFileName(entry) ||
    (firstSystem?.sender && parsed.platform === 'ios' ? firstSystem.sender : null) ||
    senders.filter((s) => !opts.me || s.toLowerCase() !== opts.me.toLowerCase()).sort().join(', ') ||
    'WhatsApp chat';
  const chatKey = `whatsapp:${title.toLowerCase()}`;
  const chatHash = shortHash(chatKey);

  const people = new Map<string, ChatPerson>();
  const personOf = (name: string) => {
    let p = people.get(name);
    if (!p) people.set(name, (p = whatsAppPerson(name, opts.region, opts.me)));
    return p;
  };
  // The group name is no member.
  const isGroupName = (s: string | null) => !!s && parsed.platform === 'ios' && s === firstSystem?.sender && !senders.includes(s);
  const grouped =
    parsed.messages.some((m) => m.kind === 'system' && /\bcreated (the )?group\b|\bcreated this group\b|\badded\b|\bleft$/i.test(m.text)) ||
    senders.length > 2;

  const media = new Map<string, string>();
  for (const n of b.names) if (n !== entry) media.set(path.posix.basename(n), n);
  const referenced = new Set<string>();

  const ordinals = new Map<string, number>();
  const messages: ChatMessage[] = [];
  const skipped: SkippedItem[] = [];
  for (const m of parsed.messages) {
    const wall = wallString(m.at);
    const ref = `line ${m.line}`;
    if (m.kind === 'system' || isGroupName(m.sender)) {
      skipped.push({ ref, reason: 'excluded', detail: 'system line' });
      continue;
    }
    if (m.kind === 'deleted') {
      skipped.push({ ref, reason: 'empty', detail: 'deleted message' });
      continue;
    }
    if (m.kind === 'media_omitted') {
      skipped.push({ ref, reason: 'empty', detail: 'media left out of the export' });
      continue;
    }
    if (!m.text && m.attachments.length === 0) {
      skipped.push({ ref, reason: 'empty', detail: 'empty message' });
      continue;
    }
    const sender = m.sender ? personOf(m.sender) : null;
    const senderHash = shortHash(m.sender ?? '', 10);
    const textHash = shortHash(`${m.text}\u0000${m.attachments.join('\u0000')}`, 12);
    // Two identical messages of one sender in the same second (minute, on Android) differ by their ordinal.
    const base = `${chatHash}:${wall}:${senderHash}:${textHash}`;
    const ordinal = ordinals.get(base) ?? 0;
    ordinals.set(base, ordinal + 1);
    const at = zonedTimeToUtc(m.at.y, m.at.mo, m.at.d, m.at.h, m.at.mi, m.at.s, opts.timeZone).toISOString();
    const refs = m.attachments.map((name) => {
      const e = media.get(name) ?? null;
      if (e) referenced.add(e);
      return { name, entry: e };
    });
    messages.push({
      sourceId: `whatsapp:${chatHash}:${wall}:${senderHash}:${ordinal}:${textHash}`,
      at,
      sender,
      text: m.text,
      media: refs,
      edited: m.edited,
      facts: { local_time: wall, time_zone: opts.timeZone, line: m.line },
    });
  }
  const unreferencedMedia = [...media.values()].filter((n) => !referenced.has(n) && !/\.txt$/i.test(n));
  for (const n of unreferencedMedia) skipped.push({ ref: n, reason: 'excluded', detail: 'media file no message refers to' });
  return {
    provider: 'whatsapp',
    chatKey,
    title,
    kind: grouped ? 'group' : 'direct',
    participants: [...people.values()],
    messages,
    skipped,
    facts: { platform: parsed.platform, date_order: parsed.dateOrder, clock: parsed.clock, export_file: path.basename(b.path) },
    unreferencedMedia,
    parse: { platform: parsed.platform, dateOrder: parsed.dateOrder, clock: parsed.clock },
  };
}
