/**
 * GET /v1/calendar/agenda (issue 42): after `memex import FILE.ics`, the events overlapping a range by start, each
 * occurrence of a recurring one (an excluded date left out), a multi-day event on the days it spans, a task by its
 * due date; a bad range is a 422 in words.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImportCommand } from '../../src/imports/registry.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startSearchGateway, type SearchGateway } from '../search/helpers.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-agenda-'));
const ICS = `BEGIN:VCALENDAR
VERSION:2.0
PRODID:-//memex tests//agenda//EN
X-WR-CALNAME:Home
BEGIN:VEVENT
UID:choir@example.org
DTSTAMP:20261101T090000Z
DTSTART:20261103T180000Z
DTEND:20261103T193000Z
RRULE:FREQ=WEEKLY;BYDAY=TU
EXDATE:20261215T180000Z
SUMMARY:Choir rehearsal
LOCATION:Church hall
END:VEVENT
BEGIN:VEVENT
UID:dentist@example.org
DTSTAMP:20261101T090000Z
DTSTART:20261209T081500Z
DTEND:20261209T090000Z
SUMMARY:Dentist
END:VEVENT
BEGIN:VEVENT
UID:holiday@example.org
DTSTAMP:20261101T090000Z
DTSTART;VALUE=DATE:20261207
DTEND;VALUE=DATE:20261212
SUMMARY:Lisbon holiday
END:VEVENT
BEGIN:VEVENT
UID:old@example.org
DTSTAMP:20261101T090000Z
DTSTART:20261020T100000Z
DTEND:20261020T110000Z
SUMMARY:Car inspection
END:VEVENT
BEGIN:VTODO
UID:tax@example.org
DTSTAMP:20261101T090000Z
DUE:20261210T170000Z
SUMMARY:File the tax return
END:VTODO
BEGIN:VTODO
UID:someday@example.org
DTSTAMP:20261101T090000Z
SUMMARY:Paint the fence
END:VTODO
END:VCALENDAR
`.replace(/\n/g, '\r\n');

describe('GET /v1/calendar/agenda', () => {
  let g: SearchGateway;
  const agenda = (from: string, to: string) => g.app.inject({ method: 'GET', url: `/v1/calendar/agenda?${new URLSearchParams({ from, to })}`, headers: { authorization: `Bearer ${TEST_TOKEN}` } });

  beforeAll(async () => {
    g = await startSearchGateway();
    await g.app.listen({ host: '127.0.0.1', port: 0 });
    const url = `http://127.0.0.1:${(g.app.server.address() as { port: number }).port}`;
    const file = path.join(tmp, 'home.ics');
    fs.writeFileSync(file, ICS);
    let out = '';
    const code = await runImportCommand([file, '--url', url, '--token', TEST_TOKEN, '--zone', 'UTC'], { write: (s: string) => ((out += s), true) } as never);
    expect(code, out).toBe(0);
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('lists the week: each occurrence, the holiday it falls in, the task due, by start', async () => {
    const r = await agenda('2026-12-07', '2026-12-14');
    expect(r.statusCode, r.body).toBe(200);
    const body = r.json();
    expect(body.truncated).toBe(false);
    expect(body.entries.map((e: any) => [e.kind, e.title, e.starts_at])).toEqual([
      ['event', 'Lisbon holiday', '2026-12-07T00:00:00.000Z'],
      ['event', 'Choir rehearsal', '2026-12-08T18:00:00.000Z'],
      ['event', 'Dentist', '2026-12-09T08:15:00.000Z'],
      ['task', 'File the tax return', '2026-12-10T17:00:00.000Z'],
    ]);
    const [holiday, choir, , tax] = body.entries;
    expect(holiday).toMatchObject({ all_day: true, recurring: false, ends_at: '2026-12-12T00:00:00.000Z' });
    expect(choir).toMatchObject({ recurring: true, location: 'Church hall', ends_at: '2026-12-08T19:30:00.000Z', completed: null });
    expect(tax).toMatchObject({ completed: false, ends_at: tax.starts_at });
  });

  it('leaves out an excluded occurrence, and finds a long event from a day inside it', async () => {
    const excluded = (await agenda('2026-12-15', '2026-12-16')).json();
    expect(excluded.entries).toEqual([]);
    const inside = (await agenda('2026-12-10T12:00:00Z', '2026-12-10T13:00:00Z')).json();
    expect(inside.entries.map((e: any) => e.title)).toEqual(['Lisbon holiday']);
    const october = (await agenda('2026-10-01', '2026-11-01')).json();
    expect(october.entries.map((e: any) => e.title)).toEqual(['Car inspection']);
  });

  it('refuses a range that is backwards, too long or not a time, with a 422 in words', async () => {
    const backwards = await agenda('2026-12-14', '2026-12-07');
    expect(backwards.statusCode).toBe(422);
    expect(backwards.json().detail[0].msg).toBe('to must be after from');
    const long = await agenda('2026-01-01', '2026-12-31');
    expect(long.statusCode).toBe(422);
    expect(long.json().detail[0].msg).toMatch(/at most 92 days/);
    expect((await agenda('next week', '2026-12-07')).statusCode).toBe(422);
    const missing = await g.app.inject({ method: 'GET', url: '/v1/calendar/agenda?from=2026-12-01', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(missing.statusCode).toBe(422);
  });
});
