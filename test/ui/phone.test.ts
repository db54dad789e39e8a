/**
 * A 375 × 667 phone screen in Chromium (issue 35 item 7), on both backends: forget's dry-run counts fit
 * without sideways scrolling, the Sources table shows every column of every row without being cut off
 * (nothing hidden in a scroller), and a search shows more than one whole result above the fold.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { noteBody } from '../helpers/gateway.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const window: any, document: any, getComputedStyle: any;

const PHONE = { width: 375, height: 667 };
const DAY = 86400_000;

let h: UiHarness;
let page: Page;
let errors: string[];
let personId: string;

async function ingest(body: Record<string, unknown>): Promise<void> {
  const res = await h.gw.request('POST', '/v1/ingest', body);
  expect(res.statusCode, res.body).toBe(202);
}

/** How far the page scrolls sideways, and what sticks out when it does. */
async function sideways(): Promise<{ overflow: number; wide: string }> {
  return page.evaluate(() => {
    const vw = document.documentElement.clientWidth;
    const overflow = document.documentElement.scrollWidth - vw;
    const wide = [...document.querySelectorAll('body *')]
      .filter((e: any) => e.getBoundingClientRect().right > vw + 1)
      .slice(0, 6)
      .map((e: any) => `${e.tagName.toLowerCase()}.${e.className}`)
      .join(', ');
    return { overflow, wide };
  });
}

beforeAll(async () => {
  h = await startUiHarness();
  const me = { identifier: 'me@example.com', role: 'recipient', display_name: 'Me' };
  const rosa = { identifier: 'rosalind.featherstonehaugh@long-domain-name.example', role: 'sender', display_name: 'Rosalind Featherstonehaugh-Smythe' };
  for (let i = 0; i < 8; i++) {
    await ingest(
      noteBody({
        source_type: 'email',
        source_account_id: 'rosalind.featherstonehaugh@long-domain-name.example',
        source_id: `mail-${i}`,
        title: `Allotment committee minutes, meeting number ${i + 1} of the autumn season`,
        content: {
          data: `Minutes of the allotment committee meeting ${i + 1}. We discussed the allotment water supply, the compost bays, the shed roof and the autumn plant sale; the treasurer reported on the allotment fees.`,
        },
        content_timestamp: new Date(Date.now() - (i + 1) * DAY).toISOString(),
        people: [rosa, me],
      }),
    );
  }
  await ingest(noteBody({ source_type: 'sms', source_account_id: '+44 7700 900123 (work phone)', source_id: 'sms-1', content: { data: 'Allotment gate code changed' } }));
  await ingest(noteBody({ source_type: 'calendar_event', source_id: 'cal-1', content: { data: 'Allotment open day' } }));
  const people = await h.gw.request('GET', '/search/people?q=Rosalind');
  personId = people.json().results[0].person_id;
  ({ page, errors } = await signedInPage(h, PHONE));
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('a 375 px phone', () => {
  it("fits forget's dry-run counts on the screen", async () => {
    await page.goto(`${h.url}/#/person/${personId}`);
    await page.getByRole('button', { name: 'Forget this person…' }).click();
    const dialog = page.getByRole('alertdialog');
    await dialog.waitFor();
    const s = await sideways();
    expect(s.overflow, s.wide).toBeLessThanOrEqual(0);
    // Each count sits on the screen, beside or under its label.
    const boxes = await dialog.locator('.forget-counts dd').evaluateAll((dds) => dds.map((d: any) => d.getBoundingClientRect().right));
    expect(Math.max(...boxes)).toBeLessThanOrEqual(PHONE.width);
    expect(await axeViolations(page)).toEqual([]);
    await dialog.getByRole('button', { name: 'Cancel' }).click();
  });

  it('shows the whole Sources table, every column of every row', async () => {
    await page.goto(`${h.url}/#/sources`);
    await page.locator('tbody tr').nth(2).waitFor();
    const s = await sideways();
    expect(s.overflow, s.wide).toBeLessThanOrEqual(0);
    // Nothing is cut off by the table's scroller, and every cell (the Forget button too) is on screen.
    const cut = await page.evaluate(() =>
      [...document.querySelectorAll('.table-wrap')].map((w: any) => w.scrollWidth - w.clientWidth),
    );
    expect(Math.max(...cut)).toBeLessThanOrEqual(0);
    const outside = await page.evaluate(() =>
      [...document.querySelectorAll('tbody td')]
        .filter((td: any) => {
          const r = td.getBoundingClientRect();
          return r.left < 0 || r.right > document.documentElement.clientWidth;
        })
        .map((td: any) => td.textContent),
    );
    expect(outside).toEqual([]);
    // Every value keeps its column's name beside it.
    const row = page.locator('tbody tr', { hasText: 'sms' });
    const labelled = await row.locator('td').evaluateAll((tds) => tds.map((td: any) => `${getComputedStyle(td, '::before').content} ${td.textContent}`));
    expect(labelled.slice(0, 3)).toEqual(['"Source"  sms', '"Account" +44 7700 900123 (work phone)', '"Documents" 1']);
    await page.getByRole('button', { name: 'Forget sms (+44 7700 900123 (work phone))' }).click();
    await page.getByRole('alertdialog').waitFor();
    const f = await sideways();
    expect(f.overflow, f.wide).toBeLessThanOrEqual(0);
    expect(await axeViolations(page)).toEqual([]);
  });

  it('shows more than one search result above the fold', async () => {
    await page.goto(`${h.url}/#/search?q=allotment`);
    await page.locator('.hit').nth(3).waitFor();
    const whole = await page.evaluate(
      () => [...document.querySelectorAll('.hit')].filter((e: any) => e.getBoundingClientRect().bottom <= window.innerHeight).length,
    );
    expect(whole).toBeGreaterThan(1);
    const s = await sideways();
    expect(s.overflow, s.wide).toBeLessThanOrEqual(0);
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
