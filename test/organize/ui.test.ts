/**
 * Issue 44 in the web UI, in a real Chromium: tagging a selection of results, the sidebar's tags and saved
 * searches (with a count and "new since you last looked"), tags on a document and its conversation, the
 * syntax line naming tag:, stored text (a saved query that looks like HTML) staying text, and axe-core.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { noteBody } from '../helpers/gateway.ts';

declare const window: any;

let h: UiHarness;
let page: Page;
let errors: string[];
const ids: Record<string, string> = {};
const XSS_QUERY = 'invoice <img src=x onerror=window.__xss=1>';

async function ingest(body: Record<string, unknown>): Promise<string> {
  const res = await h.gw.request('POST', '/v1/ingest', body);
  expect(res.statusCode, res.body).toBe(202);
  return res.json().doc_id;
}

async function search(q: string) {
  await page.getByRole('searchbox').fill(q);
  await page.locator('#search-status').filter({ hasText: /\d+ documents?/ }).waitFor();
}

beforeAll(async () => {
  h = await startUiHarness();
  ids.a = await ingest(noteBody({ title: 'Boiler invoice', content: { data: 'Invoice for the boiler repair.' } }));
  ids.b = await ingest(noteBody({ title: 'Window invoice', content: { data: 'Invoice for the new window.' } }));
  ids.c = await ingest(noteBody({ title: 'Holiday', content: { data: 'Invoice-free week at the sea.' } }));
  ids.m = await ingest(
    noteBody({ source_type: 'email', title: 'Move', thread: { external_id: 'move-thread', title: 'Move' }, content: { data: 'The movers come on Monday.' } }),
  );
  ({ page, errors } = await signedInPage(h));
}, 180_000);

afterAll(async () => {
  await h?.close();
});

describe('organize in the web UI (issue 44)', () => {
  it('tags a selection of results and lists the tag with its count', async () => {
    await page.goto(`${h.url}/#/search`);
    await expect(page.locator('#search-syntax').textContent()).resolves.toContain('tag:finance/*');
    await search('boiler OR window');
    const picks = page.locator('.hit input.pick');
    expect(await picks.count()).toBe(2);
    await picks.nth(0).check();
    await picks.nth(1).check();
    await page.locator('.tag-selection input[name=tag]').fill('Home/Repairs');
    await page.locator('.tag-selection button[type=submit]').click();
    await page.locator('.organize .tags li', { hasText: 'home/repairs' }).waitFor();
    await expect(page.locator('.organize .tags li', { hasText: 'home/repairs' }).locator('.count').textContent()).resolves.toBe('2');
    const tagged = await h.gw.request('GET', '/v1/search?q=tag:home/repairs');
    expect(tagged.json().hits.map((x: any) => x.document_id).sort()).toEqual([ids.a, ids.b].sort());
    // The tag facet of the answer, and the sidebar's tag as a search.
    await page.locator('.organize .tags button', { hasText: 'home/repairs' }).click();
    await page.locator('#search-status').filter({ hasText: '2 documents' }).waitFor();
    await expect(page.getByRole('searchbox').inputValue()).resolves.toBe('tag:home/repairs');
  });

  it('saves a search, shows its count and what is new, and runs it', async () => {
    await search(XSS_QUERY);
    await page.locator('.organize button.save-search').click();
    await page.locator('.organize input[name=saved-name]').fill('bills');
    await page.locator('.organize form.save-search button[type=submit]').click();
    const item = page.locator('.organize .saved li', { hasText: 'bills' });
    await item.waitFor();
    await expect(item.textContent()).resolves.toMatch(/bills\s*3\s*3 new/);
    await ingest(noteBody({ title: 'Gas invoice', content: { data: 'Invoice for gas.' } }));
    await page.locator('.organize .saved button').first().click();
    await page.locator('#search-status').filter({ hasText: '4 documents' }).waitFor();
    await expect(page.getByRole('searchbox').inputValue()).resolves.toBe(XSS_QUERY);
    await page.locator('.organize .saved li', { hasText: /bills\s*4$/ }).waitFor();
    expect(await page.evaluate(() => window.__xss)).toBeUndefined();
    expect(await page.locator('.organize img').count()).toBe(0);
  });

  it("shows a document's tags and its conversation's, adds and removes them", async () => {
    await page.goto(`${h.url}/#/doc/${ids.m}`);
    const editor = page.locator('.tags-editor');
    await editor.locator('.hint', { hasText: 'No tags.' }).waitFor();
    await editor.locator('input[name=new-tag]').fill('moving');
    await editor.locator('input[type=checkbox]').check();
    await editor.locator('button[type=submit]').click();
    await editor.locator('li.conversation-tag', { hasText: 'moving' }).waitFor();
    await editor.locator('input[name=new-tag]').fill('todo');
    await editor.locator('input[type=checkbox]').uncheck();
    await editor.locator('button[type=submit]').click();
    await editor.locator('li.tag:not(.conversation-tag)', { hasText: 'todo' }).waitFor();
    const on = (await h.gw.request('GET', `/v1/tags/on?doc_id=${ids.m}`)).json();
    expect(on).toEqual({ document: [{ name: 'todo', origin: 'manual' }], conversation: [{ name: 'moving', origin: 'manual' }] });

    await editor.locator('input[name=new-tag]').fill('not valid!');
    await editor.locator('button[type=submit]').click();
    await editor.locator('.error').waitFor();
    await expect(editor.locator('.error').textContent()).resolves.toMatch(/letter or digit/);

    await editor.getByRole('button', { name: 'Remove tag todo' }).click();
    await editor.locator('li.tag', { hasText: 'todo' }).waitFor({ state: 'detached' });
    expect((await h.gw.request('GET', `/v1/tags/on?doc_id=${ids.m}`)).json().document).toEqual([]);
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });
});
