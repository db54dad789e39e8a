/**
 * The web UI's other pages in Chromium: ask with citations, people and a person page, relationships
 * (setting the self person, windows, score bars), timeline brushing into a search, sources with
 * drag-and-drop upload (per-file progress, then the document and its download) and the retry of
 * failed items; phone width and dark mode; axe-core on each page. With MEMEX_UI_SCREENSHOTS=DIR the
 * screenshots of docs/ui.md are written there. Runs on both backends.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { noteBody } from '../helpers/gateway.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const window: any, document: any, location: any, DataTransfer: any, File: any;

const SHOTS = process.env.MEMEX_UI_SCREENSHOTS;
const DAY = 86400_000;

let h: UiHarness;
let page: Page;
let errors: string[];
let aliceId: string;

async function ingest(body: Record<string, unknown>): Promise<string> {
  const res = await h.gw.request('POST', '/v1/ingest', body);
  expect(res.statusCode, res.body).toBe(202);
  return res.json().doc_id;
}

function message(i: number, daysAgo: number, from: [string, string], to: [string, string], text: string, thread: string) {
  return noteBody({
    source_type: 'email',
    source_id: `m-${i}`,
    title: text.split('.')[0],
    content: { mime_type: 'text/plain', data: text },
    content_timestamp: new Date(Date.now() - daysAgo * DAY).toISOString(),
    thread: { external_id: thread },
    people: [
      { identifier: from[0], role: 'sender', display_name: from[1] },
      { identifier: to[0], role: 'recipient', display_name: to[1] },
    ],
  });
}

/** A screenshot (taken on every run); kept, at most 1000 px wide and palette-compressed, when MEMEX_UI_SCREENSHOTS names a folder. */
async function shot(name: string, p: Page = page) {
  const png = await p.screenshot();
  if (!SHOTS) return;
  const { default: sharp } = await import('sharp');
  await sharp(png).resize({ width: 1000, withoutEnlargement: true }).png({ palette: true, quality: 80, compressionLevel: 9 }).toFile(path.join(SHOTS, `${name}.png`));
}

beforeAll(async () => {
  h = await startUiHarness({ files: {} });
  const me: [string, string] = ['me@example.com', 'Me'];
  const alice: [string, string] = ['alice@example.com', 'Alice Liddell'];
  const bob: [string, string] = ['bob@example.com', 'Bob Stone'];
  let i = 0;
  for (const d of [40, 20, 9, 5, 2]) await ingest(message(i++, d, alice, me, `Quarterly budget review number ${i}. The budget is on track.`, 'budget'));
  for (const d of [3, 1]) await ingest(message(i++, d, me, alice, `Reply about the budget ${i}. Thanks for the numbers.`, 'budget'));
  await ingest(message(i++, 200, bob, me, 'Old note about the garden fence.', 'fence'));
  // A bank's statements (Auto-Submitted): an automated sender, hidden from the ranking unless asked for.
  const bank: [string, string] = ['statements@harbourbank.example', 'Harbour Bank (statements)'];
  for (const d of [4, 11, 18]) {
    const m = message(i++, d, bank, me, `Your statement is ready ${i}.`, `bank-${i}`);
    (m.metadata as Record<string, unknown>).auto_submitted = 'auto-generated';
    await ingest(m);
  }
  // Dora: written to five times four months ago, never since: gone quiet.
  const dora: [string, string] = ['dora@example.com', 'Dora Marquez'];
  for (const d of [120, 121, 122, 123, 124]) await ingest(message(i++, d, me, dora, `Choir rehearsal notes ${i}.`, 'choir'));
  await ingest(
    noteBody({
      source_type: 'sms',
      source_id: 'sms-carol',
      title: null,
      content: { data: 'Carol here: running late for the budget meeting.' },
      content_timestamp: new Date(Date.now() - 400 * DAY).toISOString(),
      people: [{ identifier: '+1 415 555 0100', role: 'sender', display_name: 'Carol Danvers' }],
    }),
  );
  const people = await h.gw.request('GET', '/search/people?q=alice');
  aliceId = people.json().results[0].person_id;
  ({ page, errors } = await signedInPage(h));
}, 120_000);

afterAll(async () => {
  await h?.close();
});

describe('ask', () => {
  it('answers with numbered citations that open the cited document', async () => {
    await page.getByRole('link', { name: 'Ask' }).click();
    await page.getByLabel('Question').fill('Is the quarterly budget on track?');
    // A slow network: each document's title arrives 300 ms after the answer.
    const slowDocs = async (route: Route) => {
      await new Promise((r) => setTimeout(r, 300));
      await route.continue();
    };
    await page.route('**/v1/doc/**', slowDocs);
    await page.getByRole('button', { name: 'Ask' }).click();
    const cite = page.locator('.answer-text a.cite').first();
    await cite.waitFor();
    expect(await cite.textContent()).toMatch(/^\[\d+\]$/);
    expect(await page.locator('.citations li').count()).toBeGreaterThan(0);
    // Sources are shown by title from the first frame, never as bare document ids.
    expect(await page.locator('.citations').textContent()).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
    await page.unroute('**/v1/doc/**', slowDocs);
    expect(await page.locator('.citations a').first().textContent()).toMatch(/budget/i);
    // The short answer first: quoted sentences, each marked where it stands in its source below.
    const answer = (await page.locator('.answer-text').textContent())!;
    expect(answer.length).toBeLessThanOrEqual(400);
    const quoted = (await page.locator('.citations li').first().locator('mark.cited').textContent())!;
    expect(quoted).toMatch(/budget/i);
    expect(answer.replace(/\s*\[\d+\]\s*/g, ' ')).toContain(quoted.replace(/\s+/g, ' ').trim());
    expect(await axeViolations(page)).toEqual([]);
    await shot('ask');
    const href = await cite.getAttribute('href');
    expect(href).toMatch(/^#\/doc\/[0-9a-f-]{36}\?chunk=[0-9a-f-]{36}&at=\d+-\d+$/);
    await cite.click();
    await page.locator('#doc-title').waitFor();
    expect(await page.locator('pre.text').first().textContent()).toMatch(/budget/i);
    // The quoted sentence, not its whole chunk, is marked in the document.
    expect(await page.locator('pre.text mark.cited').textContent()).toBe(quoted);
  });
});

describe('relationships and people', () => {
  it('asks for the self person when unknown, then ranks people with score bars and explanations', async () => {
    await page.getByRole('link', { name: 'Relationships' }).click();
    await page.getByLabel('Your email or phone').fill('me@example.com');
    await page.getByRole('button', { name: 'This is me' }).click();
    const first = page.locator('.ranking li').first();
    await first.locator('a', { hasText: 'Alice Liddell' }).waitFor();
    const score = Number(await first.getByRole('meter').getAttribute('aria-valuenow'));
    expect(score).toBeGreaterThan(0);
    expect(score).toBeLessThanOrEqual(100);
    expect(await first.locator('.explain').textContent()).toMatch(/^\d+ messages in the last 30 days, last contact (yesterday|\d+ days ago)/);
    expect(await page.locator('.ranking li', { hasText: 'Bob Stone' }).count()).toBe(0); // 200 days ago: outside 90 days
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: '365 days' }).click();
    await page.locator('.ranking li', { hasText: 'Bob Stone' }).waitFor();
    await shot('relationships');
    await page.getByRole('button', { name: '30 days' }).click();
    await page.waitForFunction(() => location.hash.includes('window=30d') && document.querySelectorAll('.ranking li').length === 1);
  });

  it('leaves automated senders out unless asked for, and lists the people who went quiet', async () => {
    await page.getByRole('button', { name: '365 days' }).click();
    await page.locator('.ranking li', { hasText: 'Bob Stone' }).waitFor();
    expect(await page.locator('.ranking li', { hasText: 'Harbour Bank' }).count()).toBe(0);
    await page.getByLabel('Include automated senders').check();
    const bank = page.locator('.ranking li', { hasText: 'Harbour Bank' });
    await bank.waitFor();
    expect(await bank.locator('.automated').textContent()).toMatch(/^Automated sender: its mail says a machine sent it/);
    await page.getByLabel('Include automated senders').uncheck();
    await page.waitForFunction(() => !location.hash.includes('automated=1'));
    // A slow network: the gone-quiet list arrives 500 ms after the click; the year's ranking (Dora is in it too)
    // must not stand under the Gone quiet tab meanwhile.
    const slowQuiet = async (route: Route) => {
      await new Promise((r) => setTimeout(r, 500));
      await route.continue();
    };
    await page.route('**/v1/crm/relationships/top?*gone_quiet*', slowQuiet);
    await page.getByRole('button', { name: 'Gone quiet' }).click();
    // Meanwhile the page says what it is waiting for, not a blank.
    await page.getByRole('status').filter({ hasText: 'Ranking people by the messages you exchanged' }).waitFor();
    const dora = page.locator('.ranking li', { hasText: 'Dora Marquez' });
    await dora.waitFor();
    expect(await dora.locator('.explain').textContent()).toMatch(/^You wrote 5 times, the last 4 months ago\.$/);
    expect(await page.locator('.ranking li').count()).toBe(1);
    await page.unroute('**/v1/crm/relationships/top?*gone_quiet*', slowQuiet);
    expect(await axeViolations(page)).toEqual([]);
  });

  it('finds people by name and by phone in another format, and shows a person page', async () => {
    await page.getByRole('link', { name: 'People' }).click();
    await page.getByLabel('Find a person by name, email or phone').fill('(415) 555-0100');
    await page.locator('.cards a', { hasText: 'Carol Danvers' }).waitFor();
    await page.getByLabel('Find a person by name, email or phone').fill('alice');
    await page.waitForFunction(() => document.querySelectorAll('.cards li').length === 1);
    expect(await axeViolations(page)).toEqual([]);
    await page.locator('.cards a', { hasText: 'Alice Liddell' }).click();
    await page.getByRole('heading', { name: 'Alice Liddell', level: 1 }).waitFor();
    expect(page.url()).toContain(`#/person/${aliceId}`);
    expect(await page.locator('section[aria-labelledby="ids-h"]').textContent()).toContain('alice@example.com');
    await page.locator('.explain').waitFor();
    expect(await page.locator('.explain').textContent()).toMatch(/messages in the last 30 days/);
    const dates = await page.locator('section[aria-labelledby="docs-h"]').locator('time').evaluateAll((ts) => ts.map((t: any) => t.dateTime));
    expect(dates.length).toBe(7);
    expect([...dates].sort().reverse()).toEqual(dates); // newest first
    expect(await axeViolations(page)).toEqual([]);
    await shot('person');
  });
});

describe('people list', () => {
  it('shows message counts and last contact, sorts by name, messages or last contact, and never lists the owner', async () => {
    // The self person (me@example.com) was set on the relationships page above.
    await page.evaluate(() => (location.hash = '#/people'));
    const names = () => page.locator('.people-list li > a').allTextContents();
    await page.locator('.people-list li', { hasText: 'Harbour Bank' }).waitFor();
    expect(await names()).toEqual(['Alice Liddell', 'Bob Stone', 'Carol Danvers', 'Dora Marquez', 'Harbour Bank (statements)']);
    expect(await page.locator('.status').textContent()).toBe('5 people');
    const alice = page.locator('.people-list li', { hasText: 'Alice Liddell' });
    expect(await alice.locator('.contact').textContent()).toMatch(/^7 messages · last contact \S/);
    expect(await alice.locator('.contact time').getAttribute('datetime')).toBe(
      (await h.gw.request('GET', '/search/people?q=alice')).json().results[0].last_contact_at,
    );
    await page.getByRole('button', { name: 'Messages' }).click();
    await page.waitForFunction(() => location.hash.includes('sort=messages'));
    await page.waitForFunction(() => document.querySelector('.people-list li > a')?.textContent === 'Alice Liddell' && document.querySelectorAll('.people-list li')[1]?.textContent?.includes('Dora'));
    expect(await names()).toEqual(['Alice Liddell', 'Dora Marquez', 'Harbour Bank (statements)', 'Bob Stone', 'Carol Danvers']);
    expect(await page.getByRole('button', { name: 'Messages' }).getAttribute('aria-pressed')).toBe('true');
    await page.getByRole('button', { name: 'Last contact' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.people-list li')[1]?.textContent?.includes('Harbour Bank'));
    expect(await names()).toEqual(['Alice Liddell', 'Harbour Bank (statements)', 'Dora Marquez', 'Bob Stone', 'Carol Danvers']);
    expect(await axeViolations(page)).toEqual([]);
    await page.getByRole('button', { name: 'Name' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.people-list li')[1]?.textContent?.includes('Bob Stone'));
    // A search's People facet does not offer the owner either.
    await page.evaluate(() => (location.hash = '#/search?q=budget'));
    const facet = page.locator('.facet', { has: page.getByRole('heading', { name: 'People' }) });
    await facet.locator('button', { hasText: 'Alice Liddell' }).waitFor();
    expect(await facet.locator('button bdi').allTextContents()).not.toContain('Me');
  });
});

describe('timeline', () => {
  it('draws bars per month and turns a brushed range into a search filter', async () => {
    await page.getByRole('link', { name: 'Timeline' }).click();
    const bars = page.locator('svg.timeline a.bar');
    await bars.first().waitFor();
    const n = await bars.count();
    expect(n).toBeGreaterThanOrEqual(3);
    expect(await axeViolations(page)).toEqual([]);
    await shot('timeline');
    const first = await bars.first().boundingBox();
    const last = await bars.nth(n - 1).boundingBox();
    await page.mouse.move(first!.x + first!.width / 2, first!.y + first!.height / 2);
    await page.mouse.down();
    await page.mouse.move(last!.x + last!.width / 2, last!.y + last!.height / 2, { steps: 8 });
    await page.mouse.up();
    await page.getByRole('searchbox').waitFor();
    const params = new URLSearchParams(page.url().split('?')[1]);
    expect(params.get('start_date')).toMatch(/^\d{4}-\d{2}-01$/);
    expect(params.get('end_date')! > params.get('start_date')!).toBe(true);
    await page.getByRole('searchbox').fill('budget');
    await page.locator('#search-status').filter({ hasText: /\d+ documents?/ }).waitFor();
    expect(await page.locator('.hit').count()).toBeGreaterThan(0);
    await shot('search');
  });
});

describe('sources', () => {
  it('uploads dropped files with per-file progress, then opens one and downloads it', async () => {
    await page.getByRole('link', { name: 'Sources' }).click();
    await page.locator('.dropzone').waitFor();
    // A real drop event carrying files, as the browser fires it for a drag from the desktop.
    await page.evaluate(() => {
      const dt = new DataTransfer();
      dt.items.add(new File(['Receipt for the new bicycle, 420 euros.'], 'bicycle receipt.txt', { type: 'text/plain' }));
      dt.items.add(new File(['Notes from the <b>kick-off</b> meeting.'], 'kickoff.md', { type: 'text/markdown' }));
      dt.items.add(new File(['A file whose name is markup.'], '<img src=x onerror=alert(1)>.txt', { type: 'text/plain' }));
      document.querySelector('.dropzone').dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    });
    await page.locator('.upload.done').nth(2).waitFor();
    expect(await page.locator('.upload progress').evaluateAll((ps) => ps.map((p: any) => p.value === p.max))).toEqual([true, true, true]);
    // A file name is text too.
    expect(await page.locator('.upload .name').allTextContents()).toContain('<img src=x onerror=alert(1)>.txt');
    expect(await page.locator('.uploads img').count()).toBe(0);
    // The same file again through the picker: recognised as already stored.
    await page.locator('#files').setInputFiles({ name: 'bicycle receipt.txt', mimeType: 'text/plain', buffer: Buffer.from('Receipt for the new bicycle, 420 euros.') });
    await page.locator('.upload.duplicate').waitFor();
    await page.locator('tbody tr', { hasText: 'localfs' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await shot('sources');

    await page.locator('.upload.done', { hasText: 'bicycle receipt.txt' }).getByRole('link', { name: 'open' }).click();
    await page.locator('.attachments').waitFor();
    expect(await page.locator('.attachments strong').textContent()).toBe('bicycle receipt.txt');
    await shot('document');
    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download' }).click()]);
    expect(download.suggestedFilename()).toBe('bicycle receipt.txt');
    const saved = await download.path();
    expect(fs.readFileSync(saved!, 'utf8')).toBe('Receipt for the new bicycle, 420 euros.');
  });

  it('shows failed items with their reason and queues them again on Retry', async () => {
    await h.gw.db.query(
      `UPDATE chunks SET embedding_status = 'failed', embedding_error = 'embedding provider unreachable (test)'
        WHERE chunk_id = (SELECT chunk_id FROM chunks ORDER BY created_at LIMIT 1)`,
    );
    await page.goto(`${h.url}/#/sources`);
    await page.locator('.failures li', { hasText: 'embedding provider unreachable (test)' }).waitFor();
    await page.getByRole('button', { name: 'Retry failed chunks' }).click();
    await page.getByRole('status').filter({ hasText: '1 chunk queued again' }).waitFor();
    const r = await h.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM chunks WHERE embedding_status = 'failed'`);
    expect(r.rows[0].n).toBe(0);
    await page.locator('.failures').waitFor({ state: 'detached' });
  });
});

describe('forget', () => {
  it('shows what forgetting a person removes, erases only after the confirmation, and the person is gone', async () => {
    const carol = (await h.gw.request('GET', '/search/people?q=Carol')).json().results[0].person_id as string;
    await page.goto(`${h.url}/#/person/${carol}`);
    await page.getByRole('button', { name: 'Forget this person…' }).click();
    const dialog = page.getByRole('alertdialog');
    await dialog.waitFor();
    expect(await dialog.locator('dt', { hasText: /^Documents$/ }).locator('xpath=following-sibling::dd[1]').textContent()).toBe('1 (1 version)');
    expect(await axeViolations(page)).toEqual([]);
    await shot('forget-person');
    // Cancel leaves everything in place.
    await dialog.getByRole('button', { name: 'Cancel' }).click();
    expect((await h.gw.request('GET', '/search/people?q=Carol')).json().results).toHaveLength(1);
    // A double click on "Forget…" cannot erase: the confirmation wants a typed word.
    await page.getByRole('button', { name: 'Forget this person…' }).dblclick();
    const erase = page.getByRole('button', { name: 'Erase for good' });
    await erase.waitFor();
    await erase.click({ force: true }).catch(() => {});
    expect(await erase.isDisabled()).toBe(true);
    expect((await h.gw.request('GET', '/search/people?q=Carol')).json().results).toHaveLength(1);
    await page.getByLabel(/Type erase to confirm/).fill('erase');
    await erase.click();
    await page.getByRole('status').filter({ hasText: 'Erased 1 document and 1 person' }).waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(/#\/people/);
    expect((await h.gw.request('GET', '/search/people?q=Carol')).json().results).toEqual([]);
    expect((await h.gw.request('GET', '/v1/search?q=running%20late')).json().hits).toEqual([]);
  });

  it('forgets a whole source from the sources page, and can block it', async () => {
    await ingest(noteBody({ source_type: 'reminder', source_id: 'r-1', content: { data: 'Feed the axolotl' } }));
    await page.goto(`${h.url}/#/sources`);
    await page.getByRole('button', { name: 'Forget reminder' }).click();
    await page.getByRole('alertdialog').waitFor();
    await page.getByLabel(/Keep it from coming back/).check();
    await page.getByRole('button', { name: 'Erase for good' }).click();
    await page.getByRole('status').filter({ hasText: 'later imports of it will be skipped' }).waitFor();
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('button', { name: 'Forget reminder' }).waitFor({ state: 'detached' });
    const again = await h.gw.request('POST', '/v1/ingest', noteBody({ source_type: 'reminder', source_id: 'r-2', content: { data: 'Feed the axolotl again' } }));
    expect(again.json().skipped).toBe('blocked_source');
  });
});

describe('layout', () => {
  it('fits a 375 px phone screen without sideways scrolling, in dark mode too', async () => {
    const { page: phone } = await signedInPage(h, { width: 375, height: 800 }, { colorScheme: 'dark' });
    const context = phone.context();
    for (const route of ['#/search?q=budget', `#/person/${aliceId}`, '#/sources', '#/relationships?window=365d', '#/timeline']) {
      await phone.goto(`${h.url}/${route}`);
      await phone.locator('#page-title, #search-status').first().waitFor();
      await phone.waitForLoadState('networkidle');
      const overflow = await phone.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
      // On failure, name the elements that stick out.
      const wide = overflow > 0
        ? await phone.evaluate(() =>
            [...document.querySelectorAll('body *')]
              .filter((e: any) => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
              .slice(0, 6)
              .map((e: any) => `${e.tagName.toLowerCase()}.${e.className}`)
              .join(', '),
          )
        : '';
      expect(overflow, `${route}: ${wide}`).toBeLessThanOrEqual(0);
    }
    const bg = await phone.evaluate(() => getComputedStyle(document.body).backgroundColor);
    expect(bg).toBe('rgb(21, 23, 27)');
    await phone.goto(`${h.url}/#/search?q=budget`);
    await phone.locator('.hit').first().waitFor();
    expect(await axeViolations(phone)).toEqual([]);
    await shot('search-phone-dark', phone);
    await context.close();
    expect(errors).toEqual([]);
  });
});

declare const getComputedStyle: any, DragEvent: any;
