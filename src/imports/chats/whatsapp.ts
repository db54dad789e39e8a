/**
 * WhatsApp "Export chat" text (`WhatsApp Chat with X.txt` from Android, `_chat.txt` from iOS), parsed into
 * messages. The export carries no time zone, no ids and no date format: each message line starts with the
 * phone's local date and time in the phone's locale, so the date order (D/M/Y, M/D/Y or Y/M/D) is decided per
 * file from the dates it holds, and the clock (12 or 24 hours) from each line.
 *
 *   Android: `12/03/2023, 14:05 - Priya Shah: text`        `3/12/23, 2:05 PM - Priya Shah: text`
 *   iOS:     `[12/03/2023, 14:05:33] Priya Shah: text`      `[3/12/23, 2:05:33 PM] Priya Shah: text`
 *
 * A line that does not start with a date continues the message before it. System lines (the end-to-end
 * notice, "X created group", joins and leaves), deleted messages and media left out of the export are kept
 * apart with their kind, so the importer can count them as skipped. Media are `<attached: NAME>` (iOS) or
 * `NAME (file attached)` (Android). Unicode direction marks (LRM, RLM) and narrow no-break spaces are removed.
 */
import { codedError } from '../../util/errors.ts';

export type LineKind = 'message' | 'system' | 'deleted' | 'media_omitted';

export interface WaWallTime {
  y: number;
  mo: number;
  d: number;
  h: number;
  mi: number;
  s: number;
}

export interface WaMessage {
  /** 1-based line of the message's first line in the text. */
  line: number;
  at: WaWallTime;
  /** The sender as the export names them (a contact name or a phone number), null for a system line. */
  sender: string | null;
  text: string;
  kind: LineKind;
  /** Names of the media files the message refers to. */
  attachments: string[];
  /** "<This message was edited>" was written after the text. */
  edited: boolean;
}

export type DateOrder = 'DMY' | 'MDY' | 'YMD';

export interface WaParseResult {
  platform: 'android' | 'ios';
  dateOrder: DateOrder;
  clock: '12h' | '24h';
  messages: WaMessage[];
  /** Text before the first dated line (a header the export never writes): its line count. */
  leadingLines: number;
}

export class WhatsAppFormatError extends codedError('IMPORT.UNREADABLE') {
  override name = 'WhatsAppFormatError';
}

const MARKS = /[\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]/g;
const SPACES = /[\u00a0\u202f\u2007]/g;

// date, time, optional am/pm (also "a. m." and "p.m."), then the rest.
const DATE = String.raw`(\d{1,4})[./-](\d{1,2})[./-](\d{1,4})`;
const TIME = String.raw`(\d{1,2})[:.](\d{2})(?:[:.](\d{2}))?(?:\s?([AaPp])\.?\s?[Mm]\.?)?`;
const IOS_RE = new RegExp(String.raw`^\[${DATE},?\s${TIME}\]\s(.*)$`);
const ANDROID_RE = new RegExp(String.raw`^${DATE},?\s${TIME}\s[-–]\s(.*)$`);

/** The text of a line as compared: direction marks out, odd spaces made plain. */
function clean(line: string): string {
  return line.replace(MARKS, '').replace(SPACES, ' ');
}

interface RawHeader {
  a: string;
  b: string;
  c: string;
  h: number;
  mi: number;
  s: number;
  ampm: string | null;
  rest: string;
  /** The rest started with a direction mark (iOS writes one before its system texts). */
  marked: boolean;
}

function header(line: string, platform: 'android' | 'ios' | null): { platform: 'android' | 'ios'; h: RawHeader } | null {
  const stripped = line.replace(/^[\u200e\u200f\ufeff]+/, '');
  const c = clean(stripped);
  for (const [p, re] of [['ios', IOS_RE], ['android', ANDROID_RE]] as const) {
    if (platform && platform !== p) continue;
    const m = re.exec(c);
    if (!m) continue;
    // Where the rest starts in the uncleaned line, to see whether a direction mark leads it.
    const idx = p === 'ios' ? stripped.indexOf('] ') + 2 : stripped.search(/\s[-–]\s/) + 3;
    const marked = /^[\u200e\u200f]/.test(stripped.slice(idx)) || /:\s[\u200e\u200f]/.test(stripped.slice(idx));
    return {
      platform: p,
      h: { a: m[1], b: m[2], c: m[3], h: Number(m[4]), mi: Number(m[5]), s: m[6] ? Number(m[6]) : 0, ampm: m[7] ? m[7].toLowerCase() : null, rest: m[8], marked },
    };
  }
  return null;
}

/** True when the start of a text looks like a WhatsApp export: dated lines within its first lines. */
export function looksLikeWhatsApp(head: string): boolean {
  const lines = head.split(/\r?\n/).filter((l) => l.trim() !== '').slice(0, 12);
  if (lines.length === 0) return false;
  const dated = lines.map((l) => header(l, null));
  // The first line is dated (exports start with a message or the encryption notice), and so is most of the rest.
  if (!dated[0]) return false;
  const platform = dated[0].platform;
  const hits = dated.filter((d) => d && d.platform === platform).length;
  return hits >= Math.min(2, lines.length) && hits * 2 >= lines.length;
}

const SYSTEM_PATTERNS: RegExp[] = [
  /^Messages and calls are end-to-end encrypted/i,
  /^Messages to this (chat|group) are now secured/i,
  /^Your security code with .+ changed/i,
  /security code changed/i,
  /\bcreated (the )?group\b/i,
  /\bcreated this group\b/i,
  /^(.+ )?added .+$/i,
  /^.+ left$/i,
  /^.+ removed .+$/i,
  /joined using this group's invite link$/i,
  /\bchanged (the|this group's) (subject|icon|description|settings)\b/i,
  /\bchanged the group (name|description)\b/i,
  /\bchanged their phone number\b/i,
  /changed to \+?\d[\d\s-]+$/i,
  /\bdeleted this group's icon\b/i,
  /^Missed (voice|video) call/i,
  /^(Voice|Video) call,/i,
  /is a contact\.?$/i,
  /disappearing messages/i,
  /^This chat is with a business account/i,
  /\bnow an admin\b/i,
  /^You (blocked|unblocked) this contact/i,
  /^Waiting for this message/i,
];
const DELETED = /^(This message was deleted|You deleted this message|This message was deleted by admin .*)\.?$/i;
const OMITTED = /^(<Media omitted>|<Medien ausgeschlossen>|<Multimedia omitido>|(image|video|audio|sticker|GIF|document|Contact card|voice message) omitted)$/i;
const IOS_ATTACHED = /<attached: ([^>]+)>/g;
const ANDROID_ATTACHED = /^(.+?\.[A-Za-z0-9]{1,6}) \(file attached\)$/gm;
const EDITED = /\s*<This message was edited>$/;

function isSystemText(text: string): boolean {
  return SYSTEM_PATTERNS.some((re) => re.test(text));
}

/** A "Name: text" split; names hold no quotes and are not overly long. */
function splitSender(rest: string): { sender: string; text: string } | null {
  const i = rest.indexOf(': ');
  const j = rest.endsWith(':') && !rest.includes(': ') ? rest.length - 1 : -1;
  const at = i >= 0 ? i : j;
  if (at <= 0) return null;
  const sender = clean(rest.slice(0, at)).trim();
  if (!sender || sender.length > 120 || /["“”«»]/.test(sender)) return null;
  return { sender, text: rest.slice(at + 2) };
}

function decideOrder(dates: { a: string; b: string; c: string }[], twelveHour: boolean): DateOrder {
  if (dates.some((d) => d.a.length === 4)) return 'YMD';
  let dmy = false;
  let mdy = false;
  for (const d of dates) {
    if (Number(d.a) > 12) dmy = true;
    if (Number(d.b) > 12) mdy = true;
  }
  if (dmy !== mdy) return dmy ? 'DMY' : 'MDY';
  if (dmy && mdy) {
    const a = dates.filter((d) => Number(d.a) > 12).length;
    const b = dates.filter((d) => Number(d.b) > 12).length;
    return a >= b ? 'DMY' : 'MDY';
  }
  // No day above 12 anywhere: the order under which the dates run forward (a chat is in time order).
  const backwards = (order: DateOrder) => {
    let n = 0;
    let prev = -Infinity;
    for (const d of dates) {
      const w = toWall(d, order, 0, 0, 0);
      const v = Date.UTC(w.y, w.mo - 1, w.d);
      if (v < prev) n++;
      prev = v;
    }
    return n;
  };
  const bd = backwards('DMY');
  const bm = backwards('MDY');
  if (bd !== bm) return bd < bm ? 'DMY' : 'MDY';
  return twelveHour ? 'MDY' : 'DMY';
}

function year(s: string): number {
  const n = Number(s);
  return s.length <= 2 ? 2000 + n : n;
}

function toWall(d: { a: string; b: string; c: string }, order: DateOrder, h: number, mi: number, s: number): WaWallTime {
  if (order === 'YMD') return { y: year(d.a), mo: Number(d.b), d: Number(d.c), h, mi, s };
  if (order === 'DMY') return { y: year(d.c), mo: Number(d.b), d: Number(d.a), h, mi, s };
  return { y: year(d.c), mo: Number(d.a), d: Number(d.b), h, mi, s };
}

function hour24(h: number, ampm: string | null): number {
  if (!ampm) return h;
  if (ampm === 'a') return h === 12 ? 0 : h;
  return h === 12 ? 12 : h + 12;
}

function validWall(w: WaWallTime): boolean {
  if (w.mo < 1 || w.mo > 12 || w.d < 1 || w.h > 23 || w.mi > 59 || w.s > 59) return false;
  const days = new Date(Date.UTC(w.y, w.mo, 0)).getUTCDate();
  return w.d <= days;
}

/** `2023-03-12T14:05:00`: the wall-clock time as written, part of a message's identity. */
export function wallString(w: WaWallTime): string {
  const p = (n: number, l = 2) => String(n).padStart(l, '0');
  return `${p(w.y, 4)}-${p(w.mo)}-${p(w.d)}T${p(w.h)}:${p(w.mi)}:${p(w.s)}`;
}

/**
 * Parses an export's text. Throws WhatsAppFormatError when no line is a WhatsApp message line, or when the
 * dates cannot be read under any order (then the file is not an export, or damaged beyond reading).
 */
export function parseWhatsApp(text: string): WaParseResult {
  const lines = text.split(/\r\n|\n|\r/);
  type Pending = { line: number; h: RawHeader; extra: string[] };
  const pending: Pending[] = [];
  let platform: 'android' | 'ios' | null = null;
  let leadingLines = 0;
  for (let i = 0; i < lines.length; i++) {
    const hit = header(lines[i], platform);
    if (hit) {
      platform ??= hit.platform;
      pending.push({ line: i + 1, h: hit.h, extra: [] });
    } else if (pending.length) pending[pending.length - 1].extra.push(lines[i]);
    else if (lines[i].trim() !== '') leadingLines++;
  }
  if (!platform || pending.length === 0) {
    throw new WhatsAppFormatError('no WhatsApp message line found (looked for "dd/mm/yyyy, hh:mm - Name: text" or "[dd/mm/yyyy, hh:mm:ss] Name: text")');
  }
  const twelveHour = pending.some((p) => p.h.ampm !== null);
  const dateOrder = decideOrder(pending.map((p) => p.h), twelveHour);
  const messages: WaMessage[] = [];
  let bad = 0;
  for (const p of pending) {
    const at = toWall(p.h, dateOrder, hour24(p.h.h, p.h.ampm), p.h.mi, p.h.s);
    if (!validWall(at)) {
      // A line that only looks dated (e.g. quoted text): it belongs to the message before it.
      bad++;
      if (messages.length) messages[messages.length - 1].text += `\n${clean(lines[p.line - 1])}${p.extra.length ? `\n${p.extra.join('\n')}` : ''}`;
      continue;
    }
    const split = splitSender(p.h.rest);
    // Trailing blank lines of the file belong to nobody.
    while (p.extra.length && p.extra[p.extra.length - 1].trim() === '') p.extra.pop();
    const rawText = [split ? split.text : p.h.rest, ...p.extra].join('\n');
    let body = clean(rawText).trim();
    const edited = EDITED.test(body);
    if (edited) body = body.replace(EDITED, '');
    const attachments: string[] = [];
    body = body.replace(IOS_ATTACHED, (_m, name: string) => {
      attachments.push(name.trim());
      return '';
    });
    body = body.replace(ANDROID_ATTACHED, (_m, name: string) => {
      attachments.push(name.trim());
      return '';
    });
    body = body.trim();
    let kind: LineKind = 'message';
    if (!split) kind = 'system';
    else if (attachments.length === 0 && DELETED.test(body)) kind = 'deleted';
    else if (attachments.length === 0 && OMITTED.test(body)) kind = 'media_omitted';
    // iOS writes system texts as from the chat (or the person), behind a direction mark.
    else if (platform === 'ios' && p.h.marked && attachments.length === 0 && isSystemText(body)) kind = 'system';
    else if (platform === 'android' && attachments.length === 0 && /^Messages and calls are end-to-end encrypted/i.test(body)) kind = 'system';
    messages.push({ line: p.line, at, sender: split?.sender ?? null, text: body, kind, attachments, edited });
  }
  if (messages.length === 0) throw new WhatsAppFormatError(`none of the ${bad} dated lines holds a valid date`);
  return { platform, dateOrder, clock: twelveHour ? '12h' : '24h', messages, leadingLines };
}

/**
 * The chat's name from the export's file name: "WhatsApp Chat with Priya Shah.txt" (Android),
 * "WhatsApp Chat - Priya Shah.zip" (iOS), and the same in a few other languages; null for `_chat.txt`.
 */
export function chatNameFromFileName(name: string): string | null {
  const base = name.replace(/^.*[\\/]/, '').replace(/\.(txt|zip)$/i, '').replace(/\s\(\d+\)$/, '').trim();
  const m = /^(?:WhatsApp[ -]Chat|Chat de WhatsApp|Conversa do WhatsApp|Discussion WhatsApp|WhatsApp-chat|Chat WhatsApp)\s*(?:with|mit|con|com|avec|met|med|z|-|–)\s+(.+)$/i.exec(base);
  if (m) return m[1].trim() || null;
  return null;
}
