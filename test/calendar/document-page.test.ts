/**
 * The document page of a calendar event in Chromium says when, how it repeats, where and who, in words; stored
 * text that looks like HTML is shown as text. A task's page shows its due date and priority.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readIcs } from '../../src/calendar/ics.ts';
import { eventItem, todoItem } from '../../src/calendar/documents.ts';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

let h: UiHarness;
let page: Page;
let errors: string[];
const ids: Record<string, string> = {};

beforeAll(async () => {
  h = await startUiHarness();
  ({ page, errors } = await signedInPage(h));
  const window = { windowStart: Date.UTC(2025, 0, 1), windowEnd: Date.UTC(2027, 0, 1) };
  const text = fs
    .readFileSync(path.join(import.meta.dirname, 'fixtures', 'google.ics'), 'utf8')
    .replace('LOCATION:Room 4.12', 'LOCATION:<img src=x onerror=alert(1)> Room 4.12');
  const g = readIcs(text, { zone: 'Europe/Berlin', ...window });
  const t = readIcs(fs.readFileSync(path.join(import.meta.dirname, 'fixtures', 'thunderbird.ics'), 'utf8'), { zone: 'Europe/Berlin', ...window });
  const items = [eventItem(g.events[0], { zone: 'Europe/Berlin' }), todoItem(t.todos[0], { zone: 'Europe/Berlin' })];
  const res = await h.gw.request('POST', '/v1/calendar/ingest', { items });
  expect(res.statusCode, res.body).toBe(200);
  ids.event = res.json().results[0].doc_id;
  ids.task = res.json().results[1].doc_id;
}, 180_000);
afterAll(async () => {
  await h?.close();
});

const fact = (label: string) => page.locator('dl.facts dt', { hasText: new RegExp(`^${label}$`) }).locator('xpath=following-sibling::dd[1]');

describe('the document page of an event and of a task', () => {
  it('says when, how it repeats, where and who', async () => {
    await page.goto(`${h.url}/#/doc/${ids.event}`);
    await page.locator('#doc-title', { hasText: 'Team stand-up' }).waitFor();
    expect(await fact('When').textContent()).toBe('Monday 5 January 2026, 09:30–09:45 (Europe/Berlin)');
    expect(await fact('Repeats').textContent()).toContain('every week on Monday and Wednesday, until 1 April 2026');
    expect(await fact('Where').textContent()).toBe('<img src=x onerror=alert(1)> Room 4.12, Marienplatz 1, München');
    expect(await fact('Organizer').textContent()).toBe('Anna Schmidt <anna.schmidt@example.org>');
    expect(await fact('Attendees').textContent()).toBe('Bob Jones <bob.jones@example.org> (accepted)');
    expect(await page.locator('dl.facts img').count()).toBe(0);
    expect(errors).toEqual([]);
  }, 120_000);

  it('a task: due date and priority', async () => {
    await page.goto(`${h.url}/#/doc/${ids.task}`);
    await page.locator('#doc-title', { hasText: 'Renew passport' }).waitFor();
    expect(await fact('Due').textContent()).toMatch(/2026/);
    expect(await fact('Priority').textContent()).toBe('high');
    expect(await fact('Status').textContent()).toBe('needs-action');
  }, 120_000);
});
