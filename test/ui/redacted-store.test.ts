/**
 * A store that holds mail stored redacted (by a memex before issue 30) says so on the Sources page, from
 * GET /v1/status; once the same mail is imported again (the original as a new version) the note is gone.
 * In Chromium, on both backends.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

let h: UiHarness;
let page: Page;
let errors: string[];

const mail = (text: string) => ({
  source_type: 'email_local',
  source_id: 'email:claim-1@dental-care.example',
  title: 'Your claim',
  content: { mime_type: 'text/plain', data: text },
  content_timestamp: '2019-04-17T06:30:00Z',
});

beforeAll(async () => {
  h = await startUiHarness();
  ({ page, errors } = await signedInPage(h));
});
afterAll(async () => {
  await h?.close();
});

describe('the Sources page of a store holding redacted mail', () => {
  it('says how much is redacted and how to get the originals back; the note goes once they are back', async () => {
    const old = await h.gw.request('POST', '/v1/ingest', mail('Write to [EMAIL_REDACTED] or call [PHONE_REDACTED] about claim CLM-2026-04417.'));
    expect(old.statusCode, old.body).toBe(202);
    await page.goto(`${h.url}/#/sources`);
    const note = page.getByRole('region', { name: 'Redacted text in the store' });
    await note.waitFor();
    const text = (await note.textContent())!;
    expect(text).toContain('1 document was stored');
    expect(text).toContain('1 email_local');
    expect(text).toContain('memex import mail PATH');
    expect(await axeViolations(page)).toEqual([]);

    // The original arrives (what a re-import sends): a new version, and the page no longer warns.
    const original = await h.gw.request('POST', '/v1/ingest', mail('Write to jane.doe@example.org or call +44 20 7946 0958 about claim CLM-2026-04417.'));
    expect(original.statusCode, original.body).toBe(202);
    // A reload, not two hash changes in a row: under load the router could see only the last one (the page it
    // already showed) and keep the status it had read before.
    await page.reload();
    await page.locator('.dropzone').waitFor();
    await page.getByRole('heading', { name: 'Embedding queue' }).waitFor();
    expect(await page.getByRole('heading', { name: 'Redacted text in the store' }).count()).toBe(0);
    expect(errors).toEqual([]);
  });
});
