/**
 * The document page of an e-mail stored whole (issue 40 item 2), in Chromium: every line of the message is
 * on the page; quoted parts are folded and open on a click (and are open when an ask citation points into
 * them); a patch is a monospace block; signatures are dimmed; the stored text is data, never HTML.
 * Runs on both backends.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildEmailDocument } from '../../src/mail/document.ts';
import { parseCollectedMessage } from '../../src/mail/collected-message.ts';
import { NO_REDACTIONS } from '../../src/privacy/policy.ts';
import { generateListMail } from '../../bench/email/list-mail.ts';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

declare const document: any, getComputedStyle: any;

let h: UiHarness;
let page: Page;
let errors: string[];
const stored = new Map<string, { id: string; text: string }>();

async function ingestRaw(label: string, raw: Buffer) {
  const built = buildEmailDocument(await parseCollectedMessage(raw), { sourceType: 'email_local', prefix: 'email', redaction: NO_REDACTIONS });
  const res = await h.gw.request('POST', '/v1/ingest', built.document);
  expect(res.statusCode, res.body).toBe(202);
  stored.set(label, { id: res.json().doc_id, text: built.document.content.data });
}

const REPLY = Buffer.from(
  [
    'From: Iris Chen <iris@example.com>',
    'To: team@lists.example.org',
    'Subject: Re: [PATCH] fix the ROM base',
    'Date: Tue, 3 Mar 2026 09:00:00 +0000',
    'Message-ID: <ui-reply@example.com>',
    'Content-Type: text/plain; charset=utf-8',
    '',
    'On Mon, 2 Mar 2026, Ann Lee wrote:',
    '> The ROM is mapped at 0x1fc00000.',
    '> Does the <b>PlayStation 2</b> read-only memory need it?',
    '',
    'Yes: <script>alert(1)</script> it does, see the manual.',
    '',
    '> Should it be a define?',
    '',
    'Applied and queued for v5.4, thanks.',
    '',
    '-- ',
    'Iris Chen',
  ].join('\r\n'),
);

beforeAll(async () => {
  h = await startUiHarness();
  ({ page, errors } = await signedInPage(h));
  await ingestRaw('reply', REPLY);
  const patch = generateListMail({ patches: 3, repliesPerPatch: 0, seed: 42, domain: 'ui-mail.example' }).find((m) => m.shape === 'patch')!;
  await ingestRaw('patch', patch.raw);
}, 300_000);
afterAll(async () => h?.close());

/** The page's message text without the folds' summaries ("2 quoted lines"). */
const shownText = (p: Page) =>
  p.evaluate(() => {
    const el = document.querySelector('.mail-text').cloneNode(true);
    for (const s of el.querySelectorAll('summary')) s.remove();
    return el.textContent as string;
  });

describe('an e-mail stored whole on its document page', () => {
  it('every line is on the page; quotes folded until clicked; the answer after a quote shown; the signature dimmed', async () => {
    const { id, text } = stored.get('reply')!;
    await page.goto(`${h.url}/#/doc/${id}`);
    await page.locator('.mail-text').waitFor();
    expect(await shownText(page)).toBe(text);
    const folds = page.locator('details.part-quote');
    expect(await folds.count()).toBe(2);
    const quoted = page.locator('.mail-text').getByText('The ROM is mapped at 0x1fc00000.');
    expect(await quoted.isVisible()).toBe(false);
    expect(await page.locator('.mail-text').getByText('Applied and queued for v5.4, thanks.').isVisible()).toBe(true);
    await folds.first().locator('summary').click();
    expect(await quoted.isVisible()).toBe(true);
    expect(await folds.first().locator('summary').textContent()).toBe('2 quoted lines');
    // Text, never HTML: the tags are characters on the page, no element was made of them.
    expect(await page.locator('.mail-text b, .mail-text script').count()).toBe(0);
    expect(await page.locator('.mail-text').getByText('<script>alert(1)</script>', { exact: false }).isVisible()).toBe(true);
    const colour = (sel: string) => page.locator(sel).first().evaluate((el) => getComputedStyle(el).color as string);
    expect(await colour('.part-signature')).not.toBe(await colour('.part-own'));
    // The thread list excerpts the reply by its own words, not its attribution and quote.
    expect(await page.locator('ol.thread li.current > bdi').textContent()).toMatch(/^Yes: <script>/);
    expect(await axeViolations(page)).toEqual([]);
    expect(errors).toEqual([]);
  });

  it('a cited passage inside a quote opens its fold', async () => {
    const { id, text } = stored.get('reply')!;
    const start = text.indexOf('Should it be a define?');
    await page.goto(`${h.url}/#/doc/${id}?at=${start}-${start + 22}`);
    await page.locator('mark#cited').waitFor();
    expect(await page.locator('mark#cited').isVisible()).toBe(true);
    expect(await page.locator('details.part-quote').nth(1).getAttribute('open')).not.toBeNull();
  });

  it('a format-patch mail: the whole diff in a monospace block, the commit message as text', async () => {
    const { id, text } = stored.get('patch')!;
    await page.goto(`${h.url}/#/doc/${id}`);
    // Only a hash changes: wait for this message's page, not the previous one still on screen.
    await page.locator('.mail-text pre.part-patch').waitFor();
    expect(await shownText(page)).toBe(text);
    const patch = page.locator('pre.part-patch');
    expect(await patch.count()).toBe(1);
    expect(await patch.textContent()).toContain('diff --git a/');
    expect(await patch.isVisible()).toBe(true);
    const font = await patch.evaluate((el) => getComputedStyle(el).fontFamily as string);
    expect(font).toMatch(/mono/i);
    expect(errors).toEqual([]);
  });
});
