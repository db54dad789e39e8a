/**
 * The timeline zooms to where the documents are (issue 46: three months of mail were squeezed into 3 % of the width
 * beside seven empty years, because one message was dated 2019). A stray few at the far ends are counted in a line
 * that says so, and "Show all" shows every year. In Chromium.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteBody } from '../helpers/gateway.ts';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

let h: UiHarness;
let page: Page;

beforeAll(async () => {
  h = await startUiHarness();
  ({ page } = await signedInPage(h));
  const docs = [];
  for (let i = 0; i < 150; i++) {
    const day = new Date(Date.UTC(2026, 2, 1) + i * 12 * 3600_000).toISOString();
    docs.push(noteBody({ source_id: `recent-${i}`, title: `Note ${i}`, content: { data: `Harbour note ${i}` }, content_timestamp: day }));
  }
  docs.push(noteBody({ source_id: 'stray', title: 'Old note', content: { data: 'An old harbour note' }, content_timestamp: '2019-01-15T10:00:00Z' }));
  const res = await h.gw.request('POST', '/v1/ingest:batch', { documents: docs });
  expect(res.statusCode, res.body).toBeLessThan(300);
});
afterAll(async () => {
  await h?.close();
});

describe('timeline', () => {
  it('shows the months that hold the documents, says how many lie outside, and shows all on request', async () => {
    await page.goto(`${h.url}/#/timeline`);
    const bars = page.locator('svg.timeline a.bar');
    await bars.first().waitFor();
    // March to May 2026, not every month since January 2019.
    expect(await bars.count()).toBeLessThanOrEqual(4);
    const note = page.locator('.timeline-span');
    expect(await note.textContent()).toMatch(/1 document lies outside/);
    await note.getByRole('button', { name: 'Show all' }).click();
    await page.locator('.timeline-span').filter({ hasText: 'Showing every year' }).waitFor();
    expect(await bars.count()).toBeGreaterThanOrEqual(80);
    expect(await bars.first().getAttribute('data-start')).toMatch(/^2019-01/);
  });
});
