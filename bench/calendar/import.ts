/**
 * Calendar import benchmark (issue 42): a generated 10,000-event calendar (2,000 of them recurring: weekly,
 * monthly, yearly and daily-with-COUNT rules, some with EXDATEs and moved occurrences), read and expanded by
 * src/calendar/ics.ts, mapped to documents, stored through the catalog (ingestCalendar, the route's code, in
 * process), then imported again (nothing new). Prints events/s per phase. Backend from MEMEX_TEST_BACKEND.
 *
 *   node --import tsx bench/calendar/import.ts [events=10000] [recurring=2000]
 */
import { performance } from 'node:perf_hooks';
import ICAL from 'ical.js';
import { Catalog } from '../../src/catalog/catalog.ts';
import { readIcs, defaultWindow } from '../../src/calendar/ics.ts';
import { eventItem, todoItem, type CalendarItem } from '../../src/calendar/documents.ts';
import { ingestCalendar } from '../../src/calendar/store.ts';
import { backend, createTestDatabase } from '../../test/helpers/db.ts';

const N = Number(process.argv[2] ?? 10_000);
const RECURRING = Number(process.argv[3] ?? 2_000);
const BATCH = 500;
const NOW = Date.UTC(2026, 11, 1);

const TZ = [
  'BEGIN:VTIMEZONE', 'TZID:Europe/Berlin',
  'BEGIN:DAYLIGHT', 'TZOFFSETFROM:+0100', 'TZOFFSETTO:+0200', 'TZNAME:CEST', 'DTSTART:19700329T020000', 'RRULE:FREQ=YEARLY;BYMONTH=3;BYDAY=-1SU', 'END:DAYLIGHT',
  'BEGIN:STANDARD', 'TZOFFSETFROM:+0200', 'TZOFFSETTO:+0100', 'TZNAME:CET', 'DTSTART:19701025T030000', 'RRULE:FREQ=YEARLY;BYMONTH=10;BYDAY=-1SU', 'END:STANDARD',
  'END:VTIMEZONE',
];
const WORDS = ['budget', 'review', 'dentist', 'lunch', 'planning', 'standup', 'retro', 'yoga', 'piano', 'visit', 'call', 'workshop'];
const RULES = ['FREQ=WEEKLY;BYDAY=MO,WE', 'FREQ=WEEKLY;INTERVAL=2;BYDAY=FR', 'FREQ=MONTHLY;BYDAY=2TU', 'FREQ=MONTHLY;BYMONTHDAY=15', 'FREQ=YEARLY', 'FREQ=DAILY;COUNT=30'];

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const local = (t: number) => {
  const d = new Date(t);
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}00`;
};

function generate(): string {
  const lines = ['BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//memex bench//EN', 'X-WR-CALNAME:Bench', ...TZ];
  const span = 3 * 365 * 86_400_000;
  const first = NOW - 2 * 365 * 86_400_000;
  for (let i = 0; i < N; i++) {
    const start = first + Math.floor(((i * 7919) % N) / N * span / 3_600_000) * 3_600_000 + 9 * 3_600_000;
    const w = WORDS[i % WORDS.length];
    lines.push(
      'BEGIN:VEVENT',
      `UID:bench-${i}@memex.test`,
      'DTSTAMP:20261101T000000Z',
      `DTSTART;TZID=Europe/Berlin:${local(start)}`,
      `DTEND;TZID=Europe/Berlin:${local(start + 3_600_000)}`,
      `SUMMARY:${w} ${i}`,
      `DESCRIPTION:About the ${w}\\, number ${i}.\\nSecond line with a semicolon\\; here.`,
      `LOCATION:Room ${i % 40}`,
      `ORGANIZER;CN=Person ${i % 50}:mailto:p${i % 50}@example.org`,
      `ATTENDEE;CN=Person ${(i + 1) % 50};PARTSTAT=ACCEPTED:mailto:p${(i + 1) % 50}@example.org`,
    );
    const recurring = i < RECURRING;
    if (recurring) {
      lines.push(`RRULE:${RULES[i % RULES.length]}`);
      if (i % 5 === 0) lines.push(`EXDATE;TZID=Europe/Berlin:${local(start + 7 * 86_400_000)}`);
    }
    lines.push('END:VEVENT');
    if (recurring && i % 10 === 0) {
      lines.push(
        'BEGIN:VEVENT', `UID:bench-${i}@memex.test`, 'DTSTAMP:20261101T000000Z',
        `RECURRENCE-ID;TZID=Europe/Berlin:${local(start + 14 * 86_400_000)}`,
        `DTSTART;TZID=Europe/Berlin:${local(start + 14 * 86_400_000 + 2 * 3_600_000)}`,
        `DTEND;TZID=Europe/Berlin:${local(start + 14 * 86_400_000 + 3 * 3_600_000)}`,
        `SUMMARY:${w} ${i} (moved)`, 'END:VEVENT',
      );
    }
  }
  lines.push('END:VCALENDAR');
  return lines.join('\r\n');
}

const text = generate();
const bytes = Buffer.byteLength(text);

let t0 = performance.now();
ICAL.parse(text);
const parseOnlyMs = performance.now() - t0;

t0 = performance.now();
const file = readIcs(text, { zone: 'Europe/Berlin', ...defaultWindow(NOW) });
const readMs = performance.now() - t0;
const occurrences = file.events.reduce((n, e) => n + e.occurrences.length, 0);

t0 = performance.now();
const items: CalendarItem[] = [...file.events.map((e) => eventItem(e, { zone: 'Europe/Berlin' })), ...file.todos.map((t) => todoItem(t, { zone: 'Europe/Berlin' }))];
const mapMs = performance.now() - t0;

const t = await createTestDatabase();
const catalog = new Catalog(t.db);
async function store() {
  const s = performance.now();
  const totals = { stored: 0, unchanged: 0, occurrences: 0 };
  for (let i = 0; i < items.length; i += BATCH) {
    const r = await ingestCalendar(catalog, items.slice(i, i + BATCH) as any);
    totals.stored += r.stored;
    totals.unchanged += r.unchanged;
    totals.occurrences += r.occurrences;
  }
  return { ms: performance.now() - s, ...totals };
}
const first = await store();
const again = await store();
await t.drop();

const rate = (ms: number) => `${Math.round(N / (ms / 1000))} events/s`;
console.log(`backend=${backend} events=${N} recurring=${RECURRING} file=${(bytes / 1024 / 1024).toFixed(1)} MB problems=${file.problems.length}`);
console.log(`ical.js parse alone:       ${parseOnlyMs.toFixed(0)} ms (${rate(parseOnlyMs)})`);
console.log(`read + expand (ics.ts):    ${readMs.toFixed(0)} ms (${rate(readMs)}; ${occurrences} occurrences in the window; ${(readMs / parseOnlyMs).toFixed(1)}x the parse alone)`);
console.log(`map to documents:          ${mapMs.toFixed(0)} ms (${rate(mapMs)})`);
console.log(`store (first import):      ${first.ms.toFixed(0)} ms (${rate(first.ms)}; stored ${first.stored}, ${first.occurrences} occurrences)`);
console.log(`store again (unchanged):   ${again.ms.toFixed(0)} ms (${rate(again.ms)}; unchanged ${again.unchanged})`);
const total = readMs + mapMs + first.ms;
console.log(`whole first import:        ${(total / 1000).toFixed(1)} s (${rate(total)})`);
