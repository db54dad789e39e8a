/**
 * When a message was received, when its Date header cannot say. A parser's reading of an unreadable Date
 * header (`Tue, 7 Apr 2026 10:00:t`) is no date (mailparser made it the time of parsing, which would date
 * an old message "now"); this reads the header itself and, when it is absent or unreadable, falls back to the first trustworthy
 * clue: the Received headers (the topmost first: the last hop, closest to delivery), the mbox `From `
 * line, the `.emlx` property list's `date-received`, then the file's modification time. The caller
 * records which one was used.
 */

export type DateSource = 'date_header' | 'received' | 'mbox_from' | 'emlx_plist' | 'file_mtime';

export interface DateClues {
  /** Values of the Received headers, topmost first. */
  received?: string[];
  /** The mbox separator line (`From sender Tue Apr  7 10:00:00 2026`). */
  mboxFromLine?: string | null;
  /** The `.emlx` property-list trailer. */
  emlxPlist?: string | null;
  fileMtime?: Date | null;
}

const EARLIEST = Date.UTC(1971, 0, 1);
const FUTURE_SLACK_MS = 2 * 24 * 3600 * 1000;

/** A date worth trusting: readable, after 1970 and not more than two days ahead of now. */
function trustworthy(ms: number): boolean {
  return Number.isFinite(ms) && ms >= EARLIEST && ms <= Date.now() + FUTURE_SLACK_MS;
}

/** An RFC 5322 date-time (comments removed), or null when it is not one. */
export function parseRfc5322Date(raw: string | null | undefined): Date | null {
  if (!raw) return null;
  const s = raw.replace(/\([^()]*\)/g, ' ').replace(/\s+/g, ' ').trim();
  if (/^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}/.test(s)) {
    const iso = Date.parse(s);
    return trustworthy(iso) ? new Date(iso) : null;
  }
  // Require the parts of a date-time: a day, a month name, a year and hh:mm; Date.parse alone is too lenient.
  if (!/\b\d{1,2}\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+\d{2,4}\s+\d{1,2}:\d{2}(:\d{2})?(\s|$)/i.test(s)) return null;
  const ms = Date.parse(s);
  return trustworthy(ms) ? new Date(ms) : null;
}

/** The date-time after the last `;` of a Received header. */
export function receivedDate(value: string): Date | null {
  const semi = value.lastIndexOf(';');
  return semi === -1 ? null : parseRfc5322Date(value.slice(semi + 1));
}

const MONTHS = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

/** The asctime date of an mbox `From ` line (UTC, as mail delivery agents write it), or null. */
export function mboxFromDate(line: string | null | undefined): Date | null {
  if (!line) return null;
  const m = /\b(?:mon|tue|wed|thu|fri|sat|sun)[a-z]*\s+(jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\s+(\d{1,2})\s+(\d{1,2}):(\d{2})(?::(\d{2}))?\s+(?:([+-]\d{4}|[A-Z]{2,5})\s+)?(\d{4})\b/i.exec(line);
  if (!m) return null;
  let ms = Date.UTC(Number(m[7]), MONTHS.indexOf(m[1].toLowerCase()), Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5] ?? 0));
  if (m[6] && /^[+-]\d{4}$/.test(m[6])) {
    const sign = m[6][0] === '-' ? -1 : 1;
    ms -= sign * (Number(m[6].slice(1, 3)) * 60 + Number(m[6].slice(3))) * 60_000;
  }
  return trustworthy(ms) ? new Date(ms) : null;
}

/** `date-received` (seconds since 1970) of an .emlx property list, or null. */
export function emlxPlistDate(plist: string | null | undefined): Date | null {
  if (!plist) return null;
  const m = /<key>date-received<\/key>\s*<(?:integer|real)>\s*(\d+(?:\.\d+)?)\s*</.exec(plist);
  if (!m) return null;
  const ms = Math.round(Number(m[1]) * 1000);
  return trustworthy(ms) ? new Date(ms) : null;
}

/**
 * The `flags` integer of an .emlx property list as IMAP flag names, sorted: Mail.app's bits 0 read, 2 answered,
 * 4 flagged, 6 draft (1 deleted, 3 encrypted, 5 recent and the higher bits are left out). Null without one.
 * Beside emlxPlistDate: the two facts memex reads from the trailer.
 */
export function emlxPlistFlags(plist: string | null | undefined): string[] | null {
  if (!plist) return null;
  const m = /<key>flags<\/key>\s*<integer>\s*(\d+)\s*</.exec(plist);
  if (!m) return null;
  const bits = Number(m[1]);
  const flags: string[] = [];
  if (bits & (1 << 2)) flags.push('\\Answered');
  if (bits & (1 << 6)) flags.push('\\Draft');
  if (bits & (1 << 4)) flags.push('\\Flagged');
  if (bits & 1) flags.push('\\Seen');
  return flags;
}

/** The message's date and where it came from; null when nothing trustworthy is known. */
export function messageDate(dateHeader: string | null | undefined, clues: DateClues): { date: Date; source: DateSource } | null {
  const header = parseRfc5322Date(dateHeader);
  if (header) return { date: header, source: 'date_header' };
  for (const r of clues.received ?? []) {
    const d = receivedDate(r);
    if (d) return { date: d, source: 'received' };
  }
  const from = mboxFromDate(clues.mboxFromLine);
  if (from) return { date: from, source: 'mbox_from' };
  const plist = emlxPlistDate(clues.emlxPlist);
  if (plist) return { date: plist, source: 'emlx_plist' };
  if (clues.fileMtime && trustworthy(clues.fileMtime.getTime())) return { date: clues.fileMtime, source: 'file_mtime' };
  return null;
}
