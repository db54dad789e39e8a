/**
 * An e-mailed SVG never runs script on memex's origin (issue 47 item 1), in Chromium. The message
 * arrives as the email collectors send it: metadata.attachments with the sender's Content-Type as
 * `mime_type`, and each attachment uploaded through POST /v1/ingest/file with that Content-Type on its
 * part. The types are the ones Chromium reads as SVG although they are not `image/svg+xml`. The SVG's
 * script, if it ever ran on the app's origin, would leave a mark in the origin's localStorage and ask
 * for /svg-script-ran; in its own tab it marks its document with the origin it ran on. Every way the page offers to open the file is tried, and the addresses of the
 * file are opened in tabs of their own.
 */
import crypto from 'node:crypto';
import type { Page, Request } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { fileUpload } from '../files/multipart.ts';
import { makePng } from '../files/fixtures.ts';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const document: any, localStorage: any;

const HOSTILE_TYPES = ['image/svg+xml x', 'image/svg+xml,', 'image/svg+xml ,', 'image/svg+xml(x)'];
const MESSAGE_ID = '<svg-2026@sender.example>';
const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** An SVG whose script marks the origin it runs on. Each differs (its own stored file). */
function hostileSvg(i: number): Buffer {
  return Buffer.from(
    `<svg xmlns="http://www.w3.org/2000/svg" width="200" height="100"><rect width="200" height="100" fill="#c00"/>` +
      `<script>document.documentElement.setAttribute('data-ran', self.origin); localStorage.setItem('svg-ran-${i}', self.origin); fetch('/svg-script-ran?i=${i}');</script></svg>\n`,
  );
}

let h: UiHarness;
let page: Page;
let errors: string[];
let messageId: string;
const svgs = HOSTILE_TYPES.map((_, i) => hostileSvg(i));
const png = makePng(64, 48);
const marks: string[] = [];
/** The origins an SVG's script ran on, as its tabs said. */
const ranOn: string[] = [];

/** The origin a tab's script ran on, if one ran; an opaque origin (the sandbox) reads as 'null'. */
async function scriptRanIn(tab: Page): Promise<void> {
  const ran = await tab.evaluate(() => document.documentElement?.getAttribute('data-ran') ?? null).catch(() => null);
  if (ran !== null) ranOn.push(ran);
}

beforeAll(async () => {
  h = await startUiHarness({ files: {} });
  const attachments = HOSTILE_TYPES.map((type, i) => ({
    index: i,
    kind: 'image',
    role: 'attachment',
    mime_type: type,
    size_bytes: svgs[i].length,
    filename: `chart-${i}.svg`,
    sha256: sha(svgs[i]),
  }));
  // And a real photo, which still opens in the page.
  attachments.push({ index: 4, kind: 'image', role: 'attachment', mime_type: 'image/png', size_bytes: png.length, filename: 'photo.png', sha256: sha(png) });
  const res = await h.gw.request('POST', '/v1/ingest', {
    source_type: 'email',
    source_id: 'mail-svg-1',
    title: 'Quarterly charts',
    content: { data: 'The charts are attached.' },
    content_timestamp: '2026-11-03T09:00:00Z',
    people: [{ identifier: 'charts@sender.example', role: 'sender' }],
    metadata: { message_id: MESSAGE_ID, attachments },
  });
  expect(res.statusCode, res.body).toBe(202);
  messageId = res.json().doc_id;
  const uploads: [Buffer, string, string][] = [...svgs.map((b, i) => [b, `chart-${i}.svg`, HOSTILE_TYPES[i]] as [Buffer, string, string]), [png, 'photo.png', 'image/png']];
  for (const [bytes, filename, type] of uploads) {
    const body = fileUpload({ filename, source: 'email', message_id: MESSAGE_ID, path: `email/${filename}` }, bytes, filename, type);
    const up = await h.gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: body.payload, headers: { ...body.headers, authorization: `Bearer ${TEST_TOKEN}` } });
    expect(up.statusCode, up.body).toBeLessThan(300);
  }
  ({ page, errors } = await signedInPage(h));
  page.context().on('request', (r: Request) => {
    if (r.url().includes('/svg-script-ran')) marks.push(r.url());
  });
}, 180_000);

afterAll(async () => {
  await h?.close();
  await shutdownExtraction();
});

/**
 * Opens `url` in a new tab from the app's page, as a person does with "Open image in new tab" or a
 * link (a navigation the page starts, which takes a blob: to the app's origin), and waits until it
 * has loaded: an SVG's inline script runs while it is parsed, before 'load'.
 */
async function openFromPage(url: string): Promise<void> {
  const opened = page.context().waitForEvent('page');
  await page.evaluate((u: string) => {
    const a = document.createElement('a');
    a.href = u;
    a.target = '_blank';
    document.body.appendChild(a);
    a.click();
    a.remove();
  }, url);
  const tab = await opened;
  await tab.waitForLoadState('load').catch(() => undefined);
  await scriptRanIn(tab);
  await tab.close();
}

/**
 * Opens `url` as the browser itself does (typed into the address bar of a new tab, or "Open image in
 * new tab"): nothing of the page's CSP goes with it. A download aborts the navigation.
 */
async function openTyped(url: string): Promise<void> {
  const tab = await page.context().newPage();
  await tab.goto(url, { waitUntil: 'load' }).catch(() => undefined);
  await scriptRanIn(tab);
  await tab.close();
}

async function originMarks(): Promise<string[]> {
  await page.goto(`${h.url}/#/doc/${messageId}`);
  return page.evaluate(() => Object.keys(localStorage).filter((k: string) => k.startsWith('svg-ran')));
}

describe('an SVG attachment with a hostile type', () => {
  it('is listed as application/octet-stream, with no thumbnail and no "View the image"', async () => {
    await page.goto(`${h.url}/#/doc/${messageId}`);
    await page.locator('.attachments li').nth(4).waitFor();
    for (let i = 0; i < HOSTILE_TYPES.length; i++) {
      const item = page.locator('.attachments li', { has: page.locator('strong', { hasText: `chart-${i}.svg` }) });
      expect(await item.locator('.meta').first().textContent()).toContain('application/octet-stream');
      expect(await item.getByRole('button', { name: /View the image/ }).count()).toBe(0);
      expect(await item.locator('img').count()).toBe(0);
    }
    // The photo is still shown in the page, from bytes the server typed.
    await page.getByRole('button', { name: 'View the image: photo.png' }).click();
    await page.waitForFunction(() => document.querySelector('.image-viewer img.full')?.complete);
    const shown = await page.locator('.image-viewer img.full').evaluate((i: any) => [i.naturalWidth, i.naturalHeight, i.src]);
    expect(shown.slice(0, 2)).toEqual([64, 48]);
    expect(shown[2]).toBe(`${h.url}/v1/files/${sha(png)}/image`);
    expect(errors).toEqual([]);
  });

  it('runs no script on the origin, whichever way it is opened', async () => {
    await page.goto(`${h.url}/#/doc/${messageId}`);
    await page.locator('.attachments li').nth(4).waitFor();
    // Whatever the page shows of each file, opened as a tab of its own (an image's address, a link).
    for (let i = 0; i < HOSTILE_TYPES.length; i++) {
      const item = page.locator('.attachments li', { has: page.locator('strong', { hasText: `chart-${i}.svg` }) });
      const view = item.getByRole('button', { name: /View the image/ });
      if (await view.count()) {
        await view.click();
        await item.locator('.image-viewer img, [role="alert"]').first().waitFor();
      }
      const sources = await item.locator('img').evaluateAll((imgs: any[]) => imgs.map((img) => img.src));
      for (const src of sources) {
        await openTyped(src); // "Open image in new tab": the browser navigates, not the page
        await openFromPage(src);
      }
    }
    // The file's addresses, typed into the address bar or followed from the page.
    for (const svg of svgs) {
      await openTyped(`${h.url}/v1/files/${sha(svg)}`);
      for (const suffix of ['/image', '/thumbnail']) {
        await openTyped(`${h.url}/v1/files/${sha(svg)}${suffix}`);
        await openFromPage(`${h.url}/v1/files/${sha(svg)}${suffix}`);
      }
    }
    expect(ranOn.filter((o) => o === h.url)).toEqual([]);
    expect(marks).toEqual([]);
    expect(await originMarks()).toEqual([]);
  });

  it('is served sandboxed and never typed as SVG', async () => {
    for (const svg of svgs) {
      const file = await h.gw.request('GET', `/v1/files/${sha(svg)}`);
      expect(file.statusCode).toBe(200);
      expect(file.headers['content-type']).toBe('application/octet-stream');
      expect(file.headers['content-disposition']).toMatch(/^attachment;/);
      expect(file.headers['x-content-type-options']).toBe('nosniff');
      expect(file.headers['content-security-policy']).toMatch(/^sandbox;/);
      const image = await h.gw.request('GET', `/v1/files/${sha(svg)}/image`);
      expect(image.statusCode).toBe(404);
    }
    const photo = await h.gw.request('GET', `/v1/files/${sha(png)}/image`);
    expect(photo.statusCode).toBe(200);
    expect(photo.headers['content-type']).toBe('image/png');
    expect(photo.headers['content-disposition']).toMatch(/^inline;/);
    expect(photo.headers['x-content-type-options']).toBe('nosniff');
    expect(photo.headers['content-security-policy']).toMatch(/^sandbox;/);
    expect(photo.rawPayload).toEqual(png);
  });
});
