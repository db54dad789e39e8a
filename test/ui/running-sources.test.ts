/**
 * "Kept up to date" on the Sources page (issue 41) in Chromium: the sources an agent reports (PUT /v1/sources/status,
 * as the host agent does) with their state in words, how they run, the last error and how far behind they are;
 * Pause and Resume reach the API (GET /v1/coverage says paused) and the page shows the new state.
 */
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';

let h: UiHarness;
let page: Page;
let errors: string[];
const inbox = { collector: 'email_imap', source_type: 'email', source_account_id: 'dana', source_ref: 'INBOX' } as const;
const work = { collector: 'email_imap', source_type: 'email', source_account_id: 'work', source_ref: 'INBOX' } as const;

async function report(): Promise<void> {
  const now = Date.now();
  const r = await h.gw.request('PUT', '/v1/sources/status', {
    agent: 'laptop',
    sources: [
      {
        ...inbox,
        label: 'dana INBOX',
        state: 'watching',
        mode: 'IDLE',
        last_success_at: new Date(now - 60_000).toISOString(),
        newest_at_source: new Date(now - 3 * 3600_000).toISOString(),
        newest_stored: new Date(now - 3 * 3600_000).toISOString(),
        next_run_at: null,
        last_error: null,
      },
      {
        ...work,
        label: 'work INBOX',
        state: 'failed',
        mode: 'polling every 5m',
        last_success_at: null,
        newest_at_source: null,
        newest_stored: null,
        next_run_at: new Date(now + 300_000).toISOString(),
        last_error: 'IMAP login refused for work: check the app password',
      },
    ],
  });
  expect(r.statusCode, r.body).toBe(200);
}
async function pausedOf(identity: typeof inbox | typeof work): Promise<boolean> {
  const r = await h.gw.request('GET', `/v1/coverage?source=${coverageSourceId(identity)}&missing_limit=0`);
  return r.json().sources[0].paused;
}

beforeAll(async () => {
  h = await startUiHarness();
  ({ page, errors } = await signedInPage(h));
  await report();
}, 120_000);
afterAll(async () => {
  await h?.close();
});

describe('Sources page: kept up to date', () => {
  const row = (id: string) => page.locator(`table.running tr[data-source="${id}"]`);

  it('lists the running sources with their state, mode, error and lag', async () => {
    await page.goto(`${h.url}/#/sources`);
    await page.locator('#running-h').waitFor();
    const ok = row(coverageSourceId(inbox));
    expect(await ok.locator('td[data-label="State"]').textContent()).toMatch(/^Watching\s*IDLE$/);
    expect(await ok.locator('td[data-label="Newest stored"]').textContent()).toMatch(/up to date/);
    expect(await ok.locator('td[data-label="Next run"]').textContent()).toBe('on change');
    const bad = row(coverageSourceId(work));
    expect(await bad.locator('td[data-label="State"]').textContent()).toMatch(/Failing\s*polling every 5m\s*IMAP login refused for work: check the app password/);
    expect(await bad.locator('td[data-label="Last synced"]').textContent()).toBe('not yet');
  });

  it('pauses and resumes a source through the API', async () => {
    const ok = row(coverageSourceId(inbox));
    await page.getByRole('button', { name: 'Pause dana: INBOX' }).click();
    await ok.locator('.source-state.paused').waitFor();
    expect(await ok.locator('.source-state').textContent()).toBe('Paused');
    expect(await pausedOf(inbox)).toBe(true);
    expect(await pausedOf(work)).toBe(false);
    await page.getByRole('button', { name: 'Resume dana: INBOX' }).click();
    await page.getByRole('button', { name: 'Pause dana: INBOX' }).waitFor();
    expect(await pausedOf(inbox)).toBe(false);
    expect(errors).toEqual([]);
  });
});
