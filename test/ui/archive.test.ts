/**
 * Issue 40 in the web UI, in Chromium: an archive whose mail ends in 2019 has relationships (counted back from
 * its newest message), the owner's other address is claimed from the "This is me" step, people with one name are
 * offered for merging on the People page, and search shows a mailing list as a list (facet, venue), not a person.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

declare const document: any;

let h: UiHarness;
let page: Page;
let errors: string[];

async function mail(i: number, ts: string, from: [string, string], to: [string, string][], text: string, extra: Record<string, unknown> = {}) {
  const res = await h.gw.request('POST', '/v1/ingest', {
    source_type: 'email_local',
    source_id: `email:archive-${i}`,
    title: text.split('.')[0],
    content: { mime_type: 'text/plain', data: text },
    content_timestamp: ts,
    thread: { external_id: `archive-thread-${i % 3}`, source_type: 'email' },
    people: [
      { identifier: from[0], identifier_type: 'email', role: 'sender', display_name: from[1] },
      ...to.map(([identifier, display_name]) => ({ identifier, identifier_type: 'email', role: 'recipient', display_name, ...(identifier.startsWith('linux-mips@') ? { metadata: { list: 'linux-mips.vger.kernel.org' } } : {}) })),
    ],
    ...extra,
  });
  expect(res.statusCode, res.body).toBe(202);
}

beforeAll(async () => {
  h = await startUiHarness({ files: {} });
  const me: [string, string] = ['paul@crapouillou.net', 'Paul Cercueil'];
  const meAtWork: [string, string] = ['paul.cercueil@analog.com', 'Paul Cercueil'];
  const thomas: [string, string] = ['tsbogend@alpha.franken.de', 'Thomas Bogendoerfer'];
  const list: [string, string] = ['linux-mips@vger.kernel.org', 'open list:MIPS'];
  const listMeta = { metadata: { list: { id: 'linux-mips.vger.kernel.org', name: 'linux-mips', address: 'linux-mips@vger.kernel.org' } } };
  let i = 0;
  for (const day of [10, 12, 14]) await mail(i++, `2019-11-${day}T10:00:00Z`, me, [thomas, list], `MIPS watchdog patch number ${i}.`, listMeta);
  for (const day of [11, 13]) await mail(i++, `2019-11-${day}T10:00:00Z`, thomas, [me, list], `Applied the watchdog patch ${i}.`, listMeta);
  await mail(i++, '2019-11-15T10:00:00Z', meAtWork, [thomas], 'From my work address about the watchdog.');
  expect((await h.gw.request('PUT', '/v1/admin/self-person', { identifier: 'paul@crapouillou.net' })).statusCode).toBe(200);
  ({ page, errors } = await signedInPage(h));
}, 600_000);

afterAll(async () => {
  await h?.close();
});

describe('an archive of list mail in the web UI', () => {
  it('relationships: an empty window offers the newest message, which shows the 2019 circle', async () => {
    await page.getByRole('link', { name: 'Relationships' }).click();
    await page.locator('.ranking li.empty', { hasText: 'Nobody in this window.' }).waitFor();
    await page.getByRole('button', { name: 'Count back from the newest message' }).click();
    await page.locator('.ranking li', { hasText: 'Thomas Bogendoerfer' }).waitFor();
    expect(await page.locator('.as-of').textContent()).toContain('2019-11-15');
    expect(await page.locator('.ranking').textContent()).not.toMatch(/open list|linux-mips/);
    await page.getByRole('button', { name: 'All time' }).click();
    await page.locator('.ranking li', { hasText: 'Thomas Bogendoerfer' }).waitFor();
  });

  it('"Also you?" claims the owner\'s other address', async () => {
    const other = page.locator('.other-addresses li', { hasText: 'paul.cercueil@analog.com' });
    await other.waitFor();
    await other.getByRole('button', { name: 'This is also me' }).click();
    await page.waitForFunction(() => document.querySelector('.other-addresses') === null);
    const people = (await h.gw.request('GET', '/search/people?q=paul&include_self=true')).json();
    expect(people.total).toBe(1);
    expect(people.results[0].emails.sort()).toEqual(['paul.cercueil@analog.com', 'paul@crapouillou.net']);
  });

  it('search: the list is a facet and the venue, not a person; the hint names families and list:', async () => {
    await page.goto(`${h.url}/#/search?q=watchdog`);
    const lists = page.locator('.facets', { hasText: 'Lists' });
    await lists.getByText('linux-mips').first().waitFor();
    expect(await page.locator('.facets').textContent()).not.toContain('open list:MIPS');
    await page.locator('.conversation .venue', { hasText: 'linux-mips' }).first().waitFor();
    expect(await page.locator('#search-syntax').textContent()).toMatch(/type:email.*file.*chat.*list:linux-mips/s);
    expect(errors).toEqual([]);
  });
});
