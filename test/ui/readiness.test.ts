/**
 * The web UI in a real Chromium while the server is still preparing (issue 34): a search typed
 * before the index is read shows "Preparing the index (n %)" instead of empty results and is
 * answered once the index is ready; and while the embedding queue has not reached the recent past,
 * a line says how much of it is searchable by meaning. The index build is held at its first page of
 * documents (a real database underneath) so the state can be seen.
 */
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.ts';
import type { Database } from '../../src/db/types.ts';
import { SignInCodes } from '../../src/gateway/ui.ts';
import { createSearch, type Search } from '../../src/search/search.ts';
import { buildUi, CHROMIUM, CHROMIUM_ARGS } from '../helpers/browser.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { buildTestGateway, noteBody, TEST_TOKEN, testConfig } from '../helpers/gateway.ts';

let testDb: TestDatabase;
let browser: Browser;
let search: Search;
let app: Awaited<ReturnType<typeof buildTestGateway>>;
let url: string;
let release: () => void = () => undefined;

beforeAll(async () => {
  testDb = await createTestDatabase();
  const gate = new Promise<void>((resolve) => (release = resolve));
  // The index build reads documents a page at a time; its first page waits for the gate.
  const held: Database = Object.create(testDb.db, {
    query: {
      value: async (sql: string, params?: unknown[], opts?: unknown) => {
        if (/ORDER BY d\.doc_id LIMIT/.test(sql)) await gate;
        return testDb.db.query(sql, params, opts as never);
      },
    },
  });
  search = createSearch({ db: held, beforeIndexReady: 'refuse' });
  const config = testConfig();
  app = await buildTestGateway({
    config,
    db: testDb.db,
    catalog: new Catalog(testDb.db, { phoneRegion: config.defaultPhoneRegion }),
    search,
    uiDir: await buildUi(),
    signInCodes: new SignInCodes(),
  });
  url = await app.listen({ port: 0, host: '127.0.0.1' });
  const res = await app.inject({
    method: 'POST',
    url: '/v1/ingest',
    headers: { authorization: `Bearer ${TEST_TOKEN}` },
    payload: noteBody({
      source_id: 'lighthouse',
      title: 'Lighthouse keeper',
      content: { data: 'The lighthouse keeper retires in June.' },
      content_timestamp: new Date(Date.now() - 86_400_000).toISOString(),
    }),
  });
  expect(res.statusCode, res.body).toBe(202);
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  release();
  await browser?.close();
  await app?.close();
  search?.close();
  await testDb?.drop();
});

describe(`the search page while the server prepares (${backend})`, () => {
  it('says "Preparing the index (n %)" instead of empty results, then shows the hits; and how much is searchable by meaning', async () => {
    const page = await (await browser.newContext()).newPage();
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(`${url}/`);
    await page.getByLabel('Access token').fill(TEST_TOKEN);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('searchbox').fill('lighthouse');
    const status = page.locator('#search-status');
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toMatch(/^Preparing the index \(\d+ %\)…$/);
    expect(await page.locator('.hits .empty').count()).toBe(0);
    // Nothing is embedded yet: the recent past is not searchable by meaning, and the page says so.
    await expect.poll(() => page.locator('.meaning-note').textContent(), { timeout: 30_000 }).toMatch(
      /Meaning search covers 0 % of the last 30 days and 0 % of the last year so far/,
    );

    release();
    await expect.poll(() => status.textContent(), { timeout: 30_000 }).toBe('1 document');
    expect(await page.locator('.hits a.hit-link').allTextContents()).toEqual(['Lighthouse keeper']);
    expect(errors).toEqual([]);
  });
});
