/**
 * Calendar events and tasks as memex documents (issue 42, items 1–2).
 *
 * A VEVENT series is one `calendar_event` document: title = SUMMARY; text = when (in words, in the event's own
 * zone), where, who and how it repeats, then the description (so a search for the place or a person finds it,
 * and Ask can quote the date); content_timestamp = the series' first start (`event_start`); metadata carries
 * event_start, event_end, all_day, location, status, recurrence (in words) and the identity fields (uid,
 * sequence, last_modified). The organizer is the sender, attendees are participants (linked by email like mail).
 * Its occurrences inside the window travel beside the document (the `calendar_occurrences` table).
 *
 * A VTODO is one `reminder` document with the spec's facets has_due_date, due_date, is_completed, completed_at;
 * content_timestamp = due (`due`), else completed (`completed`), else created.
 *
 * The document's identity is the UID (external_id; source_id `ics:UID`), so the same event from another export
 * of the same calendar is the same document; SEQUENCE and LAST-MODIFIED are in its metadata, so a newer copy is
 * a new version, and the same copy again is the same submission (nothing stored).
 */
import type { IngestRequestT } from '../schemas/ingest.ts';
import type { CalEvent, CalPerson, CalTodo } from './ics.ts';
import { sha256Hex } from '../util/hash.ts';

export const CALENDAR_PROVIDER = 'ics';

export interface CalendarItem {
  document: IngestRequestT;
  /** Occurrences to index (ISO), for recurring and multi-day events. */
  occurrences?: { start: string; end: string }[];
}

export interface MapOptions {
  /** source_account_id: a name for the calendar when one person has several with clashing UIDs (default none). */
  account?: string | null;
  /** Zone for the words of floating and all-day times. */
  zone: string;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A UID as an identifier of at most 900 characters (longer ones keep a hash of the rest). */
function boundedUid(uid: string): string {
  return uid.length <= 900 ? uid : `${uid.slice(0, 800)}…${sha256Hex(uid).slice(0, 32)}`;
}

function personText(p: CalPerson): string {
  if (p.name && p.email) return `${p.name} <${p.email}>`;
  return p.name ?? p.email ?? '';
}

const PARTSTAT_WORDS: Record<string, string> = {
  accepted: 'accepted',
  declined: 'declined',
  tentative: 'tentative',
  'needs-action': 'not answered',
  delegated: 'delegated',
};

const FORMATTERS = new Map<string, { fmtDay: Intl.DateTimeFormat; fmtTime: Intl.DateTimeFormat }>();

/** Day and time formats of a zone (UTC for a zone Intl does not know), made once per zone. */
function formatters(tz: string): { fmtDay: Intl.DateTimeFormat; fmtTime: Intl.DateTimeFormat } {
  let f = FORMATTERS.get(tz);
  if (!f) {
    const make = (timeZone: string) => ({
      fmtDay: new Intl.DateTimeFormat('en-GB', { timeZone, weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' }),
      fmtTime: new Intl.DateTimeFormat('en-GB', { timeZone, hour: '2-digit', minute: '2-digit', hourCycle: 'h23' }),
    });
    try {
      f = make(tz);
    } catch {
      f = make('UTC');
    }
    FORMATTERS.set(tz, f);
  }
  return f;
}

/** "Monday 5 January 2026, 09:30–09:45 (Europe/Berlin)", or "Thursday 12 – Saturday 14 March 2026 (all day)". */
export function whenInWords(start: number, end: number, allDay: boolean, zone: string | null, fallbackZone: string): string {
  const tz = allDay ? 'UTC' : zone && zone !== 'floating' ? zone : fallbackZone;
  const { fmtDay, fmtTime } = formatters(tz);
  const day = (ms: number) => fmtDay.format(new Date(ms)).replace(',', '');
  if (allDay) {
    const lastDay = Math.max(start, end - 86_400_000);
    return lastDay === start ? `${day(start)} (all day)` : `${day(start)} – ${day(lastDay)} (all day)`;
  }
  const zoneNote = tz === 'UTC' ? 'UTC' : tz;
  if (end <= start) return `${day(start)}, ${fmtTime.format(new Date(start))} (${zoneNote})`;
  const sameDay = day(start) === day(end);
  return sameDay
    ? `${day(start)}, ${fmtTime.format(new Date(start))}–${fmtTime.format(new Date(end))} (${zoneNote})`
    : `${day(start)} ${fmtTime.format(new Date(start))} – ${day(end)} ${fmtTime.format(new Date(end))} (${zoneNote})`;
}

export function eventItem(e: CalEvent, o: MapOptions): CalendarItem {
  const uid = boundedUid(e.uid);
  const when = whenInWords(e.start, e.end, e.allDay, e.timeZone, o.zone);
  const lines: string[] = [];
  if (e.summary) lines.push(e.summary);
  lines.push(`When: ${when}`);
  if (e.recurrence) lines.push(`Repeats: ${e.recurrence.text}`);
  if (e.location) lines.push(`Where: ${e.location}`);
  if (e.organizer) lines.push(`Organizer: ${personText(e.organizer)}`);
  const attendees = e.attendees.filter((a) => !(e.organizer?.email && a.email === e.organizer.email));
  if (attendees.length) {
    lines.push(
      `Attendees: ${attendees.map((a) => `${personText(a)}${a.partstat && PARTSTAT_WORDS[a.partstat] ? ` (${PARTSTAT_WORDS[a.partstat]})` : ''}`).join(', ')}`,
    );
  }
  if (e.status === 'CANCELLED') lines.push('Status: cancelled');
  else if (e.status === 'TENTATIVE') lines.push('Status: tentative');
  if (e.categories.length) lines.push(`Categories: ${e.categories.join(', ')}`);
  if (e.url) lines.push(`Link: ${e.url}`);
  if (e.description) lines.push('', e.description);

  const people: NonNullable<IngestRequestT['people']> = [];
  const seen = new Set<string>();
  const add = (p: CalPerson, role: 'sender' | 'participant') => {
    const id = p.email;
    if (!id || seen.has(id)) return;
    seen.add(id);
    people.push({ identifier: id, identifier_type: 'email', role, display_name: p.name ?? null });
  };
  if (e.organizer) add(e.organizer, 'sender');
  for (const a of attendees) add(a, 'participant');

  const metadata: Record<string, unknown> = {
    uid: e.uid.slice(0, 2000),
    sequence: e.sequence,
    last_modified: e.lastModified,
    event_start: iso(e.start),
    event_end: iso(e.end),
    all_day: e.allDay,
    time_zone: e.timeZone,
    when,
    location: e.location,
    status: e.status ? e.status.toLowerCase() : null,
    recurrence: e.recurrence ? e.recurrence.text : null,
    ...(e.recurrence ? { rrule: e.recurrence.rrules } : {}),
    organizer: e.organizer ? { email: e.organizer.email, name: e.organizer.name } : null,
    attendees: attendees.map((a) => ({ email: a.email, name: a.name, partstat: a.partstat ?? null, role: a.role ?? null })),
    ...(e.categories.length ? { categories: e.categories } : {}),
    ...(e.url ? { url: e.url } : {}),
    ...(e.uidDerived ? { uid_derived: true } : {}),
  };

  const occurrences: { start: string; end: string }[] = [];
  if (e.recurrence) for (const x of e.occurrences) occurrences.push({ start: iso(x.start), end: iso(x.end) });
  else if (e.end - e.start > 86_400_000) occurrences.push({ start: iso(e.start), end: iso(e.end) });

  return {
    document: {
      source_type: 'calendar_event',
      source_id: `ics:${uid}`,
      source_provider: CALENDAR_PROVIDER,
      source_account_id: o.account ?? null,
      external_id: uid,
      title: e.summary ?? '(no title)',
      content: { mime_type: 'text/plain', data: lines.join('\n') },
      metadata,
      content_timestamp: iso(e.start),
      content_timestamp_type: 'event_start',
      content_created_at: e.created,
      content_modified_at: e.lastModified,
      people,
      has_location: Boolean(e.location),
    },
    occurrences,
  };
}

export function todoItem(t: CalTodo, o: MapOptions): CalendarItem {
  const uid = boundedUid(t.uid);
  const completed = t.status === 'COMPLETED' || t.completed !== null || (t.percentComplete ?? 0) >= 100;
  const lines: string[] = [];
  if (t.summary) lines.push(t.summary);
  if (t.due !== null) lines.push(`Due: ${whenInWords(t.due, t.due, t.dueAllDay, null, o.zone).replace(' (all day)', '')}`);
  if (t.completed !== null) lines.push(`Completed: ${whenInWords(t.completed, t.completed, false, null, o.zone)}`);
  else if (completed) lines.push('Completed');
  if (t.priority !== null) lines.push(`Priority: ${t.priority <= 4 ? 'high' : t.priority === 5 ? 'medium' : 'low'} (${t.priority})`);
  if (t.recurrence) lines.push(`Repeats: ${t.recurrence}`);
  if (t.location) lines.push(`Where: ${t.location}`);
  if (t.categories.length) lines.push(`Categories: ${t.categories.join(', ')}`);
  if (t.description) lines.push('', t.description);
  if (lines.length === 0) lines.push('(empty task)');

  const [ts, tsType] =
    t.due !== null
      ? [iso(t.due), 'due']
      : t.completed !== null
        ? [iso(t.completed), 'completed']
        : t.created
          ? [t.created, 'created']
          : t.lastModified
            ? [t.lastModified, 'modified']
            : [null, 'created'];
  return {
    document: {
      source_type: 'reminder',
      source_id: `ics:${uid}`,
      source_provider: CALENDAR_PROVIDER,
      source_account_id: o.account ?? null,
      external_id: uid,
      title: t.summary ?? '(no title)',
      content: { mime_type: 'text/plain', data: lines.join('\n') },
      metadata: <Record<string, unknown>>{
        uid: t.uid.slice(0, 2000),
        sequence: t.sequence,
        last_modified: t.lastModified,
        status: t.status ? t.status.toLowerCase() : null,
        priority: t.priority,
        ...(t.percentComplete !== null ? { percent_complete: t.percentComplete } : {}),
        ...(t.start !== null ? { start: iso(t.start) } : {}),
        ...(t.recurrence ? { recurrence: t.recurrence } : {}),
        ...(t.location ? { location: t.location } : {}),
        ...(t.categories.length ? { categories: t.categories } : {}),
        ...(t.uidDerived ? { uid_derived: true } : {}),
      },
      content_timestamp: ts,
      content_timestamp_type: tsType,
      content_created_at: t.created,
      content_modified_at: t.lastModified,
      has_due_date: t.due !== null,
      due_date: t.due !== null ? iso(t.due) : null,
      is_completed: completed,
      completed_at: t.completed !== null ? iso(t.completed) : null,
      has_location: Boolean(t.location),
    },
  };
}
