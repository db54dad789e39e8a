/**
 * Browser files read as the browsers write them: a page visited 300 times is one page with its count, first,
 * last and recent visits; Firefox bookmarks with their folder path and tags; Chromium History and Bookmarks;
 * Takeout's BrowserHistory.json; the database is read from a copy that includes the -wal.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  browserFileKind, copyDatabase, mergeBookmarks, pageDocument, readChromium, readChromiumBookmarks, readFirefox, readTakeoutHistory,
} from '../../src/imports/browser/history.ts';
import { SqliteSnapshot } from '../../src/sqlite/engine.ts';
import { buildChromiumHistory, buildFirefoxPlaces, chromiumBookmarksJson } from '../helpers/browser-db-builder.ts';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-browser-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

const T0 = Date.parse('2026-01-05T09:00:00Z');
const HOUR = 3_600_000;
const times300 = Array.from({ length: 300 }, (_, i) => T0 + i * HOUR);

export const firefoxPages = [
  { url: 'https://news.ycombinator.com/', title: 'Hacker News', times: times300, typed: 40 },
  { url: 'https://developer.mozilla.org/en-US/docs/Web/API/IndexedDB_API', title: 'IndexedDB API - Web APIs | MDN', times: [T0, T0 + 5 * HOUR] },
  { url: 'https://t.co/abc123', title: null, times: [T0 + HOUR], hidden: true },
  { url: 'about:preferences', title: 'Settings', times: [T0 + 2 * HOUR] },
];

function read<T>(file: string, fn: (c: any) => T): T {
  const snap = SqliteSnapshot.open(file);
  try {
    return snap.read(fn);
  } finally {
    snap.close();
  }
}

describe('Firefox places.sqlite', () => {
  it('one page per URL with its visits, bookmarks in their folders, tags; read from a copy with its WAL', async () => {
    const file = path.join(tmp, 'ff', 'places.sqlite');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    buildFirefoxPlaces(file, firefoxPages, [
      { url: 'https://developer.mozilla.org/en-US/docs/Web/API/IndexedDB_API', title: 'IndexedDB docs', folder: ['toolbar', 'Dev', 'Storage'], tags: ['storage', 'web'], addedMs: T0 + HOUR },
      { url: 'https://www.seriouseats.com/pizza-dough', title: 'Pizza dough', folder: ['menu', 'Recipes'], addedMs: T0 },
    ], { wal: true });
    expect(await browserFileKind(file, fs.readFileSync(file).subarray(0, 100))).toBe('firefox');

    // Firefox running: its latest visit is only in places.sqlite-wal (not checkpointed) while it holds the file.
    const { openWritable } = await import('../helpers/chatdb-builder.ts');
    const running = openWritable(file);
    running.exec('PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0');
    running.exec(`INSERT INTO moz_historyvisits (place_id, visit_date, visit_type, session) VALUES (1, ${(T0 + 300 * HOUR) * 1000}, 1, 0)`);
    expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(0);
    const { dir, copy } = await copyDatabase(file);
    running.close();
    expect(fs.existsSync(`${copy}-wal`)).toBe(true);
    const pages = read(copy, readFirefox);
    fs.rmSync(dir, { recursive: true, force: true });

    const hn = pages.find((p) => p.url === 'https://news.ycombinator.com/')!;
    expect(hn).toMatchObject({ title: 'Hacker News', visitCount: 301, typedCount: 40 });
    expect(hn.firstVisit!.getTime()).toBe(T0);
    expect(hn.lastVisit!.getTime()).toBe(T0 + 300 * HOUR); // the visit in the WAL
    expect(hn.recent).toHaveLength(20);
    expect(hn.recent[0].getTime()).toBe(T0 + 300 * HOUR);

    const mdn = pages.find((p) => p.url.includes('IndexedDB'))!;
    expect(mdn.bookmarks).toEqual([{ title: 'IndexedDB docs', folder: 'Bookmarks Toolbar/Dev/Storage', added_at: new Date(T0 + HOUR).toISOString() }]);
    expect(mdn.tags.sort()).toEqual(['storage', 'web']);
    const pizza = pages.find((p) => p.url.includes('pizza'))!;
    expect(pizza).toMatchObject({ visitCount: 0, bookmarks: [{ folder: 'Bookmarks Menu/Recipes', title: 'Pizza dough' }] });

    const src = { browser: 'firefox', profile: 'abcd.default-release' };
    const doc = pageDocument(hn, src);
    expect('doc' in doc && doc.doc.request).toMatchObject({
      source_type: 'web_page', source_id: 'https://news.ycombinator.com/', source_provider: 'firefox', source_account_id: 'abcd.default-release',
      title: 'Hacker News', canonical_uri: 'https://news.ycombinator.com/',
      metadata: { visit_count: 301, host: 'news.ycombinator.com', first_visit_at: new Date(T0).toISOString() },
    });
    expect(pageDocument(pages.find((p) => p.url.startsWith('about:'))!, src)).toEqual({ excluded: 'not a web page (about:)' });
    expect(pageDocument(pages.find((p) => p.url.includes('t.co'))!, src)).toMatchObject({ excluded: expect.stringContaining('hidden') });
  });
});

describe('Chromium History and Bookmarks', () => {
  it('reads urls and visits in WebKit time, and bookmarks from the JSON with their folder path', async () => {
    const file = path.join(tmp, 'Default', 'History');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    buildChromiumHistory(file, [
      { url: 'https://github.com/nodejs/node/issues', title: 'Issues · nodejs/node', times: times300.slice(0, 120) },
      { url: 'https://www.bbc.co.uk/news', title: 'BBC News', times: [T0] },
    ]);
    expect(await browserFileKind(file, fs.readFileSync(file).subarray(0, 100))).toBe('chromium');
    const pages = read(file, readChromium);
    const gh = pages.find((p) => p.url.includes('github'))!;
    expect(gh).toMatchObject({ visitCount: 120, title: 'Issues · nodejs/node' });
    expect(gh.firstVisit!.getTime()).toBe(T0);
    expect(gh.lastVisit!.getTime()).toBe(T0 + 119 * HOUR);

    const json = chromiumBookmarksJson([
      { url: 'https://www.bbc.co.uk/news', name: 'BBC', folder: ['bookmark_bar', 'Daily'], addedMs: T0 },
      { url: 'https://example.org/never-visited', name: 'Later', folder: ['other'], addedMs: T0 },
    ]);
    expect(await browserFileKind('Bookmarks', Buffer.from(json))).toBe('chromium_bookmarks');
    const merged = mergeBookmarks(pages, readChromiumBookmarks(json));
    expect(merged.find((p) => p.url.includes('bbc'))!.bookmarks).toEqual([{ title: 'BBC', folder: 'Bookmarks bar/Daily', added_at: new Date(T0).toISOString() }]);
    expect(merged.find((p) => p.url.includes('never-visited'))).toMatchObject({ title: 'Later', visitCount: 0 });
    expect(() => readChromiumBookmarks('{"roots": ')).toThrow(/not valid JSON/);
  });

  it('Takeout BrowserHistory.json: visits grouped by URL', () => {
    const json = JSON.stringify({
      'Browser History': [
        { favicon_url: 'https://www.google.com/favicon.ico', page_transition: 'LINK', title: 'Weather', url: 'https://weather.example/', client_id: 'x', time_usec: T0 * 1000 },
        { page_transition: 'TYPED', title: 'Weather', url: 'https://weather.example/', client_id: 'x', time_usec: (T0 + HOUR) * 1000 },
        { page_transition: 'LINK', title: 'Maps', url: 'https://maps.example/', client_id: 'x', time_usec: T0 * 1000 },
      ],
    });
    const pages = readTakeoutHistory(json);
    expect(pages).toHaveLength(2);
    expect(pages[0]).toMatchObject({ url: 'https://weather.example/', visitCount: 2, typedCount: 1 });
    expect(pages[0].lastVisit!.getTime()).toBe(T0 + HOUR);
  });

  it('a file that is neither is not taken for one', async () => {
    const f = path.join(tmp, 'other.sqlite');
    const { openWritable } = await import('../helpers/chatdb-builder.ts');
    const db = openWritable(f);
    db.exec('CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)');
    db.close();
    expect(await browserFileKind(f, fs.readFileSync(f).subarray(0, 100))).toBeNull();
    expect(await browserFileKind('x.json', Buffer.from('{"a": 1}'))).toBeNull();
  });
});
