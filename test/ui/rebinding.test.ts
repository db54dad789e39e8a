/**
 * DNS rebinding in a real Chromium (issue 47 item 2): Chromium is told that evil.example resolves to 127.0.0.1
 * (--host-resolver-rules, what a rebinding DNS server makes it believe), so a tab at http://evil.example:<port>/
 * reaches the gateway. The gateway refuses it (421) instead of serving the web UI and its data to that origin.
 * The UI under its own names keeps working, signing in (a POST with the page's Origin) included.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CHROMIUM, CHROMIUM_ARGS, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';

let h: UiHarness;
let rebound: Browser;
let port: string;
beforeAll(async () => {
  h = await startUiHarness();
  port = new URL(h.url).port;
  rebound = await chromium.launch({ executablePath: CHROMIUM, args: [...CHROMIUM_ARGS, '--host-resolver-rules=MAP evil.example 127.0.0.1'] });
}, 180_000);
afterAll(async () => {
  await rebound?.close();
  await h?.close();
});

describe('the web UI under a rebound name', () => {
  it('is refused with 421: no page, no health answer, no session for evil.example', async () => {
    const page = await (await rebound.newContext()).newPage();
    for (const path of ['/', '/v1/healthz', '/v1/session']) {
      const res = await page.goto(`http://evil.example:${port}${path}`);
      expect(res?.status(), path).toBe(421);
      expect(await page.textContent('body'), path).toContain('does not answer to the host name');
    }
    await page.context().close();
  });

  it('works under its own names: sign in and search at http://memex.localhost:<port>/', async () => {
    const page = await (await rebound.newContext()).newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const refused: string[] = [];
    page.on('response', (r) => {
      if (r.status() === 403 || r.status() === 421) refused.push(`${r.status()} ${r.url()}`);
    });
    await page.goto(`http://memex.localhost:${port}/`);
    await page.getByLabel('Access token').fill(TEST_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('searchbox').waitFor();
    expect(refused).toEqual([]);
    expect(errors).toEqual([]);
    await page.context().close();
  });
});
