/**
 * `memex import FILE.ics` end to end, on the test backend (PGlite, or PostgreSQL with MEMEX_TEST_BACKEND=postgres):
 * the CLI through the importer registry against a listening gateway, then search by `on:` on a recurring
 * event's later occurrence, a re-import storing nothing, a SEQUENCE bump making a new version (and an older copy
 * kept out), tasks by `type:task`, a broken file's good events kept, and the timeline counting occurrences.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IMPORTERS, runImportCommand } from '../../src/imports/registry.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { q, startSearchGateway, type SearchGateway } from '../search/helpers.ts';

const FIX = path.join(import.meta.dirname, 'fixtures');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-ics-'));

function capture() {
  let text = '';
  return { out: { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream, text: () => text };
}

const titles = (res: any): string[] =>
  res
    .json()
    .hits.filter((h: any) => !h.context)
    .map((h: any) => h.title)
    .sort();

describe('memex import FILE.ics', () => {
  let g: SearchGateway;
  let url: string;
  const run = async (file: string, ...extra: string[]) => {
    const c = capture();
    const code = await runImportCommand([file, '--url', url, '--token', TEST_TOKEN, '--zone', 'Europe/Berlin', ...extra], c.out);
    return { code, text: c.text() };
  };
  const count = async (sql: string) => Number((await g.db.query<{ n: number }>(sql)).rows[0].n);

  beforeAll(async () => {
    g = await startSearchGateway();
    await g.app.listen({ host: '127.0.0.1', port: 0 });
    const addr = g.app.server.address() as { port: number };
    url = `http://127.0.0.1:${addr.port}`;
  }, 120_000);
  afterAll(async () => {
    await g?.close();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('imports a Google export and says what it found', async () => {
    const r = await run(path.join(FIX, 'google.ics'));
    expect(r.text).toContain('calendar "Anna Schmidt": 4 events (2 recurring, 1 cancelled), 0 tasks');
    expect(r.text).toMatch(/stored 4 new or changed, 0 unchanged; \d+ occurrences indexed/);
    expect(r.code).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM documents WHERE source_type = 'calendar_event'`)).toBe(4);
  }, 120_000);

  it('finds a recurring event on the day of a later occurrence, not on an excluded or cancelled one', async () => {
    // The series starts on 5 January; 16 February is a Monday occurrence.
    expect(titles(await g.get(q({ q: 'stand-up on:2026-02-16' })))).toEqual(['Team stand-up']);
    expect(titles(await g.get(q({ q: 'type:event on:2026-02-16' })))).toEqual(['Team stand-up']);
    expect(titles(await g.get(q({ q: 'stand-up on:2026-01-07' })))).toEqual([]); // EXDATE
    expect(titles(await g.get(q({ q: 'stand-up on:2026-01-19' })))).toEqual([]); // cancelled occurrence
    expect(titles(await g.get(q({ q: 'stand-up on:2026-02-17' })))).toEqual([]); // a Tuesday
    // The filter parameters take the same route as the operators.
    expect(titles(await g.get(q({ q: 'stand-up', start_date: '2026-03-18', end_date: '2026-03-18' })))).toEqual(['Team stand-up']);
    // A three-day trip on its middle day; a birthday in a later year.
    expect(titles(await g.get(q({ q: 'type:event on:2026-03-13' })))).toEqual(['Ski trip']);
    expect(titles(await g.get(q({ q: 'birthday on:2026-04-16' })))).toEqual(["Bob's birthday"]);
    // Other documents keep their own dates only.
    expect(titles(await g.get(q({ q: 'stand-up before:2026-01-01' })))).toEqual([]);
  }, 120_000);

  it('a person on the event is linked: the organizer as sender', async () => {
    expect(titles(await g.get(q({ q: 'from:anna.schmidt@example.org type:event' })))).toEqual(['Team stand-up']);
    expect(titles(await g.get(q({ q: 'with:bob.jones@example.org' })))).toEqual(['Team stand-up']);
  }, 120_000);

  it('ask answers "when is" from an event, with its date in the answer', async () => {
    const res = await g.post('/v1/ask', { query: 'When is the dentist appointment with Dr. Weber?', k: 5 });
    expect(res.statusCode, res.body).toBe(200);
    const a = res.json();
    expect(a.answer).toMatch(/2 July 2026/);
    expect(a.citations.map((c: any) => c.title)).toContain('Dentist (Dr. Weber)');
  }, 120_000);

  it('imports the same file again and stores nothing', async () => {
    const before = await count(`SELECT count(*)::int AS n FROM documents`);
    const r = await run(path.join(FIX, 'google.ics'));
    expect(r.text).toContain('stored 0 new or changed, 4 unchanged');
    expect(await count(`SELECT count(*)::int AS n FROM documents`)).toBe(before);
    // Each import is a coverage run of the file: 4 events in it, all stored, unchanged this time.
    expect(r.text).toContain(`coverage of ${path.join(FIX, 'google.ics')}:`);
    const cov = await g.get('/v1/coverage?missing_limit=10');
    const src = cov.json().sources.find((x: any) => x.collector === 'calendar' && x.source_ref === path.join(FIX, 'google.ics'));
    expect(src).toMatchObject({ in_source: 4, stored: 4, failed: 0 });
    expect(src.stored_detail).toMatchObject({ unchanged: 4 });
  }, 120_000);

  it('a higher SEQUENCE is a new version of the same document; an older copy afterwards is kept out', async () => {
    const text = fs.readFileSync(path.join(FIX, 'google.ics'), 'utf8');
    const bumped = text.replace('SEQUENCE:2\r\nSTATUS:CONFIRMED\r\nSUMMARY:Team stand-up', 'SEQUENCE:3\r\nSTATUS:CONFIRMED\r\nSUMMARY:Team sync');
    expect(bumped).not.toBe(text);
    const file = path.join(tmp, 'bumped.ics');
    fs.writeFileSync(file, bumped);
    const r = await run(file);
    expect(r.text).toContain('stored 1 new or changed, 3 unchanged');
    const rows = (
      await g.db.query<{ version_number: number; is_active_version: boolean; title: string }>(
        `SELECT version_number, is_active_version, title FROM documents WHERE external_id = '5kq2c8v0f1rjb7gh3ldm0q9t7s@google.com' ORDER BY version_number`,
      )
    ).rows;
    expect(rows).toEqual([
      { version_number: 1, is_active_version: false, title: 'Team stand-up' },
      { version_number: 2, is_active_version: true, title: 'Team sync' },
    ]);
    // The new version is found on its occurrences; the old one is not found at all.
    expect(titles(await g.get(q({ q: 'team on:2026-02-16' })))).toEqual(['Team sync']);
    const old = await run(path.join(FIX, 'google.ics'));
    expect(old.text).toContain('1 older than what is stored (kept out)');
    expect(titles(await g.get(q({ q: 'team on:2026-02-16' })))).toEqual(['Team sync']);
  }, 120_000);

  it('imports tasks as reminders with their facets, found by type:task', async () => {
    const r = await run(path.join(FIX, 'thunderbird.ics'));
    expect(r.text).toContain('2 events (1 recurring), 3 tasks');
    expect(titles(await g.get(q({ q: 'type:task passport' })))).toEqual(['Renew passport']);
    const t = (
      await g.db.query<{ has_due_date: boolean; due_date: Date; is_completed: boolean; completed_at: Date | null }>(
        `SELECT has_due_date, due_date, is_completed, completed_at FROM documents WHERE title = 'File taxes' AND is_active_version`,
      )
    ).rows[0];
    expect(t.has_due_date).toBe(true);
    expect(new Date(t.due_date).toISOString()).toBe('2026-04-15T21:00:00.000Z');
    expect(t.is_completed).toBe(true);
    expect(new Date(t.completed_at!).toISOString()).toBe('2026-04-10T14:00:00.000Z');
    // The document view (what the web UI's document page shows) carries the facets and the metadata in words.
    const id = (await g.db.query<{ doc_id: string }>(`SELECT doc_id::text AS doc_id FROM documents WHERE title = 'File taxes'`)).rows[0].doc_id;
    const view = (await g.get(`/v1/doc/${id}/view`)).json().document;
    expect(view).toMatchObject({ due_date: '2026-04-15T21:00:00.000Z', is_completed: true, completed_at: '2026-04-10T14:00:00.000Z' });
    const rent = (await g.db.query<{ doc_id: string }>(`SELECT doc_id::text AS doc_id FROM documents WHERE title = 'Pay rent'`)).rows[0].doc_id;
    expect((await g.get(`/v1/doc/${rent}/view`)).json().document.metadata).toMatchObject({
      when: 'Thursday 1 January 2026, 08:00–08:15 (America/New_York)',
      recurrence: 'every month on the 1st, plus 1 extra date',
    });
  }, 120_000);

  it('a broken file: the readable events are stored, the others named, and the import exits 0', async () => {
    const r = await run(path.join(FIX, 'broken.ics'));
    expect(r.text).toContain('2 events (0 recurring), 1 task; 2 skipped: VEVENT at line 10 (no-start@example): no DTSTART');
    expect(r.code).toBe(0);
    expect(titles(await g.get(q({ q: 'readable' })))).toEqual(['Also readable', 'Still readable']);
    // The unreadable components are the run's missing items, each with its reason.
    const cov = await g.get('/v1/coverage?missing_limit=10');
    const src = cov.json().sources.find((x: any) => x.collector === 'calendar' && x.source_ref === path.join(FIX, 'broken.ics'));
    expect(src.failed).toBe(2);
    expect(src.missing.map((m: any) => m.ref)).toContain('VEVENT at line 10');
    expect(src.missing.find((m: any) => m.ref === 'VEVENT at line 10').reason).toMatch(/^no DTSTART/);
  }, 120_000);

  it('refuses a file that is no calendar, and a bad request body with the 422 detail', async () => {
    const junk = path.join(tmp, 'junk.ics');
    fs.writeFileSync(junk, 'not a calendar at all');
    const r = await run(junk);
    expect(r.code).toBe(1);
    expect(r.text).toContain('not an iCalendar file');
    const bad = await g.post('/v1/calendar/ingest', { items: [] });
    expect(bad.statusCode).toBe(422);
    expect(Array.isArray(bad.json().detail)).toBe(true);
    const badTime = await g.post('/v1/calendar/ingest', {
      items: [{ document: { source_type: 'calendar_event', source_id: 'x', content: { data: 'x' } }, occurrences: [{ start: 'soon', end: 'later' }] }],
    });
    expect(badTime.statusCode).toBe(422);
  }, 120_000);

  it('the registry recognises a calendar by its content, whatever its name, and a vCard stays a vCard', async () => {
    const ics = IMPORTERS.find((i) => i.label.startsWith('iCalendar'))!;
    const head = (text: string) => ({ kind: 'file' as const, bytes: Buffer.from(text), entries: [] });
    expect(await ics.recognises('/x/export', head('\uFEFFBEGIN:VCALENDAR\r\nVERSION:2.0\r\n'))).toBe(true);
    expect(await ics.recognises('/x/export.txt', head('eggs'))).toBe(false);
    expect(await ics.recognises('/x/cards.ics', head('BEGIN:VCARD\r\n'))).toBe(false);
    expect(IMPORTERS.find((i) => i.label.startsWith('vCard'))!.recognises('/x/cal.ics', head('BEGIN:VCALENDAR\r\n'))).toBe(false);
  });

  it('the timeline counts a recurring event on each day it occurs', async () => {
    const res = await g.get('/v1/stats/timeline?bucket=day&start_date=2026-02-16&end_date=2026-02-17');
    expect(res.statusCode).toBe(200);
    expect(res.json().buckets).toEqual([{ start: '2026-02-16T00:00:00.000Z', source_type: 'calendar_event', count: 1 }]);
  }, 120_000);
});
