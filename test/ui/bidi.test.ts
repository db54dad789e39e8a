/**
 * Stored text with bidi controls cannot reorder the page around it (issue 33 item 6): a person and a file
 * named with U+202E RIGHT-TO-LEFT OVERRIDE are shown in search hits, a document (people, attachments, the
 * thread), the people list and a person page, and the relationship ranking; the fixed words and other
 * people's names next to them must still read left to right, measured on the glyphs Chromium laid out.
 * Runs on both backends.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const document: any, NodeFilter: any;

const RLO = '\u202E';
const MALLORY = `Mallory ${RLO}gnp.exe`;
const MALLORY_EMAIL = 'mallory@widgets.example';

let h: UiHarness;
let page: Page;
let errors: string[];
const ids: Record<string, string> = {};

async function ingest(body: Record<string, unknown>): Promise<string> {
  const res = await h.gw.request('POST', '/v1/ingest', { content_timestamp: new Date(Date.now() - 86400_000).toISOString(), ...body });
  expect(res.statusCode, res.body).toBe(202);
  return res.json().doc_id;
}

/**
 * Whether `word` reads left to right where it first appears inside `selector`: its first glyph is laid out
 * left of its last one (a leaked override reverses it). null when the word is not on the page.
 */
async function readsLeftToRight(selector: string, word: string): Promise<boolean | null> {
  return page.evaluate(
    ([sel, w]) => {
      for (const el of document.querySelectorAll(sel)) {
        const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
        for (let n = walker.nextNode(); n; n = walker.nextNode()) {
          const i = n.data.indexOf(w);
          if (i < 0) continue;
          const r = document.createRange();
          r.setStart(n, i);
          r.setEnd(n, i + 1);
          const first = r.getBoundingClientRect().left;
          r.setStart(n, i + w.length - 1);
          r.setEnd(n, i + w.length);
          return first < r.getBoundingClientRect().left;
        }
      }
      return null;
    },
    [selector, word] as const,
  );
}

beforeAll(async () => {
  h = await startUiHarness();
  const cards = await h.gw.request('POST', '/catalog/contacts/ingest', {
    source: 'host_contacts',
    device_id: 'laptop',
    batch_id: 'b1',
    since_token: null,
    people: [{ external_id: 'card-m', display_name: MALLORY, organization: 'Acme Widgets', nicknames: [`Mal${RLO}yrd`, 'Molly'], emails: [{ value: MALLORY_EMAIL }] }],
  });
  expect(cards.statusCode).toBe(200);
  const people = [
    { identifier: MALLORY_EMAIL, role: 'sender', display_name: MALLORY },
    { identifier: 'zed@example.com', role: 'recipient', display_name: 'Zed Stone' },
  ];
  ids.fromMallory = await ingest({
    source_type: 'email',
    source_id: 'bidi-1',
    title: `Invoice ${RLO}fdp.exe`,
    content: { data: 'Please pay the walrus invoice today.' },
    thread: { external_id: 'bidi-thread' },
    people,
    metadata: { attachments: [{ index: 0, kind: 'file', mime_type: 'text/plain', size_bytes: 12, filename: `invoice${RLO}fdp.exe` }] },
  });
  ids.reply = await ingest({
    source_type: 'email',
    source_id: 'bidi-2',
    title: 'Re: invoice',
    content: { data: 'Paid the walrus invoice.' },
    content_timestamp: new Date().toISOString(),
    thread: { external_id: 'bidi-thread' },
    people: [people[1], { ...people[0], role: 'recipient' }],
  });
  expect((await h.gw.request('PUT', '/v1/admin/self-person', { identifier: 'zed@example.com' })).statusCode).toBe(200);
  await h.gw.request('POST', '/v1/admin/relationships/recompute');
  ({ page, errors } = await signedInPage(h));
}, 120_000);

afterAll(async () => {
  expect(errors).toEqual([]);
  await h?.close();
});

describe('bidi overrides in stored text stay inside it', () => {
  it('search hits: the other people of a hit', async () => {
    await page.getByRole('searchbox').fill('please');
    await page.locator('.hits li', { hasText: 'Please pay' }).waitFor();
    expect(await page.locator('.hits li').count()).toBe(1);
    expect(await readsLeftToRight('.hits .people', 'Stone')).toBe(true);
  });

  it('a document: its people, its attachments and the thread', async () => {
    await page.goto(`${h.url}/#/doc/${ids.fromMallory}`);
    await page.locator('.attachments li').waitFor();
    expect(await readsLeftToRight('dl.facts', 'sender')).toBe(true);
    expect(await readsLeftToRight('.attachments', 'plain')).toBe(true);
    await page.goto(`${h.url}/#/doc/${ids.reply}`);
    await page.locator('#doc-title', { hasText: 'Re: invoice' }).waitFor();
    await page.locator('.thread li a', { hasText: 'Please pay' }).waitFor();
    expect(await readsLeftToRight('.thread', 'Please')).toBe(true);
  });

  it('people: the list, a person page, the relationship ranking', async () => {
    await page.getByRole('link', { name: 'People' }).click();
    await page.getByLabel('Find a person by name, email or phone').fill('Mallory');
    await page.locator('.cards li', { hasText: 'Widgets' }).waitFor();
    expect(await readsLeftToRight('.cards', 'Widgets')).toBe(true);
    await page.locator('.cards a').first().click();
    await page.locator('p.meta', { hasText: 'Molly' }).waitFor();
    expect(await readsLeftToRight('p.meta', 'Molly')).toBe(true);
    await page.getByRole('link', { name: 'Relationships' }).click();
    await page.getByRole('button', { name: '365 days' }).click();
    // The 90-day list (Mallory is in it too) stays until the new window's answer replaces it: ask again
    // until the 365-day list is the one on screen.
    await page.getByRole('button', { name: '365 days', pressed: true }).waitFor();
    await expect.poll(() => readsLeftToRight('.ranking', 'Widgets'), { timeout: 15_000 }).toBe(true);
  });
});
