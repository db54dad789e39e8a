/**
 * The ICS reader (src/calendar/ics.ts) on files shaped like Google, Outlook and Thunderbird exports and on
 * broken ones, and the mapping of what it reads to documents (src/calendar/documents.ts).
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { readIcs, type CalEvent, type ReadOptions } from '../../src/calendar/ics.ts';
import { eventItem, todoItem } from '../../src/calendar/documents.ts';
import { wallToUtc, ianaZone } from '../../src/calendar/zones.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const fixture = (name: string) => fs.readFileSync(path.join(FIX, name), 'utf8');
const WINDOW: ReadOptions = { zone: 'Europe/Berlin', windowStart: Date.UTC(2024, 0, 1), windowEnd: Date.UTC(2027, 0, 1) };
const iso = (ms: number) => new Date(ms).toISOString();
const starts = (e: CalEvent) => e.occurrences.map((o) => iso(o.start));

/** A minimal calendar around the given lines. */
const cal = (...lines: string[]) => ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//test//EN', ...lines, 'END:VCALENDAR'].join('\r\n');
const event = (...lines: string[]) => ['BEGIN:VEVENT', 'DTSTAMP:20260101T000000Z', ...lines, 'END:VEVENT'].join('\r\n');

describe('Google Calendar export', () => {
  const file = readIcs(fixture('google.ics'), WINDOW);
  const standup = file.events.find((e) => e.summary === 'Team stand-up')!;

  it('reads every event with no problem, and the calendar name', () => {
    expect(file.problems).toEqual([]);
    expect(file.name).toBe('Anna Schmidt');
    expect(file.events.map((e) => e.summary)).toEqual(['Team stand-up', 'Ski trip', 'Dentist (Dr. Weber)', "Bob's birthday"]);
  });

  it('reads times in the file’s VTIMEZONE, across the daylight-saving change', () => {
    expect(iso(standup.start)).toBe('2026-01-05T08:30:00.000Z');
    expect(iso(standup.end)).toBe('2026-01-05T08:45:00.000Z');
    expect(standup.timeZone).toBe('Europe/Berlin');
    // 30 March is after the change on 29 March: 09:30 in Berlin is 07:30 UTC.
    expect(starts(standup)).toContain('2026-03-30T07:30:00.000Z');
  });

  it('expands a weekly BYDAY rule until UNTIL, honouring EXDATE and RECURRENCE-ID overrides', () => {
    const s = starts(standup);
    expect(s[0]).toBe('2026-01-05T08:30:00.000Z');
    expect(s).not.toContain('2026-01-07T08:30:00.000Z'); // EXDATE
    expect(s).not.toContain('2026-01-14T08:30:00.000Z'); // moved …
    expect(s).toContain('2026-01-14T10:00:00.000Z'); // … to 11:00 Berlin
    expect(s).not.toContain('2026-01-19T08:30:00.000Z'); // cancelled occurrence
    expect(s.every((x) => x < '2026-04-01')).toBe(true);
    // 13 Mondays and 12 Wednesdays from 5 January to 31 March, less the excluded and the cancelled one.
    expect(s).toHaveLength(23);
    expect(standup.recurrence!.text).toBe(
      'every week on Monday and Wednesday, until 1 April 2026 00:00 UTC, except 1 date; 1 occurrence changed; 1 cancelled',
    );
  });

  it('unescapes text and unfolds folded lines', () => {
    expect(standup.description).toBe('Weekly stand-up, ten minutes.\nBring your blockers; nothing else.');
    expect(standup.location).toBe('Room 4.12, Marienplatz 1, München');
    expect(standup.attendees.map((a) => a.name)).toContain('Bob Jones');
    expect(standup.organizer).toEqual({ email: 'anna.schmidt@example.org', name: 'Anna Schmidt', role: null, partstat: null });
    expect(standup.sequence).toBe(2);
    expect(standup.lastModified).toBe('2025-12-21T12:00:00.000Z');
  });

  it('reads all-day events at 00:00 UTC of their dates, CANCELLED as a status', () => {
    const ski = file.events.find((e) => e.summary === 'Ski trip')!;
    expect(ski.allDay).toBe(true);
    expect([iso(ski.start), iso(ski.end)]).toEqual(['2026-03-12T00:00:00.000Z', '2026-03-15T00:00:00.000Z']);
    expect(file.events.find((e) => e.summary?.startsWith('Dentist'))!.status).toBe('CANCELLED');
  });

  it('keeps only the occurrences inside the window of a series that began long ago', () => {
    const bday = file.events.find((e) => e.summary === "Bob's birthday")!;
    expect(iso(bday.start)).toBe('1980-04-16T00:00:00.000Z');
    expect(starts(bday)).toEqual(['2024-04-16T00:00:00.000Z', '2025-04-16T00:00:00.000Z', '2026-04-16T00:00:00.000Z']);
  });
});

describe('Outlook export', () => {
  const file = readIcs(fixture('outlook.ics'), WINDOW);

  it('reads a Windows-named VTIMEZONE, a quoted TZID and a monthly "2nd Tuesday" rule with COUNT', () => {
    const fin = file.events.find((e) => e.summary === 'Finance review')!;
    expect(file.problems).toEqual([]);
    expect(iso(fin.start)).toBe('2026-02-10T14:00:00.000Z');
    expect(starts(fin)).toEqual([
      '2026-02-10T14:00:00.000Z',
      '2026-03-10T14:00:00.000Z',
      '2026-04-14T13:00:00.000Z',
      '2026-05-12T13:00:00.000Z',
      '2026-06-09T13:00:00.000Z',
      '2026-07-14T13:00:00.000Z',
    ]);
    expect(fin.recurrence!.text).toBe('every month on the 2nd Tuesday, 6 times');
    expect(fin.organizer?.email).toBe('carla.diaz@contoso.com');
  });

  it('resolves a Windows zone name the file does not define', () => {
    const call = file.events.find((e) => e.summary === 'Call with Seattle office')!;
    expect(iso(call.start)).toBe('2026-03-05T17:00:00.000Z');
    expect(call.timeZone).toBe('America/Los_Angeles');
  });
});

describe('Thunderbird export', () => {
  const file = readIcs(fixture('thunderbird.ics'), WINDOW);

  it('expands BYMONTHDAY with an RDATE and a DURATION', () => {
    const rent = file.events.find((e) => e.summary === 'Pay rent')!;
    expect(rent.end - rent.start).toBe(15 * 60_000);
    const s = starts(rent);
    expect(s.slice(0, 4)).toEqual(['2026-01-01T13:00:00.000Z', '2026-02-01T13:00:00.000Z', '2026-03-01T13:00:00.000Z', '2026-04-01T12:00:00.000Z']);
    expect(s).toContain('2026-06-15T12:00:00.000Z');
    expect(rent.recurrence!.text).toBe('every month on the 1st, plus 1 extra date');
  });

  it('reads floating times in the configured zone', () => {
    const lunch = (zone: string) => readIcs(fixture('thunderbird.ics'), { ...WINDOW, zone }).events.find((e) => e.summary === 'Lunch with Maria')!;
    expect(iso(lunch('Europe/Berlin').start)).toBe('2026-03-20T11:30:00.000Z');
    expect(iso(lunch('America/New_York').start)).toBe('2026-03-20T16:30:00.000Z');
  });

  it('reads tasks: due dates, completion and priority', () => {
    const [passport, taxes, cello] = file.todos;
    expect(passport).toMatchObject({ summary: 'Renew passport', priority: 1, status: 'NEEDS-ACTION', completed: null, dueAllDay: true });
    expect(iso(passport.due!)).toBe('2026-04-30T00:00:00.000Z');
    expect(iso(taxes.due!)).toBe('2026-04-15T21:00:00.000Z');
    expect(iso(taxes.completed!)).toBe('2026-04-10T14:00:00.000Z');
    expect(cello).toMatchObject({ summary: 'Someday: learn the cello', due: null, priority: null });
  });
});

describe('broken files', () => {
  it('reads what it can and names each component it could not, by line and UID', () => {
    const file = readIcs(fixture('broken.ics'), WINDOW);
    expect(file.events.map((e) => e.uid)).toEqual(['good-1@example', 'good-2@example']);
    expect(file.problems.map((p) => [p.component, p.uid, p.line])).toEqual([
      ['VEVENT', 'no-start@example', 10],
      ['VEVENT', 'bad-date@example', 14],
    ]);
    expect(file.problems[0].reason).toContain('no DTSTART');
    // The task was never closed; it is read as far as it goes.
    expect(file.todos.map((t) => t.summary)).toEqual(['Never ends']);
  });

  it('never throws, whatever the text', () => {
    for (const text of ['', 'hello', '\u0000\u0001garbage', 'BEGIN:VCALENDAR', 'BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\n:::\r\nEND:VCALENDAR', 'BEGIN:VCALENDAR\nBEGIN:VEVENT\nDTSTART:x\nRRULE:FREQ=NEVER\nEND:VEVENT\nEND:VCALENDAR']) {
      expect(() => readIcs(text, WINDOW)).not.toThrow();
    }
    expect(readIcs('hello', WINDOW).problems[0]).toMatchObject({ component: 'FILE', reason: expect.stringContaining('not an iCalendar file') });
  });

  it('reads a VEVENT whose RRULE ical.js refuses as a problem of that event only', () => {
    const file = readIcs(cal(event('UID:a', 'DTSTART:20260101T100000Z', 'SUMMARY:fine'), event('UID:b', 'DTSTART:20260101T100000Z', 'RRULE:FREQ=WEEKLY;COUNT=banana')), WINDOW);
    expect(file.events.find((e) => e.uid === 'a')?.summary).toBe('fine');
    expect(file.events.length + file.problems.length).toBe(2);
  });
});

describe('rules and identities', () => {
  const one = (...lines: string[]) => readIcs(cal(event(...lines)), WINDOW).events[0];

  it('expands INTERVAL, COUNT, BYMONTH and BYMONTHDAY', () => {
    expect(starts(one('UID:x', 'DTSTART:20260105T100000Z', 'RRULE:FREQ=DAILY;INTERVAL=3;COUNT=4'))).toEqual([
      '2026-01-05T10:00:00.000Z',
      '2026-01-08T10:00:00.000Z',
      '2026-01-11T10:00:00.000Z',
      '2026-01-14T10:00:00.000Z',
    ]);
    const y = one('UID:y', 'DTSTART;VALUE=DATE:20260315', 'RRULE:FREQ=YEARLY;BYMONTH=3,9;BYMONTHDAY=15;COUNT=3');
    expect(starts(y)).toEqual(['2026-03-15T00:00:00.000Z', '2026-09-15T00:00:00.000Z', '2027-03-15T00:00:00.000Z'].filter((s) => s < '2027-01-01'));
    expect(y.recurrence!.text).toBe('every year on the 15th in March and September, 3 times');
    expect(one('UID:z', 'DTSTART:20260105T100000Z', 'RRULE:FREQ=WEEKLY;INTERVAL=2;BYDAY=MO,TU,WE,TH,FR').recurrence!.text).toBe('every 2 weeks on weekdays');
  });

  it('keeps the copy with the higher SEQUENCE, then the later LAST-MODIFIED, of a UID given twice', () => {
    const file = readIcs(
      cal(
        event('UID:dup', 'SEQUENCE:3', 'DTSTART:20260101T100000Z', 'SUMMARY:third'),
        event('UID:dup', 'SEQUENCE:1', 'DTSTART:20260101T100000Z', 'SUMMARY:first'),
        event('UID:lm', 'LAST-MODIFIED:20260102T000000Z', 'DTSTART:20260101T100000Z', 'SUMMARY:newer'),
        event('UID:lm', 'LAST-MODIFIED:20260101T000000Z', 'DTSTART:20260101T100000Z', 'SUMMARY:older'),
      ),
      WINDOW,
    );
    expect(file.events.map((e) => e.summary)).toEqual(['third', 'newer']);
  });

  it('derives a stable UID for an event without one', () => {
    const a = one('DTSTART:20260101T100000Z', 'SUMMARY:no uid');
    const b = one('DTSTART:20260101T100000Z', 'SUMMARY:no uid');
    expect(a.uidDerived).toBe(true);
    expect(a.uid).toBe(b.uid);
    expect(one('DTSTART:20260101T100000Z', 'SUMMARY:other').uid).not.toBe(a.uid);
  });

  it('converts wall-clock times through Intl, gaps moving forward', () => {
    expect(iso(wallToUtc({ year: 2026, month: 7, day: 1, hour: 12, minute: 0, second: 0 }, 'Europe/Berlin'))).toBe('2026-07-01T10:00:00.000Z');
    // 02:30 on 29 March 2026 does not exist in Berlin: it is read as 03:30 CEST.
    expect(iso(wallToUtc({ year: 2026, month: 3, day: 29, hour: 2, minute: 30, second: 0 }, 'Europe/Berlin'))).toBe('2026-03-29T01:30:00.000Z');
    expect(ianaZone('/mozilla.org/20070129_1/Europe/Paris')).toBe('Europe/Paris');
    expect(ianaZone('Nowhere/Special')).toBeNull();
  });
});

describe('as documents', () => {
  const file = readIcs(fixture('google.ics'), WINDOW);
  const standup = eventItem(file.events[0], { zone: 'Europe/Berlin' });

  it('an event: title, text in words, people, spec metadata, occurrences', () => {
    const d = standup.document;
    expect(d).toMatchObject({
      source_type: 'calendar_event',
      external_id: '5kq2c8v0f1rjb7gh3ldm0q9t7s@google.com',
      title: 'Team stand-up',
      content_timestamp: '2026-01-05T08:30:00.000Z',
      content_timestamp_type: 'event_start',
      has_location: true,
    });
    expect(d.content.data).toContain('When: Monday 5 January 2026, 09:30–09:45 (Europe/Berlin)');
    expect(d.content.data).toContain('Repeats: every week on Monday and Wednesday');
    expect(d.content.data).toContain('Where: Room 4.12, Marienplatz 1, München');
    expect(d.content.data).toContain('Attendees: Bob Jones <bob.jones@example.org> (accepted)');
    expect(d.people).toEqual([
      { identifier: 'anna.schmidt@example.org', identifier_type: 'email', role: 'sender', display_name: 'Anna Schmidt' },
      { identifier: 'bob.jones@example.org', identifier_type: 'email', role: 'participant', display_name: 'Bob Jones' },
    ]);
    expect(d.metadata).toMatchObject({
      event_start: '2026-01-05T08:30:00.000Z',
      event_end: '2026-01-05T08:45:00.000Z',
      all_day: false,
      location: 'Room 4.12, Marienplatz 1, München',
      status: 'confirmed',
      sequence: 2,
    });
    expect(standup.occurrences).toHaveLength(23);
  });

  it('the same event read twice maps to the same document (the import is repeatable)', () => {
    const again = eventItem(readIcs(fixture('google.ics'), WINDOW).events[0], { zone: 'Europe/Berlin' });
    expect(again).toEqual(standup);
  });

  it('a multi-day event gets its span as an occurrence; a cancelled one says so', () => {
    const ski = eventItem(file.events[1], { zone: 'Europe/Berlin' });
    expect(ski.document.content.data).toContain('When: Thursday 12 March 2026 – Saturday 14 March 2026 (all day)');
    expect(ski.occurrences).toEqual([{ start: '2026-03-12T00:00:00.000Z', end: '2026-03-15T00:00:00.000Z' }]);
    expect(eventItem(file.events[2], { zone: 'UTC' }).document.content.data).toContain('Status: cancelled');
  });

  it('a task: the spec facets and timestamp type', () => {
    const [passport, taxes, cello] = readIcs(fixture('thunderbird.ics'), WINDOW).todos.map((t) => todoItem(t, { zone: 'Europe/Berlin' }).document);
    expect(passport).toMatchObject({ source_type: 'reminder', has_due_date: true, due_date: '2026-04-30T00:00:00.000Z', is_completed: false, content_timestamp_type: 'due' });
    expect(passport.metadata).toMatchObject({ priority: 1, status: 'needs-action' });
    expect(taxes).toMatchObject({ is_completed: true, completed_at: '2026-04-10T14:00:00.000Z', content_timestamp: '2026-04-15T21:00:00.000Z' });
    expect(cello).toMatchObject({ has_due_date: false, due_date: null, content_timestamp_type: 'created', content_timestamp: '2025-10-20T09:00:00.000Z' });
  });
});
