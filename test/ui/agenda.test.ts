/**
 * The Agenda page (issue 42) in Chromium: a week day by day from GET /v1/calendar/agenda — a weekly event on its
 * day, an all-day event on each day it spans, a task on its due day — titles linking to the document, and the
 * previous/next week links moving the range (an empty week says so); the month grid with the same entries on their
 * days, "+ n more" opening the day's week, and months moving.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

let h: UiHarness;
let page: Page;
let errors: string[];
const ids: Record<string, string> = {};

function event(uid: string, title: string, start: string, end: string, extra: Record<string, unknown> = {}) {
  return {
    source_type: 'calendar_event',
    source_id: `ics:${uid}`,
    title,
    content: { mime_type: 'text/plain', data: `${title}\nWhen: ${start}` },
    metadata: { uid, event_start: start, event_end: end, all_day: false, ...extra },
    content_timestamp: start,
  };
}

beforeAll(async () => {
  h = await startUiHarness();
  // A browser in UTC with British formats: local days are UTC days, times read 18:00.
  ({ page, errors } = await signedInPage(h, undefined, { timezoneId: 'UTC', locale: 'en-GB' }));
  const res = await h.gw.request('POST', '/v1/calendar/ingest', {
    items: [
      {
        document: event('choir', 'Choir rehearsal', '2026-11-03T18:00:00Z', '2026-11-03T19:30:00Z', { recurrence: 'weekly on Tuesday', location: 'Church hall' }),
        occurrences: ['2026-11-03', '2026-11-10', '2026-11-17', '2026-11-24', '2026-12-01', '2026-12-08'].map((d) => ({ start: `${d}T18:00:00Z`, end: `${d}T19:30:00Z` })),
      },
      {
        document: event('holiday', 'Lisbon holiday', '2026-12-09T00:00:00Z', '2026-12-12T00:00:00Z', { all_day: true }),
        occurrences: [{ start: '2026-12-09T00:00:00Z', end: '2026-12-12T00:00:00Z' }],
      },
      // A busy day (in a week the week tests do not visit): four meetings, more than a month cell shows.
      ...['09:00', '11:00', '14:00', '16:00'].map((t, i) => ({ document: event(`busy-${i}`, `Busy meeting ${i + 1}`, `2026-12-23T${t}:00Z`, `2026-12-23T${t.replace(/:00$/, ':30')}:00Z`) })),
      {
        document: {
          source_type: 'reminder',
          source_id: 'ics:tax',
          title: 'File the tax return',
          content: { mime_type: 'text/plain', data: 'File the tax return' },
          has_due_date: true,
          due_date: '2026-12-10T17:00:00Z',
          is_completed: false,
          content_timestamp: '2026-12-10T17:00:00Z',
          content_timestamp_type: 'due',
        },
      },
    ],
  });
  expect(res.statusCode, res.body).toBe(200);
  const results = res.json().results;
  expect(results.every((r: any) => r.outcome === 'stored'), res.body).toBe(true);
  [ids.choir, ids.holiday] = results.map((r: any) => r.doc_id);
  ids.tax = results[results.length - 1].doc_id;
}, 120_000);
afterAll(async () => {
  await h?.close();
});

const entriesOn = (day: string) => page.locator(`.agenda-day[data-day="${day}"] .agenda-entry`);

describe('agenda page', () => {
  it('shows the week day by day: the weekly event, the holiday on each of its days, the task on its due day', async () => {
    await page.goto(`${h.url}/#/agenda?from=2026-12-09`);
    await page.locator('ol.agenda').waitFor();
    expect(await page.locator('#page-title').textContent()).toMatch(/7 December/);
    expect(await entriesOn('2026-12-08').allTextContents()).toEqual([expect.stringMatching(/18:00\s*Choir rehearsal · Church hall · repeats/)]);
    for (const d of ['2026-12-09', '2026-12-10', '2026-12-11']) expect((await entriesOn(d).allTextContents()).join('|'), d).toMatch(/all day\s*Lisbon holiday/);
    expect(await entriesOn('2026-12-12').count()).toBe(0);
    expect((await entriesOn('2026-12-10').allTextContents()).join('|')).toMatch(/due 17:00\s*File the tax return · to do/);
    expect(await page.locator('.agenda-day[data-day="2026-12-07"] .agenda-free').textContent()).toBe('Nothing');
    await page.getByRole('link', { name: 'File the tax return' }).click();
    await page.waitForURL(new RegExp(`#/doc/${ids.tax}`));
  });

  it('moves by week, and a week with nothing says so', async () => {
    await page.goto(`${h.url}/#/agenda?from=2026-12-07`);
    await page.locator('ol.agenda').waitFor();
    await page.getByRole('link', { name: 'Next week →' }).click();
    await page.locator('p.empty').waitFor();
    expect(await page.locator('p.empty').textContent()).toMatch(/Nothing in this week/);
    await page.getByRole('link', { name: '← Previous week' }).click();
    await page.getByRole('link', { name: '← Previous week' }).click();
    await entriesOn('2026-12-01').first().waitFor();
    expect(await entriesOn('2026-12-01').allTextContents()).toEqual([expect.stringMatching(/Choir rehearsal/)]);
    expect(errors).toEqual([]);
  });

  it('the month: a grid of its weeks with each entry on its day, "+ n more" opening the week, months moving', async () => {
    await page.goto(`${h.url}/#/agenda?month=2026-12`);
    await page.locator('table.agenda-month').waitFor();
    expect(await page.locator('#page-title').textContent()).toBe('December 2026');
    const cell = (day: string) => page.locator(`td.agenda-cell[data-day="${day}"]`);
    // December 2026 starts on a Tuesday: the grid opens on Monday 30 November, shown as another month's day.
    expect(await page.locator('td.agenda-cell').first().getAttribute('data-day')).toBe('2026-11-30');
    expect(await cell('2026-11-30').getAttribute('class')).toMatch(/other-month/);
    expect(await cell('2026-12-08').locator('.agenda-entry').allTextContents()).toEqual([expect.stringMatching(/18:00\s*Choir rehearsal/)]);
    for (const d of ['2026-12-09', '2026-12-10', '2026-12-11']) expect((await cell(d).locator('.agenda-entry').allTextContents()).join('|'), d).toMatch(/Lisbon holiday/);
    expect((await cell('2026-12-10').locator('.agenda-entry').allTextContents()).join('|')).toMatch(/File the tax return/);
    expect(await cell('2026-12-12').locator('.agenda-entry').count()).toBe(0);
    expect(await cell('2026-12-23').locator('.agenda-entry').count()).toBe(3);
    expect(await axeViolations(page)).toEqual([]);

    await cell('2026-12-23').getByRole('link', { name: '+ 1 more' }).click();
    await page.locator('ol.agenda').waitFor();
    expect(await entriesOn('2026-12-23').count()).toBe(4);

    await page.getByRole('link', { name: 'Month view' }).click();
    await page.locator('table.agenda-month').waitFor();
    expect(await page.locator('#page-title').textContent()).toBe('December 2026');
    await page.getByRole('link', { name: '← Previous month' }).click();
    await page.locator('#page-title', { hasText: 'November 2026' }).waitFor();
    await page.locator('table.agenda-month').waitFor();
    for (const d of ['2026-11-03', '2026-11-10', '2026-11-17', '2026-11-24']) {
      expect(await cell(d).locator('.agenda-entry').allTextContents(), d).toEqual([expect.stringMatching(/Choir rehearsal/)]);
    }
    expect(errors).toEqual([]);
  });
});
