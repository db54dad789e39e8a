/**
 * The web UI in a real Chromium: sign-in (password field and the one-time link), search as you
 * type with facets, dates and the keyboard, the document view (people, versions, thread), stored
 * text that looks like HTML staying text, the CSP, axe-core, and every data route refusing
 * requests without the token. Runs on both backends (MEMEX_TEST_BACKEND).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeViolations, signedInPage, startUiHarness, type UiHarness } from '../helpers/browser.ts';
import { noteBody, TEST_TOKEN } from '../helpers/gateway.ts';

// Functions passed to page.evaluate run in the browser, where these exist.
declare const window: any, document: any, location: any, sessionStorage: any, localStorage: any;

const XSS_TITLE = '<img src=x onerror="window.__xss=1">Quarterly zephyr report';
const XSS_BODY = 'zephyr numbers <script>window.__xss=2</script> and <b>bold</b> claims';

let h: UiHarness;
let page: Page;
let errors: string[];
let emailId: string;
let versionedId: string;

async function ingest(body: Record<string, unknown>): Promise<string> {
  const res = await h.gw.request('POST', '/v1/ingest', body);
  expect(res.statusCode, res.body).toBe(202);
  return res.json().doc_id;
}

function email(i: number, text: string, from: string, name: string) {
  return noteBody({
    source_type: 'email',
    source_id: `mail-${i}`,
    title: `Lisbon trip ${i}`,
    content: { mime_type: 'text/plain', data: text },
    content_timestamp: `2026-0${i}-10T09:00:00Z`,
    thread: { external_id: 'lisbon-thread', title: 'Lisbon trip' },
    people: [
      { identifier: from, role: 'sender', display_name: name },
      { identifier: 'me@example.com', role: 'recipient', display_name: 'Me' },
    ],
  });
}

beforeAll(async () => {
  h = await startUiHarness();
  await ingest(email(1, 'Shall we take the train to Lisbon in spring?', 'alice@example.com', 'Alice Liddell'));
  emailId = await ingest(email(2, 'Yes, the night train to Lisbon sounds lovely.', 'bob@example.com', 'Bob Stone'));
  await ingest(email(3, 'Booked two seats on the Lisbon train.', 'alice@example.com', 'Alice Liddell'));
  await ingest(noteBody({ source_id: 'note-lisbon', title: 'Packing list', content: { data: 'Lisbon: sunscreen, adapter, train tickets.' }, content_timestamp: '2025-11-02T08:00:00Z' }));
  await ingest(noteBody({ source_id: 'xss', title: XSS_TITLE, content: { data: XSS_BODY } }));
  await ingest(noteBody({
    source_type: 'reminder', source_id: 'passport', title: 'Renew the passport', content: { data: 'Renew the passport before the summer.' },
    metadata: { attachments: [{ index: 0, kind: 'image', mime_type: 'image/png', filename: 'photo.png', size_bytes: 2048 }] },
  }));
  versionedId = await ingest(noteBody({ source_id: 'versioned', title: 'Garden plan', content: { data: 'Plant tomatoes (first draft).' } }));
  const patch = await h.gw.request('PATCH', `/v1/documents/${versionedId}`, { metadata: {}, text: 'Plant tomatoes and basil (second draft).' });
  expect(patch.statusCode, patch.body).toBe(200);
  ({ page, errors } = await signedInPage(h));
});

afterAll(async () => {
  await h?.close();
});

async function search(q: string) {
  const box = page.getByRole('searchbox');
  await box.fill(q);
  await page.locator('#search-status').filter({ hasText: /\d+ documents?/ }).waitFor();
}

function hitTitles() {
  return page.locator('.hit-link').allTextContents();
}

describe('serving and sign-in', () => {
  it('serves the page with a CSP that allows no inline script, and assets from the gateway itself', async () => {
    const res = await fetch(`${h.url}/`);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toContain('unsafe-inline');
    expect(csp).not.toContain('unsafe-eval');
    const html = await res.text();
    const scripts = [...html.matchAll(/<script[^>]*src="([^"]+)"/g)].map((m) => m[1]);
    expect(scripts.length).toBeGreaterThan(0);
    for (const src of scripts) expect(src.startsWith('/assets/')).toBe(true);
    expect(html).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/); // no inline script
  });

  it('refuses every /v1 data route without the token', async () => {
    const spec = (await (await fetch(`${h.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
    // Signing in takes the token (or a one-time code) in its body.
    // Probes (liveness, readiness) answer anyone, and say nothing about the data.
    const open = new Set(['get /v1/healthz', 'get /v1/readyz', 'post /v1/session', 'post /v1/session/redeem']);
    let checked = 0;
    for (const [p, methods] of Object.entries<Record<string, unknown>>(spec.paths)) {
      if (!p.startsWith('/v1/')) continue;
      const url = h.url + p.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-000000000000');
      for (const method of Object.keys(methods)) {
        if (open.has(`${method} ${p}`)) continue;
        const res = await fetch(url, { method: method.toUpperCase() });
        expect(res.status, `${method} ${p}`).toBe(401);
        const wrong = await fetch(url, { method: method.toUpperCase(), headers: { authorization: 'Bearer nope' } });
        expect([401, 403], `${method} ${p} with a wrong token`).toContain(wrong.status);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(20);
  });

  it('rejects a wrong token in the password field, with a message', async () => {
    const context = await h.browser.newContext();
    const p = await context.newPage();
    await p.goto(`${h.url}/`);
    expect(await p.getByLabel('Access token').getAttribute('type')).toBe('password');
    await p.getByLabel('Access token').fill('not-the-token');
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('alert').filter({ hasText: 'not valid' }).waitFor();
    expect(await p.getByRole('searchbox').count()).toBe(0);
    await context.close();
  });

  it('signs in once through the one-time link, which leaves no code in the address', async () => {
    const code = h.codes.issue();
    const context = await h.browser.newContext();
    const p = await context.newPage();
    await p.goto(`${h.url}/#signin=${code}`);
    await p.getByRole('searchbox').waitFor();
    expect(p.url()).not.toContain(code);
    expect(p.url()).not.toContain(TEST_TOKEN);
    // The same link again, in a fresh session: refused.
    const again = await h.browser.newContext();
    const q = await again.newPage();
    await q.goto(`${h.url}/#signin=${code}`);
    await q.getByRole('alert').filter({ hasText: 'already used' }).waitFor();
    expect(await q.getByLabel('Access token').count()).toBe(1);
    await context.close();
    await again.close();
  });
});

describe('the session', () => {
  async function signInPage(context: BrowserContext) {
    const p = await context.newPage();
    await p.goto(`${h.url}/`);
    await p.getByLabel('Access token').fill(TEST_TOKEN);
    await p.getByRole('button', { name: 'Sign in' }).click();
    await p.getByRole('searchbox').waitFor();
    return p;
  }

  it('survives a reload and a new tab, and no script of the page can read it or the token', async () => {
    const context = await h.browser.newContext();
    const p = await signInPage(context);
    await p.reload();
    await p.getByRole('searchbox').waitFor();
    const tab = await context.newPage();
    await tab.goto(`${h.url}/#/search?q=lisbon`);
    await tab.locator('.hits[data-query="lisbon"] .hit').first().waitFor();
    expect(await tab.getByLabel('Access token').count()).toBe(0);
    for (const x of [p, tab]) {
      expect(await x.evaluate(() => document.cookie)).toBe('');
      const storage = await x.evaluate(() => JSON.stringify([{ ...sessionStorage }, { ...localStorage }]));
      expect(storage).not.toContain(TEST_TOKEN);
    }
    const cookies = await context.cookies();
    expect(cookies).toHaveLength(1);
    expect(cookies[0]).toMatchObject({ name: `memex_session_${new URL(h.url).port}`, httpOnly: true, sameSite: 'Strict' });
    expect(cookies[0].value).not.toContain(TEST_TOKEN);
    await context.close();
  });

  it('signs out every tab, and the session is over on the server too', async () => {
    const context = await h.browser.newContext();
    const p = await signInPage(context);
    const tab = await context.newPage();
    await tab.goto(`${h.url}/#/search`);
    await tab.getByRole('searchbox').waitFor();
    const [cookie] = await context.cookies();
    await p.getByRole('button', { name: 'Sign out' }).click();
    await p.getByLabel('Access token').waitFor();
    await tab.getByLabel('Access token').waitFor(); // told by the first tab
    const replay = await fetch(`${h.url}/v1/session`, { headers: { cookie: `${cookie.name}=${cookie.value}` } });
    expect(replay.status).toBe(401);
    await context.close();
  });

  it('signs in when a one-time link is pasted into a tab showing the sign-in page', async () => {
    const context = await h.browser.newContext();
    const p = await context.newPage();
    await p.goto(`${h.url}/`);
    await p.getByLabel('Access token').waitFor();
    await p.evaluate(() => ((window as any).__samePage = true));
    const code = h.codes.issue();
    await p.goto(`${h.url}/#signin=${code}`); // only the fragment changes: no reload
    await p.getByRole('searchbox').waitFor();
    expect(await p.evaluate(() => (window as any).__samePage)).toBe(true);
    expect(p.url()).not.toContain(code);
    // A used link pasted again says so and leaves the session as it is.
    await p.goto(`${h.url}/#signin=${code}`);
    await p.waitForFunction(() => !location.hash.includes('signin'));
    await p.getByRole('searchbox').waitFor();
    await context.close();
  });

  it('refuses a change another origin of the same site makes with the cookie (no CSRF token)', async () => {
    const context = await h.browser.newContext();
    await signInPage(context);
    await h.gw.db.query(`UPDATE chunks SET embedding_status = 'failed', embedding_error = 'probe' WHERE chunk_id = (SELECT chunk_id FROM chunks LIMIT 1)`);
    // A page on another port of 127.0.0.1: same site, so SameSite=Strict lets the browser attach the cookie.
    const evil = http.createServer((_req, res) => {
      res.setHeader('content-type', 'text/html');
      res.end(`<form method="post" enctype="text/plain" action="${h.url}/v1/admin/embedding/reindex-failed"></form>
        <script>document.forms[0].submit()</script>`);
    });
    await new Promise<void>((r) => evil.listen(0, '127.0.0.1', r));
    try {
      const p = await context.newPage();
      const answer = p.waitForResponse((r) => r.url().endsWith('/v1/admin/embedding/reindex-failed'));
      await p.goto(`http://127.0.0.1:${(evil.address() as AddressInfo).port}/`);
      const res = await answer;
      expect(res.request().headers().cookie ?? (await res.request().allHeaders()).cookie).toMatch(/memex_session_\d+=/);
      expect(res.status()).toBe(403);
      const failed = await h.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM chunks WHERE embedding_status = 'failed'`);
      expect(failed.rows[0].n).toBe(1);
    } finally {
      await new Promise((r) => evil.close(r));
      await h.gw.db.query(`UPDATE chunks SET embedding_status = 'pending', embedding_error = NULL WHERE embedding_status = 'failed'`);
      await context.close();
    }
  });
});

describe('search', () => {
  it('groups mail by conversation by default: the thread once, how many messages match, who wrote, when', async () => {
    await search('lisbon');
    const titles = await hitTitles();
    expect(titles).toHaveLength(2);
    expect(titles).toContain('Packing list');
    const conversation = page.locator('.hit .conversation');
    expect(await conversation.count()).toBe(1);
    const line = await conversation.textContent();
    expect(line).toContain('3 of 3 messages');
    expect(line).toContain('Alice Liddell, Bob Stone, Me');
    expect(line).toMatch(/2026.*–.*2026/);
    await page.locator('#search-status').filter({ hasText: '4 documents in 2 conversations' }).waitFor();
    // Each message on its own, on request (kept in the address: the tests below list messages).
    await page.getByLabel('Conversations').uncheck();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 4);
    expect(await page.locator('.hit .conversation').count()).toBe(0);
    expect(page.url()).toContain('each=1');
  });

  it('names the query syntax in one line under the box, linking nowhere', async () => {
    const help = page.locator('#search-syntax');
    const text = await help.textContent();
    for (const part of ['"exact phrase"', '-word', 'from:', 'has:attachment', 'before:']) expect(text).toContain(part);
    expect(await help.locator('a').count()).toBe(0);
    expect(await page.getByRole('searchbox').getAttribute('aria-describedby')).toContain('search-syntax');
  });

  it('never shows "Nothing matches" while a word that exists is typed, and does once typing stopped on a word that does not', async () => {
    const box = page.getByRole('searchbox');
    await box.fill('');
    await page.locator('#search-status').filter({ hasText: 'Recent documents' }).waitFor();
    await page.evaluate(() => {
      (window as any).__empty = 0;
      new (window as any).MutationObserver(() => {
        if (document.querySelector('.hits .empty')) (window as any).__empty++;
      }).observe(document.querySelector('main'), { childList: true, subtree: true });
    });
    await box.pressSequentially('lisbon', { delay: 250 });
    await page.locator('.hits[data-query="lisbon"] .hit').first().waitFor();
    expect(await page.evaluate(() => (window as any).__empty)).toBe(0);
    await box.pressSequentially('zzq', { delay: 50 });
    await page.locator('.hits .empty').filter({ hasText: 'Nothing matches' }).waitFor();
    await box.fill('');
    await page.locator('#search-status').filter({ hasText: 'Recent documents' }).waitFor();
  });

  it('says when nothing matches a quoted phrase exactly, and lists what matches its words', async () => {
    const box = page.getByRole('searchbox');
    await box.fill('"spring train Lisbon"');
    await page.locator('.hits .relaxed-note').filter({ hasText: 'Nothing matches this exactly' }).waitFor();
    const titles = await page.locator('.hits .hit.relaxed .hit-link').allTextContents();
    expect(titles).toContain('Lisbon trip 1');
    expect(await page.locator('.hits .empty').filter({ hasText: /^Nothing matches\.$/ }).count()).toBe(0);
    await box.fill('');
    await page.locator('#search-status').filter({ hasText: 'Recent documents' }).waitFor();
  });

  it('shows results as you type, with the matched words marked', async () => {
    await search('lisbon');
    const titles = await hitTitles();
    expect(titles).toEqual(expect.arrayContaining(['Lisbon trip 1', 'Lisbon trip 2', 'Lisbon trip 3', 'Packing list']));
    const marks = await page.locator('.hit mark').allTextContents();
    expect(marks.map((m) => m.toLowerCase())).toContain('lisbon');
    expect(await page.locator('.hit').first().textContent()).toContain('Alice Liddell');
  });

  it('filters by each facet and by date, and removes a filter', async () => {
    await search('lisbon');
    await page.locator('.facet').filter({ hasText: 'Source' }).getByRole('button', { name: /^note/ }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 1);
    expect(await hitTitles()).toEqual(['Packing list']);
    await page.getByRole('button', { name: 'Remove filter source_type' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 4);

    await page.locator('.facet').filter({ hasText: 'People' }).getByRole('button', { name: /Bob Stone/ }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 1);
    expect(await hitTitles()).toEqual(['Lisbon trip 2']);
    await page.getByRole('button', { name: 'Remove filter person' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 4);

    await page.locator('.facet').filter({ hasText: 'Attachments' }).getByRole('button', { name: /without attachments/ }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 4 && location.hash.includes('has_attachments=false'));
    await page.getByRole('button', { name: 'Remove filter has_attachments' }).click();

    await page.getByLabel('From').fill('2026-02-01');
    await page.getByLabel('To').fill('2026-02-28');
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 1);
    expect(await hitTitles()).toEqual(['Lisbon trip 2']);
    await page.getByRole('button', { name: 'Remove filter start_date' }).click();
    await page.getByRole('button', { name: 'Remove filter end_date' }).click();
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 4);
  });

  it('moves with j/k, opens with Enter, goes back with Esc, focuses the box with /', async () => {
    await search('lisbon');
    await page.locator('body').click({ position: { x: 5, y: 400 } });
    await page.keyboard.press('j');
    await page.keyboard.press('j');
    await page.keyboard.press('k');
    const second = (await hitTitles())[1];
    expect(await page.locator('.hit.selected .hit-link').textContent()).toBe(second);
    await page.keyboard.press('Enter');
    await page.locator('#doc-title').filter({ hasText: second }).waitFor();
    await page.keyboard.press('Escape');
    await page.getByRole('searchbox').waitFor();
    expect(await page.getByRole('searchbox').inputValue()).toBe('lisbon');
    expect(await page.locator('.hit.selected .hit-link').textContent()).toBe(second);
    await page.locator('body').click({ position: { x: 5, y: 400 } });
    await page.keyboard.press('/');
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('q');
  });

  it('lists the documents of a timeline bar, newest first, when the box is empty', async () => {
    await page.goto(`${h.url}/#/timeline`);
    // The November 2025 bar holds the packing list only; the rest is from 2026.
    await page.locator('svg.timeline a.bar[aria-label^="Nov 2025"]').click();
    await page.locator('#search-status').filter({ hasText: /^1 document, newest first/ }).waitFor();
    expect(await page.getByRole('searchbox').inputValue()).toBe('');
    expect(await hitTitles()).toEqual(['Packing list']);
    // Another range and a person: every matching document, newest first.
    const listed = (titles: string[]) =>
      page.waitForFunction((t) => JSON.stringify([...document.querySelectorAll('.hit-link')].map((a: any) => a.textContent)) === t, JSON.stringify(titles));
    await page.goto(`${h.url}/#/search?start_date=2026-01-01&end_date=2026-02-28`);
    await page.locator('#search-status').filter({ hasText: /^2 documents, newest first/ }).waitFor();
    await listed(['Lisbon trip 2', 'Lisbon trip 1']);
    await page.goto(`${h.url}/#/search?person=alice%40example.com&person_name=Alice%20Liddell`);
    await listed(['Lisbon trip 3', 'Lisbon trip 1']);
    await page.locator('#search-status').filter({ hasText: /^2 documents, newest first/ }).waitFor();
    // Typing searches within the filters.
    await page.getByRole('searchbox').fill('booked');
    await page.waitForFunction(() => document.querySelectorAll('.hit').length === 1);
    expect(await hitTitles()).toEqual(['Lisbon trip 3']);
    await page.goto(`${h.url}/#/search`);
  });

  it('has no serious or critical accessibility violations (search page)', async () => {
    await search('lisbon');
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe('document view', () => {
  it('shows the text, people linked to their pages and the thread around the message', async () => {
    await page.goto(`${h.url}/#/doc/${emailId}`);
    await page.locator('#doc-title').filter({ hasText: 'Lisbon trip 2' }).waitFor();
    expect(await page.locator('pre.text').first().textContent()).toBe('Yes, the night train to Lisbon sounds lovely.');
    const bob = page.locator('.facts a', { hasText: 'Bob Stone' });
    expect(await bob.getAttribute('href')).toMatch(/^#\/person\/[0-9a-f-]{36}$/);
    const thread = await page.locator('.thread li').allTextContents();
    expect(thread).toHaveLength(3);
    expect(thread[0]).toContain('Alice Liddell');
    expect(thread[0]).toContain('Shall we take the train');
    expect(await page.locator('.thread li.current').textContent()).toContain('night train');
    await page.locator('.thread a', { hasText: 'Booked two seats' }).click();
    await page.locator('#doc-title').filter({ hasText: 'Lisbon trip 3' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);
  });

  it('lists versions and shows a previous one', async () => {
    await page.goto(`${h.url}/#/doc/${versionedId}`);
    await page.locator('pre.text', { hasText: 'first draft' }).waitFor();
    await page.locator('.versions a', { hasText: 'version 2' }).click();
    await page.locator('pre.text', { hasText: 'second draft' }).waitFor();
    await page.locator('.versions a', { hasText: 'version 1' }).click();
    await page.locator('.notice', { hasText: 'earlier version' }).waitFor();
  });
});

describe('icons and addresses', () => {
  /** Emoji and other pictographs: drawn as empty boxes where no emoji font is installed (Debian's Chromium). */
  const pictographs = () => page.evaluate(() => [...document.body.textContent].filter((c: string) => /\p{Extended_Pictographic}/u.test(c)));

  it('draws source badges and the attachment count with its own icons, not emoji', async () => {
    await page.goto(`${h.url}/#/search?q=passport&source_type=reminder`);
    await page.locator('.hits[data-query="passport"] .hit .source').waitFor();
    expect(await page.locator('.hit .source svg.icon path').count()).toBe(1);
    expect(await page.locator('.hit .attachment-count svg.icon').count()).toBe(1);
    expect(await page.locator('.hit .attachment-count').textContent()).toBe(' 1');
    expect(await page.locator('.chips button svg.icon').count()).toBe(1);
    expect(await pictographs()).toEqual([]);
    await page.goto(`${h.url}/#/search?q=lisbon&each=1`);
    await page.waitForFunction(() => document.querySelectorAll('.hits[data-query="lisbon"] .hit').length === 4);
    const badges = page.locator('.hit .source');
    expect(await badges.locator('svg.icon').count()).toBe(4);
    expect(await pictographs()).toEqual([]);
    await page.goto(`${h.url}/#/doc/${emailId}`);
    await page.locator('.facts .source svg.icon').waitFor();
    expect(await pictographs()).toEqual([]);
  });

  it('answers a malformed or unknown document address with "not found"', async () => {
    for (const bad of ['not-a-uuid', '12345', `${emailId}x`, '00000000-0000-4000-8000-000000000000']) {
      await page.goto(`${h.url}/#/doc/${bad}`);
      await page.getByRole('heading', { name: 'Document not found' }).waitFor();
      expect(await page.locator('main').textContent()).not.toMatch(/uuid|Input should/i);
      expect(await page.getByRole('link', { name: 'Search instead' }).getAttribute('href')).toBe('#/search');
    }
    expect(await axeViolations(page)).toEqual([]);
  });
});

describe('stored text is never HTML', () => {
  it('shows markup in titles, snippets and bodies as characters and runs none of it', async () => {
    await page.goto(`${h.url}/#/search`);
    await search('zephyr');
    expect(await hitTitles()).toEqual([XSS_TITLE]);
    expect(await page.locator('.hits img, .hits script, .hits b').count()).toBe(0);
    await page.locator('.hit-link').first().click();
    await page.locator('#doc-title').waitFor();
    expect(await page.locator('#doc-title').textContent()).toBe(XSS_TITLE);
    expect(await page.locator('pre.text').first().textContent()).toContain('<script>window.__xss=2</script>');
    expect(await page.locator('article img, article script, article b').count()).toBe(0);
    expect(await page.evaluate(() => (window as any).__xss)).toBeUndefined();
    expect(errors).toEqual([]);
  });
});
