/**
 * Precise PII redaction: email addresses, phone numbers, account numbers and SSNs replaced by the spec's
 * markers ([EMAIL_REDACTED], [PHONE_REDACTED], [ACCOUNT_REDACTED], [SSN_REDACTED]), and nothing else.
 *
 * The spec's patterns (spec-notes B2.3: `[\w.-]+@[\w.-]+`, three 3-3-4 digit patterns, `\b\d{8,}\b`) took
 * git commit hashes, diff `index` lines, dates such as `17.04.2019 08:22`, claim numbers such as
 * `CLM-2026-04417` and message ids along with the personal data (issue 30). Here a candidate counts only
 * when it stands on its own and its context says what it is:
 *
 * - **Protected context** is found first and never redacted: URLs, message ids (`<…@…>` on Message-ID /
 *   In-Reply-To / References lines, machine-made ids elsewhere), diff lines (`diff --git`, `index a..b`,
 *   `---`/`+++`, hunk headers and hunk bodies, also quoted with `>`), UUIDs, hex runs with a letter (hashes),
 *   dates and times in common formats, IPv4 addresses and version strings.
 * - **A candidate stands alone**: no letter, digit or `_` touches it, nor a joiner (`-./:#@=~`) that leads
 *   into one — so the digits of `CLM-2026-04417`, `v4.19.36`, `build-20190417` or `a1b2c3d4e5` are part of
 *   an identifier, not a number of their own.
 * - **Emails**: addresses only (a local part, `@`, a domain whose last label is letters).
 * - **Phones**: what libphonenumber's matcher finds and *validates* (leniency VALID): numbers written with
 *   `+` (or `00`) and a country code, North American numbers, and national numbers of common regions
 *   written with their trunk prefix (`020 7946 0958`, `06 12 34 56 78`, `8 (495) 123-45-67`).
 * - **Account numbers** (spec: digit sequences of 8 or more): card numbers that pass the Luhn check, IBANs
 *   whose check digits are right, and other stand-alone runs of 8+ digits (plain, or in groups of 3+ with one
 *   separator) — unless they are dates (`20190417`), shaped like a North American phone number, or labelled
 *   on their line as something else (tracking, order, invoice, ticket, … number) with no account word nearer.
 * - **SSNs**: `ddd-dd-dddd` with the parts the SSA never issues (000, 666, 9xx; 00; 0000) left alone.
 *
 * Order as in the spec (emails, phones, accounts, SSN); a span taken by one category is not looked at by
 * the next. findPii returns the spans (the bench compares them with annotated fixtures), redactPii the text.
 */
import { findNumbers, type CountryCode } from 'libphonenumber-js/max';
import { ALL_REDACTIONS, type RedactOptions } from './policy.ts';

export type PiiKind = 'email' | 'phone' | 'account' | 'ssn';

export interface PiiSpan {
  start: number;
  end: number;
  kind: PiiKind;
}

export const PII_MARKERS: Record<PiiKind, string> = {
  email: '[EMAIL_REDACTED]',
  phone: '[PHONE_REDACTED]',
  account: '[ACCOUNT_REDACTED]',
  ssn: '[SSN_REDACTED]',
};

type Range = [number, number];

const overlaps = (ranges: Range[], start: number, end: number) => ranges.some(([a, b]) => start < b && end > a);

// ---------------------------------------------------------------------------------------------
// Protected context

const URL_RE = /\b(?:https?|ftp|sftp|ssh|git|file|news|nntp):\/\/[^\s<>"'`]+|\bwww\.[^\s<>"'`]+/gi;
/** A message id in angle brackets: `<local@host>`. Which ones are ids (not `Name <address>`) is decided below. */
const BRACKETED_ID_RE = /<([^<>\s@]+)@([^<>\s@]+)>/g;
const ID_HEADER_LINE_RE = /^[ \t>]*(?:message-id|in-reply-to|references|content-id|x-message-id|resent-message-id)\s*:/i;
const UUID_RE = /\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b/gi;
/** Hashes and other hex runs: 7+ hex digits with at least one letter a-f. */
const HEX_RE = /\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*\d)[0-9a-f]{7,}\b/gi;
const DATE_RES = [
  // ISO dates and timestamps: 2019-04-17, 2019-04-17T08:22:00.123+02:00, 2019/04/17
  /\b\d{4}([-/.])(?:0?[1-9]|1[0-2])\1(?:0?[1-9]|[12]\d|3[01])(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\d.\-/]\d)/g,
  // Day-month-year or month-day-year with one separator: 17.04.2019, 04/17/2019, 17-4-19
  /(?<![\d.\-/])\d{1,2}([-/.])\d{1,2}\1(?:\d{4}|\d{2})(?![\d]|[.\-/]\d)/g,
  // Compact dates and timestamps: 20190417, 201904170822, 20190417082200 (years 1900-2099)
  /(?<!\d)(?:19|20)\d{2}(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])(?:T?(?:[01]\d|2[0-3])[0-5]\d(?:[0-5]\d)?)?(?!\d)/g,
  // Times: 08:22, 8:22:10, 08:22:10.123
  /(?<![\d:])\d{1,2}:[0-5]\d(?::[0-5]\d(?:[.,]\d+)?)?(?![\d:])/g,
  // Ranges of years: 2019-2024, 1999–2001
  /(?<![\d.\-/])(?:19|20)\d{2} ?[-–] ?(?:19|20)\d{2}(?![\d]|[.\-/]\d)/g,
];
const IPV4_RE = /(?<![\d.])\d{1,3}(?:\.\d{1,3}){3}(?![\d.])/g;
/**
 * Version strings: v1.2, 4.19.36, 2.6.32.71, 5.10.0-rc1 (3–4 dotted parts, or any with a leading v); not the
 * North American phone layout 508.410.9572.
 */
const VERSION_RE = /(?<![\w.])(?!\d{3}\.\d{3}\.\d{4}(?![\w.]))(?:v\d+(?:\.\d+)+|\d{1,4}(?:\.\d{1,4}){2,3})(?:[-+~][\w.]+)?(?![\w]|\.\d)/gi;
const DIFF_HEAD_RE = /^(?:diff --git |diff -|index [0-9a-f]{4,}\.\.[0-9a-f]{4,}|--- (?:a\/|\/dev\/null|\S+\t)|\+\+\+ (?:b\/|\/dev\/null|\S+\t)|new file mode |deleted file mode |similarity index |rename (?:from|to) |Binary files )/;
const HUNK_RE = /^@@ -\d+(?:,\d+)? \+\d+(?:,\d+)? @@/;

/** Lines of patches (headers, hunk headers and hunk bodies), also inside quoted replies. */
function diffRanges(text: string): Range[] {
  if (!text.includes('@@') && !/^[ \t>]*(?:diff |index |[+-]\t)/m.test(text)) return [];
  const out: Range[] = [];
  let inHunk = false;
  let at = 0;
  for (const raw of text.split('\n')) {
    const start = at;
    at += raw.length + 1;
    const line = raw.replace(/^(?:> ?)+/, '');
    if (DIFF_HEAD_RE.test(line)) {
      out.push([start, start + raw.length]);
      inHunk = false;
    } else if (HUNK_RE.test(line)) {
      out.push([start, start + raw.length]);
      inHunk = true;
    } else if ((inHunk && /^[ +\-\\]/.test(line)) || /^[+-]\t/.test(line)) {
      // Hunk bodies; outside a hunk (a patch cut up in a reply), a + or - then a tab is still a patch line.
      out.push([start, start + raw.length]);
    } else {
      inHunk = false;
    }
  }
  return out;
}

/** A machine-made local part: a timestamp start, `=`/`$`, or a long run mixing many digits and letters. */
function machineMadeLocal(local: string): boolean {
  if (/^\d{8,}/.test(local) || /[=$]/.test(local)) return true;
  const digits = (local.match(/\d/g) ?? []).length;
  return local.length >= 16 && digits >= 6;
}

function lineStartAt(text: string, i: number): number {
  return text.lastIndexOf('\n', i - 1) + 1;
}

function protectedRanges(text: string): Range[] {
  const out: Range[] = [];
  const add = (re: RegExp) => {
    for (const m of text.matchAll(re)) out.push([m.index!, m.index! + m[0].length]);
  };
  if (text.includes('://') || /www\./i.test(text)) for (const m of text.matchAll(URL_RE)) {
    // Sentence punctuation after a URL is not part of it.
    const url = m[0].replace(/[.,;:!?)\]}>]+$/, '');
    out.push([m.index!, m.index! + url.length]);
  }
  if (text.includes('@')) for (const m of text.matchAll(BRACKETED_ID_RE)) {
    const ls = lineStartAt(text, m.index!);
    const onIdLine = ID_HEADER_LINE_RE.test(text.slice(ls, m.index!));
    if (onIdLine || machineMadeLocal(m[1])) out.push([m.index!, m.index! + m[0].length]);
  }
  if (text.includes('-')) add(UUID_RE);
  add(HEX_RE);
  for (const re of DATE_RES) add(re);
  add(IPV4_RE);
  add(VERSION_RE);
  out.push(...diffRanges(text));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Standing alone

const WORDISH = /[\p{L}\p{N}_]/u;
const JOINER = /[-./:#@=~]/;

/** True when no letter/digit/_ touches [start, end), nor a joiner that leads into one. */
function standsAlone(text: string, start: number, end: number): boolean {
  const b1 = text[start - 1] ?? '';
  const b2 = text[start - 2] ?? '';
  if (b1 && WORDISH.test(b1)) return false;
  if (b1 && JOINER.test(b1) && b2 && WORDISH.test(b2)) return false;
  const a1 = text[end] ?? '';
  const a2 = text[end + 1] ?? '';
  if (a1 && WORDISH.test(a1)) return false;
  if (a1 && JOINER.test(a1) && a2 && WORDISH.test(a2)) return false;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Emails

const EMAIL_RE =
  /(?<![\p{L}\p{N}_.+!#$%&'*/=?^`{|}~-])[\p{L}\p{N}_!#$%&'*+/=?^`{|}~-]+(?:\.[\p{L}\p{N}_!#$%&'*+/=?^`{|}~-]+)*@(?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}{2,63}(?![\p{L}\p{N}-]|\.[\p{L}\p{N}])/gu;

/** Longest local part + domain looked at around an `@` (RFC 5321: 64 + 255). */
const EMAIL_REACH = 320;

function emailSpans(text: string, prot: () => Range[]): PiiSpan[] {
  const out: PiiSpan[] = [];
  // The pattern is costly to try at every position of a long text: it runs on a window around each `@`.
  let done = 0;
  for (let at = text.indexOf('@'); at !== -1; at = text.indexOf('@', at + 1)) {
    if (at < done) continue;
    const from = Math.max(0, at - EMAIL_REACH);
    const m = [...text.slice(from, at + EMAIL_REACH).matchAll(EMAIL_RE)].find((x) => from + x.index! <= at && from + x.index! + x[0].length > at);
    // A match at a cut window edge would be a local part longer than any address has.
    if (!m || (m.index === 0 && from > 0)) continue;
    const start = from + m.index!;
    const end = start + m[0].length;
    done = end;
    if (!overlaps(prot(), start, end)) out.push({ start, end, kind: 'email' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Labels: what the line says a number is

/**
 * Words that say what a number on its line is; the nearest one before the number decides. A phone word
 * (phone, tel, mobile, …) or an account word (account, card, IBAN, …) makes it that; a label of something
 * else (tracking, order, invoice, routing, timestamp, …) says it is neither.
 */
const LABELS: { kind: 'phone' | 'account' | 'other'; re: RegExp }[] = [
  { kind: 'phone', re: /\b(?:phone|telephone|tel|telefon\w*|téléphone|teléfono|telefono|call|ring|mobile?|mobil|cell|handy|portable|cellulare|móvil|fax|whatsapp|sms|hotline|reception|dial)\b/giu },
  {
    kind: 'account',
    re: /\b(?:accounts?|acct|a\/c|konto\w*|compte|cuenta|conto|iban|card|kreditkarte|carte|tarjeta|carta|customer|kunden\w*|client|member(?:ship)?|policy|polic[ey]n\w*|versicherungs\w*)\b/giu,
  },
  {
    kind: 'other',
    re: /\b(?:tracking|track|sendung\w*|shipment|parcel|package|paket|consignment|waybill|awb|order|bestell\w*|invoice|rechnung\w*|factura|facture|receipt|ticket|case|claim|booking|reservation|confirmation|reference|ref|pnr|flight|train|build|job|issue|bug|pr|pull|commit|merge|parent|tree|object|blob|hash|sha\d*|md5|checksum|digest|crc\d*|code|pin|revision|rev|patch|serial|s\/n|sku|isbn|issn|ean|upc|gtin|barcode|orcid|doi|model|part|article|artikel|item|lot|batch|pid|port|uid|gid|inode|offset|sector|block|page|row|routing|aba|sort ?code|bsb|bic|swift|blz|bank ?code|tax|steuer\w*|vat|ust\w*|siret|siren|time|timestamp|epoch|created|updated|modified|expires|unix|ts|ms|population|version|registry|register|identifier|trial|isrctn|nct|eudract|doi|pmid)\b/giu,
  },
];

function nearestLabel(text: string, start: number): 'phone' | 'account' | 'other' | null {
  const ls = lineStartAt(text, start);
  const before = text.slice(Math.max(ls, start - 60), start);
  let best: 'phone' | 'account' | 'other' | null = null;
  let at = -1;
  for (const { kind, re } of LABELS) {
    for (const m of before.matchAll(re)) {
      if (m.index! >= at) {
        at = m.index!;
        best = kind;
      }
    }
  }
  return best;
}

/** A number followed by a unit is a quantity: 12345678 bytes, 2000000000 ns, 1555489320123 ms. */
const UNIT_AFTER = /^\s?(?:bytes?|[kmgt]i?b|b|ms|ns|µs|us|s|sec\w*|min\w*|hours?|days?|rows?|records?|items?|messages?|times|km|m|kg|g|l|€|eur|usd|\$|£|%|x)\b/i;
const followedByUnit = (text: string, end: number) => UNIT_AFTER.test(text.slice(end, end + 12));

// ---------------------------------------------------------------------------------------------
// Phones

/** Regions whose national numbers (written with their trunk prefix) are looked for besides NANP ones. */
const NATIONAL_REGIONS: CountryCode[] = ['GB', 'DE', 'FR', 'IT', 'ES', 'NL', 'BE', 'CH', 'AT', 'IE', 'AU', 'NZ', 'IN', 'JP', 'BR', 'ZA', 'RU', 'SE', 'PL', 'TR', 'KR'];

const digitCount = (s: string) => s.replace(/\D/g, '').length;

// The typings leave out `leniency`, which the matcher takes (libphonenumber's Leniency levels).
type Finder = (text: string, o: { defaultCountry: CountryCode; leniency: 'POSSIBLE' | 'VALID'; v2: true }) => { startsAt: number; endsAt: number }[];
const find = findNumbers as unknown as Finder;

/** Runs of digits and separators long enough to hold a phone number, each with its sign or bracket. */
const PHONE_RUN_RE = /\+?\(?\d[\d \t().\-\/]{5,}\d\)?/g;
const SSN_SHAPE = /^\d{3}-\d{2}-\d{4}$/;

/** Numbers libphonenumber's matcher finds and validates, as [start, end) ranges. */
function phoneCandidates(text: string): Range[] {
  const out: Range[] = [];
  // The matcher is slow on long text (tens of ms per 5 KB): it only sees the runs of digits and
  // separators long enough to hold a number.
  for (const c of text.matchAll(PHONE_RUN_RE)) {
    const at = c.index!;
    const span = c[0];
    // The shortest numbers looked for have 7 digits (+ and a country code, or a national number with a trunk 0).
    if (digitCount(span) < 7) continue;
    for (const m of find(span, { defaultCountry: 'US', leniency: 'VALID', v2: true })) {
      const raw = span.slice(m.startsAt, m.endsAt);
      // A national NANP number is 10 digits; shorter US "numbers" are local fragments.
      if (raw.trimStart().startsWith('+') || digitCount(raw) >= 10) out.push([at + m.startsAt, at + m.endsAt]);
    }
    if (!/(^|\D)\(?[08][\d (]/.test(span)) continue;
    for (const region of NATIONAL_REGIONS) {
      for (const m of find(span, { defaultCountry: region, leniency: 'VALID', v2: true })) {
        const raw = span.slice(m.startsAt, m.endsAt);
        const trunk = region === 'RU' ? /^\(?[08]/ : /^\(?0/;
        if (trunk.test(raw) && digitCount(raw) >= 9) out.push([at + m.startsAt, at + m.endsAt]);
      }
    }
  }
  return out;
}

function phoneSpans(text: string, prot: () => Range[], taken: Range[]): PiiSpan[] {
  const out: PiiSpan[] = [];
  for (const [start, end] of phoneCandidates(text)) {
    if (overlaps(taken, start, end) || !standsAlone(text, start, end) || overlaps(prot(), start, end)) continue;
    const raw = text.slice(start, end);
    if (SSN_SHAPE.test(raw)) continue;
    // Written with + or 00 and a country code, a valid number is a phone whatever the line says; written
    // nationally, a number the line calls an account, an order, a timestamp … is not.
    const international = /^(?:\+|00)/.test(raw);
    if (!international) {
      const label = nearestLabel(text, start);
      if (label === 'account' || label === 'other') continue;
    }
    out.push({ start, end, kind: 'phone' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Account numbers

/** IBAN lengths by country (SWIFT IBAN registry), so a mistyped check digit still marks an account. */
const IBAN_LENGTHS: Record<string, number> = {
  AD: 24, AE: 23, AL: 28, AT: 20, AZ: 28, BA: 20, BE: 16, BG: 22, BH: 22, BR: 29, CH: 21, CR: 22, CY: 28, CZ: 24,
  DE: 22, DK: 18, DO: 28, EE: 20, EG: 29, ES: 24, FI: 18, FO: 18, FR: 27, GB: 22, GE: 22, GI: 23, GL: 18, GR: 27,
  GT: 28, HR: 21, HU: 28, IE: 22, IL: 23, IS: 26, IT: 27, JO: 30, KW: 30, KZ: 20, LB: 28, LI: 21, LT: 20, LU: 20,
  LV: 21, MC: 27, MD: 24, ME: 22, MK: 19, MR: 27, MT: 31, MU: 30, NL: 18, NO: 15, PK: 24, PL: 28, PS: 29, PT: 25,
  QA: 29, RO: 24, RS: 22, SA: 24, SE: 24, SI: 19, SK: 24, SM: 27, TN: 24, TR: 26, UA: 29, VG: 24, XK: 20,
};
const IBAN_RE = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g;
/** 8+ digits, plain or in groups (2+ digits, then groups of 3+) joined by one kind of separator. */
const DIGITS_RE = /(?<![\d])\d{2,}(?:([ -])\d{3,}(?:\1\d{3,})*(?:\1\d{1,2})?)?(?!\d)/g;
const NANP_SHAPE = /^(?:\(\d{3}\) ?|\d{3}[-. ])\d{3}[-. ]\d{4}$/;

function ibanShaped(s: string): boolean {
  const iban = s.replace(/ /g, '');
  return IBAN_LENGTHS[iban.slice(0, 2)] === iban.length;
}

function luhn(digits: string): boolean {
  let sum = 0;
  for (let i = 0; i < digits.length; i++) {
    let d = Number(digits[digits.length - 1 - i]);
    if (i % 2 === 1) {
      d *= 2;
      if (d > 9) d -= 9;
    }
    sum += d;
  }
  return sum % 10 === 0;
}

function accountSpans(text: string, prot: () => Range[], taken: Range[], phonesOn: boolean): PiiSpan[] {
  const out: PiiSpan[] = [];
  const ok = (start: number, end: number) =>
    !overlaps(taken, start, end) && !out.some((s) => start < s.end && end > s.start) && standsAlone(text, start, end) && !overlaps(prot(), start, end);
  for (const m of text.matchAll(IBAN_RE)) {
    const start = m.index!;
    const end = start + m[0].length;
    if (ibanShaped(m[0]) && ok(start, end)) out.push({ start, end, kind: 'account' });
  }
  // When phone redaction is off, a phone number is still not an account number.
  const phones = phonesOn ? [] : phoneSpans(text, prot, taken).map((s): Range => [s.start, s.end]);
  for (const m of text.matchAll(DIGITS_RE)) {
    const start = m.index!;
    const end = start + m[0].length;
    const digits = m[0].replace(/\D/g, '');
    if (digits.length < 8 || !ok(start, end)) continue;
    // Shaped like a phone number (a NANP layout, or + and digits) but not a valid one: not an account either.
    if (NANP_SHAPE.test(m[0]) || text[start - 1] === '+' || overlaps(phones, start, end)) continue;
    // Two numbers of one length joined by a dash, the second larger, are a range (3000-5000 IU, 100000-250000).
    const pair = /^(\d+)-(\d+)$/.exec(m[0]);
    if (pair && pair[1].length === pair[2].length && Number(pair[2]) > Number(pair[1])) continue;
    // A card number (Luhn) is an account whatever the line calls it; other numbers unless labelled or measured.
    const card = digits.length >= 13 && digits.length <= 19 && luhn(digits);
    if (!card && (nearestLabel(text, start) === 'other' || followedByUnit(text, end))) continue;
    out.push({ start, end, kind: 'account' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// SSN

const SSN_RE = /(?<![\d-])(\d{3})-(\d{2})-(\d{4})(?![\d]|-\d)/g;

function ssnSpans(text: string, prot: () => Range[], taken: Range[]): PiiSpan[] {
  const out: PiiSpan[] = [];
  for (const m of text.matchAll(SSN_RE)) {
    const start = m.index!;
    const end = start + m[0].length;
    const [area, group, serial] = [m[1], m[2], m[3]];
    if (area === '000' || area === '666' || area[0] === '9' || group === '00' || serial === '0000') continue;
    if (overlaps(taken, start, end) || !standsAlone(text, start, end) || overlaps(prot(), start, end)) continue;
    out.push({ start, end, kind: 'ssn' });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------

/** The PII spans of `text` the options ask for, sorted and not overlapping. */
export function findPii(text: string, options: RedactOptions = ALL_REDACTIONS): PiiSpan[] {
  if (!options.emails && !options.phones && !options.account_numbers && !options.ssn) return [];
  // Protected context is found once, and only if some candidate needs it.
  let protCache: Range[] | undefined;
  const prot = () => (protCache ??= protectedRanges(text));
  const spans: PiiSpan[] = [];
  const taken = () => spans.map((s): Range => [s.start, s.end]);
  if (options.emails) spans.push(...emailSpans(text, prot));
  // Digits inside an address are the address's, redacted or not.
  const addressRanges = options.emails ? [] : emailSpans(text, prot).map((s): Range => [s.start, s.end]);
  const blocked = () => [...taken(), ...addressRanges];
  if (options.phones) spans.push(...phoneSpans(text, prot, blocked()));
  if (options.account_numbers) spans.push(...accountSpans(text, prot, blocked(), options.phones));
  if (options.ssn) spans.push(...ssnSpans(text, prot, blocked()));
  spans.sort((a, b) => a.start - b.start || b.end - a.end);
  const out: PiiSpan[] = [];
  for (const s of spans) if (!out.length || s.start >= out[out.length - 1].end) out.push(s);
  return out;
}

/** The text with each PII span replaced by its marker. */
export function redactPii(text: string, options: RedactOptions = ALL_REDACTIONS): string {
  return replaceSpans(text, findPii(text, options));
}

/** `text` with the (sorted, disjoint) spans findPii returned replaced by their markers. */
export function replaceSpans(text: string, spans: PiiSpan[]): string {
  if (spans.length === 0) return text;
  let out = '';
  let at = 0;
  for (const s of spans) {
    out += text.slice(at, s.start) + PII_MARKERS[s.kind];
    at = s.end;
  }
  return out + text.slice(at);
}
