/** The calendar import's settings and file test, apart from the reader so using them does not load ical.js. */
import { defineSettings, int, string } from '../config/env.ts';

export const CALENDAR_SETTINGS = defineSettings('calendar', 'Calendar import', {
  MEMEX_CALENDAR_ZONE: string({
    defaultText: 'the system time zone',
    description: 'IANA time zone of floating times (no TZID, no Z) and of TZIDs nobody knows, in `memex import FILE.ics` (after `--zone`)',
  }),
  MEMEX_CALENDAR_YEARS_BACK: int({ default: 2, min: 0, max: 100, description: 'recurring events: occurrences indexed from this many years back (after `--years-back`)' }),
  MEMEX_CALENDAR_YEARS_AHEAD: int({ default: 1, min: 0, max: 20, description: 'recurring events: occurrences indexed up to this many years ahead (after `--years-ahead`)' }),
});

/** Largest calendar attachment read as events (an invitation is a few kilobytes). */
export const MAX_CALENDAR_ATTACHMENT_BYTES = 4 * 1024 * 1024;

const CALENDAR_TYPES = new Set(['text/calendar', 'application/ics', 'text/x-vcalendar', 'application/x-ics']);

export function isCalendarFile(filename: string | null | undefined, mimeType: string | null | undefined): boolean {
  const mime = (mimeType ?? '').split(';')[0].trim().toLowerCase();
  return CALENDAR_TYPES.has(mime) || /\.(ics|ical|vcs)$/i.test(filename ?? '');
}

