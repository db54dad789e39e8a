/**
 * "View original" on a message's document page (issue 40 item 1), in Chromium: a message stored with its original
 * (POST /v1/ingest, then POST /v1/ingest/originals as the collectors send it) links to it, and the link downloads
 * the bytes as collected, never rendered as a page; a document without one shows no such link.
 */
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';

const RAW = [
  'From: Ana Rivera <ana@rivera.example>',
  'To: me@home.example',
  'Subject: Harbour plans',
  'Message-ID: <harbour-1@rivera.example>',
  'Date: Mon, 02 Nov 2026 09:00:00 +0000',
  '',
  'The otter count at the harbour was 7.',
  '<script>alert(1)</script>',
  '',
].join('\r\n');

let h: UiHarness;
let page: Page;
let withOriginal: string;
let without: string;

beforeAll(async () => {
  h = await startUiHarness({ files: {} });
  const doc = (source_id: string) =>
    h.gw.request('POST', '/v1/ingest', {
      source_type: 'email_local', source_id, title: 'Harbour plans', content: { data: 'The otter count at the harbour was 7.' },
      content_timestamp: '2026-11-02T09:00:00Z', metadata: { message_id: `${source_id}@rivera.example` },
    });
  withOriginal = (await doc('email:harbour-1')).json().doc_id;
  without = (await doc('email:harbour-2')).json().doc_id;
  const form = new FormData();
  form.append('meta', JSON.stringify({ doc_id: withOriginal, kind: 'rfc822' }));
  form.append('original', new Blob([RAW], { type: 'message/rfc822' }), 'message.eml');
  const res = await fetch(`${h.url}/v1/ingest/originals`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body: form });
  expect(res.status).toBe(202);
  ({ page } = await signedInPage(h));
}, 180_000);

afterAll(async () => {
  await h?.close();
});

describe('a message document page', () => {
  it('links to the original, which downloads byte for byte', async () => {
    await page.goto(`${h.url}/#/doc/${withOriginal}`);
    const link = page.getByRole('link', { name: 'View original' });
    await link.waitFor();
    const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
    expect(download.suggestedFilename()).toMatch(/\.eml$/);
    expect(fs.readFileSync((await download.path())!).equals(Buffer.from(RAW))).toBe(true);
  });

  it('shows no link when no original is kept', async () => {
    await page.goto(`${h.url}/#/doc/${without}`);
    await page.locator('#doc-title').waitFor();
    await page.locator('.document .facts').waitFor();
    expect(await page.getByRole('link', { name: 'View original' }).count()).toBe(0);
  });
});
