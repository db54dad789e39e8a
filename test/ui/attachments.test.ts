/**
 * Attachments and previews in Chromium (issue 35 items 2 and 3), on both backends. An email arrives the
 * way the email collectors send it: the message through POST /v1/ingest (its metadata.attachments
 * entries carry `sha256` at the top), each attachment through POST /v1/ingest/file with the message's
 * Message-ID. Its document page links every attachment to its download and to its own document (which
 * links back); images and PDFs show thumbnails there and in results; a PDF opens in the page (pdf.js
 * and its worker from the app's own origin, under the page's CSP), and so does an image.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { makePng, makeTextPdf } from '../files/fixtures.ts';
import { fileUpload } from '../files/multipart.ts';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const document: any;

const MESSAGE_ID = '<inv-2026-11@harbour-plumbing.example>';
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

let h: UiHarness;
let page: Page;
let errors: string[];
const consoleProblems: string[] = [];
const foreignRequests: string[] = [];
let pdf: Buffer;
let png: Buffer;
let messageId: string;
let pdfDocId: string;

async function upload(bytes: Buffer, filename: string, mime: string, meta: Record<string, unknown>): Promise<string> {
  const body = fileUpload({ filename, ...meta }, bytes, filename, mime);
  const res = await h.gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
  expect(res.statusCode, res.body).toBeLessThan(300);
  return res.json().doc_id;
}

/** Loaded thumbnails (the image arrived and decoded) among the elements `selector` finds. */
async function loadedThumbs(selector: string): Promise<number> {
  await page.waitForFunction(
    (sel: string) => [...document.querySelectorAll(sel)].every((i: any) => i.complete),
    selector,
  );
  return page.evaluate((sel: string) => [...document.querySelectorAll(sel)].filter((i: any) => i.complete && i.naturalWidth > 0).length, selector);
}

beforeAll(async () => {
  h = await startUiHarness({ files: {} });
  pdf = await makeTextPdf([['Invoice 2026-11 from Harbour Plumbing', 'Boiler service, 180 EUR'], ['Page two: payment terms']]);
  png = makePng(640, 480);
  const res = await h.gw.request('POST', '/v1/ingest', {
    source_type: 'email',
    source_id: 'mail-inv-1',
    title: 'Your invoice for the boiler service',
    content: { data: 'Dear customer, please find the invoice and a photo of the boiler attached.' },
    content_timestamp: '2026-11-02T09:00:00Z',
    people: [{ identifier: 'billing@harbour-plumbing.example', role: 'sender', display_name: 'Harbour Plumbing' }],
    metadata: {
      message_id: MESSAGE_ID,
      attachments: [
        { index: 0, kind: 'pdf', role: 'attachment', mime_type: 'application/pdf', size_bytes: pdf.length, filename: 'inv.pdf', sha256: sha(pdf) },
        { index: 1, kind: 'image', role: 'attachment', mime_type: 'image/png', size_bytes: png.length, filename: 'boiler.png', sha256: sha(png) },
      ],
    },
  });
  expect(res.statusCode, res.body).toBe(202);
  messageId = res.json().doc_id;
  const attachment = { source: 'email', message_id: MESSAGE_ID };
  pdfDocId = await upload(pdf, 'inv.pdf', 'application/pdf', { ...attachment, path: 'email/inv.pdf' });
  await upload(png, 'boiler.png', 'image/png', { ...attachment, path: 'email/boiler.png' });
  ({ page, errors } = await signedInPage(h));
  page.on('console', (m) => {
    if (/Content.Security.Policy|Refused to/i.test(m.text())) consoleProblems.push(m.text());
  });
  page.on('request', (r) => {
    if (!r.url().startsWith(h.url) && !/^(data|blob):/.test(r.url())) foreignRequests.push(r.url());
  });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await shutdownExtraction();
});

describe('attachments of an email', () => {
  it('each has a download and a link to its own document, which links back to the message', async () => {
    await page.goto(`${h.url}/#/doc/${messageId}`);
    await page.locator('.attachments li').nth(1).waitFor();
    expect(await page.locator('.attachments strong').allTextContents()).toEqual(['inv.pdf', 'boiler.png']);
    for (const [name, bytes] of [['inv.pdf', pdf], ['boiler.png', png]] as const) {
      const link = page.getByRole('link', { name: `Download ${name}` });
      expect(await link.getAttribute('href')).toBe(`/v1/files/${sha(bytes)}`);
      const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
      expect(download.suggestedFilename()).toBe(name);
      expect(fs.readFileSync((await download.path())!)).toEqual(bytes);
    }
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Open as a document: inv.pdf' }).click();
    await page.waitForURL(new RegExp(`#/doc/${pdfDocId}`));
    await page.locator('pre.text', { hasText: 'Harbour Plumbing' }).waitFor();
    const back = page.locator('dt', { hasText: 'Attached to' }).locator('xpath=following-sibling::dd[1]').getByRole('link');
    expect(await back.textContent()).toBe('Your invoice for the boiler service');
    await back.click();
    await page.waitForURL(new RegExp(`#/doc/${messageId}`));
    await page.locator('.attachments li').first().waitFor();
    expect(errors).toEqual([]);
  });
});

describe('previews', () => {
  it('shows thumbnails of the PDF and the image on the document page and in results', async () => {
    await page.goto(`${h.url}/#/doc/${messageId}`);
    await page.locator('.attachments img.thumb').nth(1).waitFor();
    expect(await loadedThumbs('.attachments img.thumb')).toBe(2);
    const size = await page.evaluate(() => [...document.querySelectorAll('.attachments img.thumb')].map((i: any) => Math.max(i.naturalWidth, i.naturalHeight)));
    expect(Math.max(...size)).toBeLessThanOrEqual(320);

    await page.goto(`${h.url}/#/search?q=${encodeURIComponent('Harbour Plumbing boiler')}`);
    await page.locator('.hit').first().waitFor();
    const pdfHit = page.locator('.hit', { has: page.locator(`a[href="#/doc/${pdfDocId}"]`) });
    await pdfHit.locator('img.thumb').waitFor();
    expect(await loadedThumbs('.hit img.thumb')).toBeGreaterThanOrEqual(1);
    // The message itself (no file of its own) has none.
    expect(await page.locator('.hit', { has: page.locator(`a.hit-link[href="#/doc/${messageId}"]`) }).locator('img.thumb').count()).toBe(0);
    // Newest documents, with an empty box: the files show theirs too.
    // The hash changes within the page: until the newest list replaces the query's hits, the old
    // ones (one thumbnail) are still there; wait for the second thumbnail of the new list.
    await page.goto(`${h.url}/#/search`);
    await page.locator('.hit img.thumb').nth(1).waitFor();
    expect(await loadedThumbs('.hit img.thumb')).toBe(2);
    expect(errors).toEqual([]);
  });

  it('opens a PDF in the page with pdf.js from its own origin, page by page, and an image', async () => {
    const worker: string[] = [];
    page.on('response', (r) => {
      if (/\/assets\/pdf\.worker[^/]*\.mjs$/.test(r.url())) worker.push(`${r.status()} ${r.headers()['content-type']}`);
    });
    await page.goto(`${h.url}/#/doc/${messageId}`);
    await page.getByRole('button', { name: 'View the PDF: inv.pdf' }).click();
    const viewer = page.getByRole('figure', { name: 'PDF: inv.pdf' });
    await viewer.locator('canvas.pdf-page[data-rendered="1"]').waitFor();
    expect(await viewer.locator('.pdf-page-number').textContent()).toBe('Page 1 of 2');
    // Text drawn: the canvas holds dark pixels on white.
    const dark = () =>
      viewer.locator('canvas.pdf-page').evaluate((c: any) => {
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let n = 0;
        for (let i = 0; i < d.length; i += 4) if (d[i] < 100 && d[i + 3] > 0) n++;
        return n;
      });
    expect(await dark()).toBeGreaterThan(100);
    expect((await viewer.locator('canvas.pdf-page').boundingBox())!.width).toBeGreaterThan(300);
    await viewer.getByRole('button', { name: 'Next page' }).click();
    await viewer.locator('canvas.pdf-page[data-rendered="2"]').waitFor();
    expect(await viewer.locator('.pdf-page-number').textContent()).toBe('Page 2 of 2');
    expect(await dark()).toBeGreaterThan(50);
    expect(worker).toEqual(['200 text/javascript; charset=utf-8']);
    // An image opens in the page at its own size.
    await page.getByRole('button', { name: 'View the image: boiler.png' }).click();
    const full = page.locator('.image-viewer img.full');
    await full.waitFor();
    await page.waitForFunction(() => document.querySelector('.image-viewer img.full')?.complete);
    expect(await full.evaluate((i: any) => [i.naturalWidth, i.naturalHeight])).toEqual([640, 480]);
    expect(await full.getAttribute('alt')).toBe('boiler.png');
    expect(await axeViolations(page)).toEqual([]);
    expect(consoleProblems).toEqual([]);
    expect(foreignRequests).toEqual([]);
    expect(errors).toEqual([]);
  });

  it("a long PDF's own page: the file and its viewer first, the extracted text folded below", async () => {
    const pages = Array.from({ length: 12 }, (_, i) =>
      Array.from({ length: 8 }, (_, j) => `Page ${i + 1} line ${j + 1}: the tenancy agreement clause on repairs and rent.`),
    );
    const long = await makeTextPdf(pages);
    const id = await upload(long, 'tenancy.pdf', 'application/pdf', { path: 'docs/tenancy.pdf' });
    await page.goto(`${h.url}/#/doc/${id}`);
    const view = page.getByRole('button', { name: 'View the PDF: tenancy.pdf' });
    await view.waitFor();
    const folded = page.locator('details.file-text');
    expect(await folded.getAttribute('open')).toBeNull();
    const y = async (l: ReturnType<Page['locator']>) => (await l.boundingBox())!.y;
    expect(await y(view)).toBeLessThan(await y(folded));
    expect(await page.getByText('Page 12 line 8', { exact: false }).isVisible()).toBe(false);
    await folded.locator('summary').click();
    expect(await page.getByText('Page 12 line 8', { exact: false }).isVisible()).toBe(true);
    expect(errors).toEqual([]);
  });
});
