/**
 * ICS (RFC 5545) reader: a calendar file as events (VEVENT series) and tasks (VTODO), with their times as UTC
 * instants and a recurring series' occurrences expanded over a bounded window.
 *
 * Parsing, line unfolding, parameters, escaped text, VTIMEZONE rules and the recurrence arithmetic (RRULE with
 * every BYxxx part, RDATE, EXDATE, RECURRENCE-ID overrides) are ical.js's (Mozilla's, the code Thunderbird
 * uses; already a dependency for vCards). What this module adds: TZIDs the file does not define (IANA names,
 * Windows names, Mozilla prefixes) resolved through Intl (zones.ts), floating times in the configured zone,
 * all-day dates, grouping of a series with its overrides and of repeated UIDs (the highest SEQUENCE, then
 * LAST-MODIFIED, wins), and errors that name the component instead of failing the file: a file ical.js cannot
 * read as a whole is read component by component, and a component that still fails is reported and skipped.
 */
import ICAL from 'ical.js';
import { ianaZone, wallToUtc } from './zones.ts';

type Comp = InstanceType<typeof ICAL.Component>;
type Time = InstanceType<typeof ICAL.Time>;

/** Most occurrences kept for one series inside the window (a minutely rule would otherwise be unbounded). */
export const MAX_OCCURRENCES_PER_SERIES = 5000;
/** Most recurrence steps walked for one series (a daily rule since 1970 is ~20,000). */
const MAX_ITERATIONS = 60_000;

export interface CalPerson {
  email: string | null;
  name: string | null;
  /** ATTENDEE's ROLE (REQ-PARTICIPANT, OPT-PARTICIPANT, CHAIR…) and PARTSTAT, lower-cased. */
  role?: string | null;
  partstat?: string | null;
}

export interface Occurrence {
  /** Epoch milliseconds. */
  start: number;
  end: number;
}

export interface CalRecurrence {
  rrules: string[];
  rdates: number;
  exdates: number;
  /** Occurrences changed by a RECURRENCE-ID override (moved, retitled or cancelled). */
  overrides: number;
  cancelled: number;
  /** The rule in words: "every week on Monday and Wednesday, until 1 March 2027". */
  text: string;
}

export interface CalEvent {
  kind: 'event';
  uid: string;
  /** True when the file had no UID and one was derived from the event's start and summary. */
  uidDerived: boolean;
  sequence: number;
  lastModified: string | null;
  created: string | null;
  summary: string | null;
  description: string | null;
  location: string | null;
  url: string | null;
  categories: string[];
  status: string | null;
  /** Epoch milliseconds; an all-day event starts at 00:00 UTC of its date. */
  start: number;
  end: number;
  allDay: boolean;
  /** The zone its times were read in (IANA or the file's TZID), null for UTC or all-day. */
  timeZone: string | null;
  organizer: CalPerson | null;
  attendees: CalPerson[];
  recurrence: CalRecurrence | null;
  /** A recurring series' occurrences inside the window (first ones first), cancelled ones left out. */
  occurrences: Occurrence[];
  /** More occurrences fell in the window than MAX_OCCURRENCES_PER_SERIES. */
  occurrencesTruncated: boolean;
  /** Where the series starts in the file (1-based line). */
  line: number;
}

export interface CalTodo {
  kind: 'task';
  uid: string;
  uidDerived: boolean;
  sequence: number;
  lastModified: string | null;
  created: string | null;
  summary: string | null;
  description: string | null;
  location: string | null;
  categories: string[];
  status: string | null;
  /** 1 (highest) … 9 (lowest); null when not set (0 means undefined in RFC 5545). */
  priority: number | null;
  percentComplete: number | null;
  start: number | null;
  due: number | null;
  dueAllDay: boolean;
  completed: number | null;
  recurrence: string | null;
  line: number;
}

export interface CalProblem {
  /** VEVENT, VTODO, VTIMEZONE or FILE. */
  component: string;
  uid: string | null;
  line: number | null;
  reason: string;
}

export interface CalendarFile {
  name: string | null;
  events: CalEvent[];
  todos: CalTodo[];
  problems: CalProblem[];
  /** Components of other kinds (VJOURNAL, VFREEBUSY) that were not read. */
  ignored: number;
}

export interface ReadOptions {
  /** Zone of floating times and of TZIDs nobody knows (IANA name). */
  zone: string;
  /** The occurrence window, epoch milliseconds. */
  windowStart: number;
  windowEnd: number;
}

/** Default window: two years back to one year ahead of `now`. */
export function defaultWindow(now = Date.now(), back = { years: 2 }, ahead = { years: 1 }): { windowStart: number; windowEnd: number } {
  const d = new Date(now);
  const start = Date.UTC(d.getUTCFullYear() - back.years, d.getUTCMonth(), d.getUTCDate());
  const end = Date.UTC(d.getUTCFullYear() + ahead.years, d.getUTCMonth(), d.getUTCDate() + 1);
  return { windowStart: start, windowEnd: end };
}

// ---------------------------------------------------------------------------------------------------------
// Lines and blocks (for the component-by-component fallback and line numbers)

interface Block {
  name: string;
  /** 1-based line of its BEGIN. */
  line: number;
  text: string;
  uid: string | null;
}

/** Top-level components (children of VCALENDAR) with their raw text, and the calendar's name. */
function splitBlocks(text: string): { blocks: Block[]; name: string | null; sawCalendar: boolean } {
  const lines = text.split(/\r\n|\n|\r/);
  const blocks: Block[] = [];
  let depth = 0;
  let current: { name: string; line: number; lines: string[]; uid: string | null } | null = null;
  let name: string | null = null;
  let sawCalendar = false;
  lines.forEach((raw, i) => {
    const upper = raw.toUpperCase();
    if (/^BEGIN:/.test(upper)) {
      const comp = upper.slice(6).trim();
      depth++;
      if (comp === 'VCALENDAR') sawCalendar = true;
      if (depth === 2 || (depth === 1 && comp !== 'VCALENDAR')) {
        current = { name: comp, line: i + 1, lines: [], uid: null };
      }
    }
    if (current) {
      current.lines.push(raw);
      if (depth === (current.lines.length === 1 ? depth : depth) && /^UID[;:]/.test(upper) && current.uid === null) {
        current.uid = raw.slice(raw.indexOf(':') + 1).trim() || null;
      }
    } else if (depth === 1 && /^X-WR-CALNAME[;:]/.test(upper)) {
      name = raw.slice(raw.indexOf(':') + 1).trim() || null;
    }
    if (/^END:/.test(upper)) {
      const endsBlock = current !== null && (depth === 2 || (depth === 1 && !sawCalendar));
      if (endsBlock && current) {
        const c = current as { name: string; line: number; lines: string[]; uid: string | null };
        blocks.push({ name: c.name, line: c.line, text: c.lines.join('\r\n'), uid: c.uid });
        current = null;
      }
      depth = Math.max(0, depth - 1);
    }
  });
  const open = current as { name: string; line: number; lines: string[]; uid: string | null } | null;
  if (open) blocks.push({ name: open.name, line: open.line, text: open.lines.join('\r\n') + `\r\nEND:${open.name}`, uid: open.uid });
  return { blocks, name, sawCalendar };
}

// ---------------------------------------------------------------------------------------------------------
// Values

function unescapeText(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  const s = Array.isArray(v) ? v.map(String).join(', ') : String(v);
  const t = s.replace(/\r\n/g, '\n').trim();
  return t === '' ? null : t;
}

function textOf(c: Comp, name: string): string | null {
  const p = c.getFirstProperty(name);
  if (!p) return null;
  return unescapeText(p.getFirstValue());
}

function allValues(c: Comp, name: string): unknown[] {
  return c.getAllProperties(name).flatMap((p) => p.getValues());
}

const fileZoneOffsets = new WeakMap<object, Map<number, number>>();

/** The instant a Time names: file zones by ical.js, other TZIDs and floating times through Intl, dates at 00:00 UTC. */
export function instantOf(t: Time, floatingZone: string): number {
  if (t.isDate) return Date.UTC(t.year, t.month - 1, t.day);
  const z = t.zone;
  const wall = { year: t.year, month: t.month, day: t.day, hour: t.hour, minute: t.minute, second: t.second };
  if (z === ICAL.Timezone.utcTimezone) return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
  if (z && z !== ICAL.Timezone.localTimezone && (z as { tzid?: string }).tzid) {
    // A VTIMEZONE of the file. One without any rule (an empty definition) reads as its IANA name or floating.
    const comp = (z as { component?: Comp }).component;
    if (comp && comp.getAllSubcomponents().length > 0) {
      // The zone's offset for this local hour, cached: ical.js's lookup is most of the time a big calendar takes,
      // and offsets change on the hour (the hour that repeats in autumn reads as ical.js reads it, the first time).
      let offsets = fileZoneOffsets.get(z);
      if (!offsets) fileZoneOffsets.set(z, (offsets = new Map()));
      const key = ((t.year * 13 + t.month) * 32 + t.day) * 24 + t.hour;
      let off = offsets.get(key);
      if (off === undefined) {
        off = z.utcOffset(t);
        offsets.set(key, off);
      }
      return Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second) - off * 1000;
    }
    return wallToUtc(wall, ianaZone((z as { tzid: string }).tzid) ?? floatingZone);
  }
  const tzid = (t as { timezone?: string }).timezone;
  return wallToUtc(wall, (tzid && ianaZone(tzid)) || floatingZone);
}

function zoneName(t: Time | null): string | null {
  if (!t || t.isDate) return null;
  if (t.zone === ICAL.Timezone.utcTimezone) return null;
  const fileZone = t.zone && t.zone !== ICAL.Timezone.localTimezone ? (t.zone as { tzid?: string }).tzid : undefined;
  const tzid = fileZone ?? (t as { timezone?: string }).timezone;
  if (!tzid || tzid === 'floating') return 'floating';
  return ianaZone(tzid) ?? tzid;
}

function timeOf(c: Comp, name: string): Time | null {
  const p = c.getFirstProperty(name);
  if (!p) return null;
  const v = p.getFirstValue();
  return v instanceof ICAL.Time ? v : null;
}

function isoOf(c: Comp, name: string, zone: string): string | null {
  const t = timeOf(c, name);
  if (!t) return null;
  const ms = instantOf(t, zone);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : null;
}

function personOf(p: InstanceType<typeof ICAL.Property>): CalPerson {
  const raw = String(p.getFirstValue() ?? '').trim();
  const m = /^mailto:(.+)$/i.exec(raw);
  const email = m ? decodeURIComponent(m[1]).trim().toLowerCase() : /^[^@\s:]+@[^@\s]+$/.test(raw) ? raw.toLowerCase() : null;
  const cn = p.getParameter('cn');
  const name = unescapeText(Array.isArray(cn) ? cn[0] : cn)?.replace(/^"|"$/g, '') ?? null;
  const role = p.getParameter('role');
  const partstat = p.getParameter('partstat');
  return {
    email,
    name: name && name.toLowerCase() !== email ? name : null,
    role: role ? String(role).toLowerCase() : null,
    partstat: partstat ? String(partstat).toLowerCase() : null,
  };
}

function categoriesOf(c: Comp): string[] {
  return [...new Set(allValues(c, 'categories').map((v) => String(v).trim()).filter(Boolean))];
}

function statusOf(c: Comp): string | null {
  const s = textOf(c, 'status');
  return s ? s.toUpperCase() : null;
}

// ---------------------------------------------------------------------------------------------------------
// Recurrence in words

const WEEKDAYS: Record<string, string> = { MO: 'Monday', TU: 'Tuesday', WE: 'Wednesday', TH: 'Thursday', FR: 'Friday', SA: 'Saturday', SU: 'Sunday' };
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const UNITS: Record<string, [string, string]> = {
  SECONDLY: ['second', 'seconds'],
  MINUTELY: ['minute', 'minutes'],
  HOURLY: ['hour', 'hours'],
  DAILY: ['day', 'days'],
  WEEKLY: ['week', 'weeks'],
  MONTHLY: ['month', 'months'],
  YEARLY: ['year', 'years'],
};

const ordinal = (n: number): string => {
  if (n === -1) return 'last';
  if (n < 0) return `${ordinal(-n)} from last`;
  const s = n % 100 >= 11 && n % 100 <= 13 ? 'th' : (['th', 'st', 'nd', 'rd'][n % 10] ?? 'th');
  return `${n}${s}`;
};

const list = (xs: string[]): string => (xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} and ${xs[xs.length - 1]}`);

/** One RRULE in English words, e.g. "every 2 weeks on Monday and Thursday, 10 times". */
export function ruleInWords(rule: InstanceType<typeof ICAL.Recur>, zone = 'UTC'): string {
  const freq = String(rule.freq ?? '').toUpperCase();
  const [one, many] = UNITS[freq] ?? ['time', 'times'];
  const interval = rule.interval && rule.interval > 1 ? rule.interval : 1;
  const parts: string[] = [interval === 1 ? `every ${one}` : `every ${interval} ${many}`];
  const parts2 = (rule.parts ?? {}) as Record<string, unknown[]>;
  const byday = (parts2.BYDAY ?? []).map(String);
  if (byday.length) {
    const days = byday.map((d) => {
      const m = /^([+-]?\d+)?([A-Z]{2})$/.exec(d.toUpperCase());
      if (!m) return d;
      const name = WEEKDAYS[m[2]] ?? m[2];
      return m[1] ? `the ${ordinal(Number(m[1]))} ${name}` : name;
    });
    if (freq === 'WEEKLY' && byday.length === 5 && ['MO', 'TU', 'WE', 'TH', 'FR'].every((d) => byday.includes(d))) parts.push('on weekdays');
    else parts.push(`on ${list(days)}`);
  }
  const bymonthday = (parts2.BYMONTHDAY ?? []).map(Number);
  if (bymonthday.length) parts.push(`on the ${list(bymonthday.map(ordinal))}`);
  const bymonth = (parts2.BYMONTH ?? []).map(Number);
  if (bymonth.length) parts.push(`in ${list(bymonth.map((m) => MONTHS[m - 1] ?? String(m)))}`);
  const bysetpos = (parts2.BYSETPOS ?? []).map(Number);
  if (bysetpos.length) parts.push(`(the ${list(bysetpos.map(ordinal))} of those)`);
  let text = parts.join(' ');
  if (rule.count) text += `, ${rule.count} ${rule.count === 1 ? 'time' : 'times'}`;
  else if (rule.until) text += `, until ${dateInWords(instantOf(rule.until, zone), rule.until.isDate)}`;
  return text;
}

/** "1 March 2027" (or with the UTC time for a moment). */
export function dateInWords(ms: number, dateOnly = true): string {
  const d = new Date(ms);
  const day = `${d.getUTCDate()} ${MONTHS[d.getUTCMonth()]} ${d.getUTCFullYear()}`;
  return dateOnly ? day : `${day} ${d.toISOString().slice(11, 16)} UTC`;
}

// ---------------------------------------------------------------------------------------------------------
// Components

interface Candidate {
  comp: Comp;
  line: number;
}

const seqOf = (c: Comp): number => {
  const v = Number(c.getFirstPropertyValue('sequence'));
  return Number.isFinite(v) ? v : 0;
};

const modifiedOf = (c: Comp): string => String(c.getFirstProperty('last-modified')?.getFirstValue()?.toString() ?? '');

/** The newer of two copies of the same component: higher SEQUENCE, then later LAST-MODIFIED, then the later one in the file. */
function newer(a: Candidate, b: Candidate): Candidate {
  const sa = seqOf(a.comp);
  const sb = seqOf(b.comp);
  if (sa !== sb) return sa > sb ? a : b;
  return modifiedOf(b.comp) >= modifiedOf(a.comp) ? b : a;
}

function derivedUid(c: Comp, kind: string): string {
  const key = [kind, c.getFirstProperty('dtstart')?.toICALString() ?? '', c.getFirstProperty('due')?.toICALString() ?? '', textOf(c, 'summary') ?? ''].join('|');
  let h = 0x811c9dc5;
  for (let i = 0; i < key.length; i++) h = Math.imul(h ^ key.charCodeAt(i), 0x01000193) >>> 0;
  let h2 = 0x12345678;
  for (let i = key.length - 1; i >= 0; i--) h2 = Math.imul(h2 ^ key.charCodeAt(i), 0x01000193) >>> 0;
  return `memex-derived-${h.toString(16).padStart(8, '0')}${h2.toString(16).padStart(8, '0')}`;
}

function readEvent(master: Candidate, overrides: Candidate[], opts: ReadOptions, uid: string, uidDerived: boolean): CalEvent {
  const c = master.comp;
  const dtstart = timeOf(c, 'dtstart');
  if (!dtstart) throw new Error('no DTSTART (a VEVENT needs a start)');
  const zone = opts.zone;
  const allDay = dtstart.isDate;
  const start = instantOf(dtstart, zone);
  if (!Number.isFinite(start)) throw new Error('DTSTART is not a date');
  const dtend = timeOf(c, 'dtend');
  const durationProp = c.getFirstPropertyValue('duration');
  let end: number;
  if (dtend) end = instantOf(dtend, zone);
  else if (durationProp instanceof ICAL.Duration) end = start + durationProp.toSeconds() * 1000;
  else end = allDay ? start + 86_400_000 : start; // RFC 5545 3.6.1: a date lasts a day, a date-time is a moment
  if (!Number.isFinite(end) || end < start) end = allDay ? start + 86_400_000 : start;
  const durationMs = end - start;

  const organizerProp = c.getFirstProperty('organizer');
  const organizer = organizerProp ? personOf(organizerProp) : null;
  const attendees = c.getAllProperties('attendee').map(personOf);

  const rrules = c.getAllProperties('rrule').map((p) => p.getFirstValue() as InstanceType<typeof ICAL.Recur>);
  const rdates = c.getAllProperties('rdate').flatMap((p) => p.getValues()).length;
  const exdates = c.getAllProperties('exdate').flatMap((p) => p.getValues()).length;
  let recurrence: CalRecurrence | null = null;
  const occurrences: Occurrence[] = [];
  let truncated = false;
  if (rrules.length > 0 || rdates > 0) {
    const event = new ICAL.Event(c, { exceptions: [] });
    let cancelled = 0;
    for (const o of overrides) {
      try {
        event.relateException(o.comp);
        if (statusOf(o.comp) === 'CANCELLED') cancelled++;
      } catch {
        // An override ical.js cannot relate (no RECURRENCE-ID value) is left out.
      }
    }
    const it = event.iterator();
    let steps = 0;
    for (let next = it.next(); next; next = it.next()) {
      if (++steps > MAX_ITERATIONS) {
        truncated = true;
        break;
      }
      const at = instantOf(next, zone);
      if (at >= opts.windowEnd) break;
      if (at + Math.max(durationMs, 0) < opts.windowStart && at < opts.windowStart) continue;
      let s = at;
      let e = at + durationMs;
      if (overrides.length > 0) {
        const details = event.getOccurrenceDetails(next);
        const item = details.item as InstanceType<typeof ICAL.Event>;
        if (item !== event) {
          if (statusOf(item.component) === 'CANCELLED') continue;
          s = instantOf(details.startDate, zone);
          e = details.endDate ? instantOf(details.endDate, zone) : s + durationMs;
        }
      }
      if (occurrences.length >= MAX_OCCURRENCES_PER_SERIES) {
        truncated = true;
        break;
      }
      occurrences.push({ start: s, end: Math.max(e, s) });
    }
    const words = rrules.map((r) => ruleInWords(r, zone));
    let text = words.length ? words.join('; and ') : 'on extra dates';
    if (rdates && rrules.length) text += `, plus ${rdates} extra ${rdates === 1 ? 'date' : 'dates'}`;
    else if (rdates) text = `on ${rdates} ${rdates === 1 ? 'date' : 'dates'}`;
    if (exdates) text += `, except ${exdates} ${exdates === 1 ? 'date' : 'dates'}`;
    const moved = overrides.length - cancelled;
    if (moved > 0) text += `; ${moved} ${moved === 1 ? 'occurrence' : 'occurrences'} changed`;
    if (cancelled > 0) text += `; ${cancelled} cancelled`;
    recurrence = { rrules: rrules.map((r) => r.toString()), rdates, exdates, overrides: overrides.length, cancelled, text };
  }

  return {
    kind: 'event',
    uid,
    uidDerived,
    sequence: seqOf(c),
    lastModified: isoOf(c, 'last-modified', zone),
    created: isoOf(c, 'created', zone),
    summary: textOf(c, 'summary'),
    description: textOf(c, 'description'),
    location: textOf(c, 'location'),
    url: textOf(c, 'url'),
    categories: categoriesOf(c),
    status: statusOf(c),
    start,
    end,
    allDay,
    timeZone: zoneName(dtstart) === 'floating' ? zone : zoneName(dtstart),
    organizer: organizer && (organizer.email || organizer.name) ? organizer : null,
    attendees: attendees.filter((a) => a.email || a.name),
    recurrence,
    occurrences,
    occurrencesTruncated: truncated,
    line: master.line,
  };
}

function readTodo(cand: Candidate, opts: ReadOptions, uid: string, uidDerived: boolean): CalTodo {
  const c = cand.comp;
  const zone = opts.zone;
  const due = timeOf(c, 'due');
  const dtstart = timeOf(c, 'dtstart');
  let dueMs = due ? instantOf(due, zone) : null;
  if (dueMs === null && dtstart) {
    const dur = c.getFirstPropertyValue('duration');
    if (dur instanceof ICAL.Duration) dueMs = instantOf(dtstart, zone) + dur.toSeconds() * 1000;
  }
  const completed = timeOf(c, 'completed');
  const priorityRaw = Number(c.getFirstPropertyValue('priority'));
  const percent = Number(c.getFirstPropertyValue('percent-complete'));
  const rrule = c.getFirstPropertyValue('rrule') as InstanceType<typeof ICAL.Recur> | null;
  return {
    kind: 'task',
    uid,
    uidDerived,
    sequence: seqOf(c),
    lastModified: isoOf(c, 'last-modified', zone),
    created: isoOf(c, 'created', zone) ?? isoOf(c, 'dtstamp', zone),
    summary: textOf(c, 'summary'),
    description: textOf(c, 'description'),
    location: textOf(c, 'location'),
    categories: categoriesOf(c),
    status: statusOf(c),
    priority: Number.isFinite(priorityRaw) && priorityRaw >= 1 && priorityRaw <= 9 ? priorityRaw : null,
    percentComplete: Number.isFinite(percent) && c.hasProperty('percent-complete') ? percent : null,
    start: dtstart ? instantOf(dtstart, zone) : null,
    due: dueMs !== null && Number.isFinite(dueMs) ? dueMs : null,
    dueAllDay: due?.isDate ?? false,
    completed: completed ? instantOf(completed, zone) : null,
    recurrence: rrule ? ruleInWords(rrule, zone) : null,
    line: cand.line,
  };
}

/** The components of a parsed VCALENDAR with the line each starts on (matched to the blocks by order). */
function componentsWithLines(root: Comp, blocks: Block[]): Candidate[] {
  const out: Candidate[] = [];
  const subs = root.getAllSubcomponents();
  // ical.js keeps the file's order; the blocks are the same components in the same order.
  const byName = new Map<string, Block[]>();
  for (const b of blocks) {
    const k = b.name.toLowerCase();
    if (!byName.has(k)) byName.set(k, []);
    byName.get(k)!.push(b);
  }
  const taken = new Map<string, number>();
  for (const s of subs) {
    const k = s.name;
    const i = taken.get(k) ?? 0;
    taken.set(k, i + 1);
    out.push({ comp: s, line: byName.get(k)?.[i]?.line ?? 0 });
  }
  return out;
}

/** Reads one ICS file's text. Never throws: what cannot be read is in `problems`. */
export function readIcs(text: string, opts: ReadOptions): CalendarFile {
  const problems: CalProblem[] = [];
  const clean = text.replace(/^\uFEFF/, '');
  const { blocks, name, sawCalendar } = splitBlocks(clean);
  const result: CalendarFile = { name, events: [], todos: [], problems, ignored: 0 };
  if (!sawCalendar) {
    problems.push({ component: 'FILE', uid: null, line: null, reason: 'not an iCalendar file (no BEGIN:VCALENDAR)' });
    return result;
  }
  let candidates: Candidate[] = [];
  try {
    const jcal = ICAL.parse(clean);
    const roots = (Array.isArray(jcal) && typeof jcal[0] === 'string' ? [jcal] : (jcal as unknown[])) as unknown[];
    for (const r of roots) {
      const root = new ICAL.Component(r as any);
      if (root.name !== 'vcalendar') continue;
      candidates.push(...componentsWithLines(root, blocks));
    }
  } catch {
    // Component by component: each inside a calendar with the file's readable VTIMEZONEs.
    candidates = [];
    const zones: string[] = [];
    for (const b of blocks.filter((x) => x.name === 'VTIMEZONE')) {
      try {
        ICAL.parse(`BEGIN:VCALENDAR\r\n${b.text}\r\nEND:VCALENDAR`);
        zones.push(b.text);
      } catch (err) {
        problems.push({ component: 'VTIMEZONE', uid: null, line: b.line, reason: `unreadable (${shortReason(err)}); its times are read by name` });
      }
    }
    const zoneText = zones.join('\r\n');
    for (const b of blocks) {
      if (b.name === 'VTIMEZONE') continue;
      try {
        const root = new ICAL.Component(ICAL.parse(`BEGIN:VCALENDAR\r\n${zoneText}\r\n${b.text}\r\nEND:VCALENDAR`) as any);
        const comp = root.getAllSubcomponents().find((s) => s.name === b.name.toLowerCase());
        if (comp) candidates.push({ comp, line: b.line });
      } catch (err) {
        problems.push({ component: b.name, uid: b.uid, line: b.line, reason: `unreadable (${shortReason(err)})` });
      }
    }
  }

  // Group: events by UID into a master and its overrides; repeated copies keep the newest.
  const masters = new Map<string, Candidate>();
  const overrides = new Map<string, Map<string, Candidate>>();
  const todos = new Map<string, Candidate>();
  const order: { kind: 'event' | 'task'; uid: string; derived: boolean }[] = [];
  for (const cand of candidates) {
    const c = cand.comp;
    if (c.name === 'vtimezone') continue;
    if (c.name !== 'vevent' && c.name !== 'vtodo') {
      result.ignored++;
      continue;
    }
    let uid: string;
    let derived = false;
    try {
      uid = textOf(c, 'uid') ?? '';
      if (!uid) {
        uid = derivedUid(c, c.name);
        derived = true;
      }
    } catch (err) {
      problems.push({ component: c.name.toUpperCase(), uid: null, line: cand.line, reason: `unreadable UID (${shortReason(err)})` });
      continue;
    }
    if (c.name === 'vtodo') {
      const had = todos.get(uid);
      if (!had) order.push({ kind: 'task', uid, derived });
      todos.set(uid, had ? newer(had, cand) : cand);
      continue;
    }
    let rid: string | null = null;
    try {
      rid = c.getFirstProperty('recurrence-id')?.getFirstValue()?.toString() ?? null;
    } catch (err) {
      problems.push({ component: 'VEVENT', uid, line: cand.line, reason: `unreadable RECURRENCE-ID (${shortReason(err)})` });
      continue;
    }
    if (rid) {
      if (!overrides.has(uid)) overrides.set(uid, new Map());
      const m = overrides.get(uid)!;
      const had = m.get(rid);
      m.set(rid, had ? newer(had, cand) : cand);
      continue;
    }
    const had = masters.get(uid);
    if (!had) order.push({ kind: 'event', uid, derived });
    masters.set(uid, had ? newer(had, cand) : cand);
  }
  // An override whose series is not in the file (an invitation to one occurrence) is an event of its own.
  for (const [uid, m] of overrides) {
    if (masters.has(uid)) continue;
    const first = [...m.values()][0];
    masters.set(uid, first);
    order.push({ kind: 'event', uid, derived: false });
    m.delete([...m.keys()][0]);
  }
  for (const o of order) {
    if (o.kind === 'task') {
      const cand = todos.get(o.uid)!;
      try {
        result.todos.push(readTodo(cand, opts, o.uid, o.derived));
      } catch (err) {
        problems.push({ component: 'VTODO', uid: o.derived ? null : o.uid, line: cand.line, reason: shortReason(err) });
      }
      continue;
    }
    const cand = masters.get(o.uid)!;
    try {
      result.events.push(readEvent(cand, [...(overrides.get(o.uid)?.values() ?? [])], opts, o.uid, o.derived));
    } catch (err) {
      problems.push({ component: 'VEVENT', uid: o.derived ? null : o.uid, line: cand.line, reason: shortReason(err) });
    }
  }
  return result;
}

function shortReason(err: unknown): string {
  const m = err instanceof Error ? err.message : String(err);
  return m.replace(/\s+/g, ' ').slice(0, 200);
}
