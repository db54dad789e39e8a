/**
 * `memex import` of a notes vault and of browser history against a live gateway (both backends): the import
 * stores the notes and pages, search finds a note by its text and a page by its title, a second import of the
 * same files stores nothing new, an edited note becomes a new version, and a malformed file is a clear per-file
 * error that loses nothing already stored.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runImportCommand } from '../../src/imports/registry.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startLiveGateway, type LiveGateway } from '../email-collectors/helpers.ts';
import { writeVault } from './fixtures.ts';
import { buildChromiumHistory, buildFirefoxPlaces, chromiumBookmarksJson } from '../helpers/browser-db-builder.ts';

let live: LiveGateway;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-imports-e2e-'));
beforeAll(async () => {
  live = await startLiveGateway();
}, 120_000);
afterAll(async () => {
  await live?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

async function memexImport(p: string, ...extra: string[]) {
  let text = '';
  const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  const code = await runImportCommand([p, '--url', live.url, '--token', TEST_TOKEN, ...extra], out);
  return { code, text };
}

async function search(q: string, extra = '') {
  const res = await live.gw.request('GET', `/v1/search?q=${encodeURIComponent(q)}&k=10${extra}`);
  expect(res.statusCode).toBe(200);
  return res.json().hits as Array<{ document_id: string; title: string | null; source_type: string; metadata: any }>;
}

async function countActive(sourceType: string): Promise<number> {
  const r = await live.gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE source_type = $1 AND is_active_version', [sourceType]);
  return r.rows[0].n;
}

async function countAll(sourceType: string): Promise<number> {
  const r = await live.gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE source_type = $1', [sourceType]);
  return r.rows[0].n;
}

describe('memex import VAULT', () => {
  const vault = path.join(tmp, 'Second Brain');

  it('stores one note per Markdown file, searchable by its text, and names the file it could not read', async () => {
    writeVault(vault);
    const r = await memexImport(vault);
    expect(r.code).toBe(1); // Broken.md
    expect(r.text).toContain('Obsidian vault "Second Brain": 6 notes (2 other files left out');
    expect(r.text).toMatch(/Broken\.md: not imported: front matter is not valid YAML/);
    expect(r.text).toContain('notes: 4 new');
    expect(r.text).toContain(`coverage of ${vault}: 6 in the source: 4 stored (4 new); skipped 1 empty; 1 failed`);
    expect(await countActive('note')).toBe(4);

    const hits = await search('train to Lisbon alfama');
    expect(hits[0]).toMatchObject({ title: 'Lisbon conference 2026', source_type: 'note' });
    expect(hits[0].metadata).toMatchObject({ tags: ['travel', 'work/conferences', 'todo'], links: ['Packing list.md', 'People/Priya Shah.md', 'Finance/Budget 2026.md'] });
    expect(await search('thrown away')).toEqual([]); // .trash/ is hidden: left out
    // The note's tags are memex tags (origin import): the query language finds the note by them.
    const tagged = await search('tag:work/conferences');
    expect(tagged.map((h) => h.title)).toEqual(['Lisbon conference 2026']);
  }, 120_000);

  it('stores nothing new when imported again, and a new version of an edited note', async () => {
    const again = await memexImport(vault);
    expect(again.text).toContain('notes: 4 unchanged');
    expect(await countAll('note')).toBe(4);

    fs.appendFileSync(path.join(vault, 'Packing list.md'), '- sunscreen\n');
    fs.writeFileSync(path.join(vault, 'Broken.md'), '---\ntitle: Fixed\n---\nNow the front matter reads.\n');
    const edited = await memexImport(vault);
    expect(edited.code).toBe(0);
    expect(edited.text).toContain('notes: 1 new, 1 updated (new versions), 3 unchanged');
    expect(await countActive('note')).toBe(5);
    expect(await countAll('note')).toBe(6);
    expect((await search('sunscreen'))[0]).toMatchObject({ title: 'Packing' });
  }, 120_000);

  it("lists a note's links and the notes linking to it as its related documents, at their newest versions", async () => {
    const idOf = async (p: string) =>
      (await live.gw.db.query<{ doc_id: string }>(`SELECT doc_id::text AS doc_id FROM documents WHERE source_type = 'note' AND is_active_version AND metadata->>'path' = $1`, [p])).rows[0].doc_id;
    const related = async (p: string) => {
      const res = await live.gw.request('GET', `/v1/doc/${await idOf(p)}/view`);
      expect(res.statusCode).toBe(200);
      return (res.json().related as Array<{ doc_id: string; path: string; relation: string }>).map((r) => [r.relation, r.path, r.doc_id]);
    };
    // Packing list.md was edited above: its newest version is the one named.
    expect(await related('Trips/Lisbon conference.md')).toEqual([
      ['links_to', 'Packing list.md', await idOf('Packing list.md')],
      ['links_to', 'People/Priya Shah.md', await idOf('People/Priya Shah.md')],
      ['links_to', 'Finance/Budget 2026.md', await idOf('Finance/Budget 2026.md')],
      ['linked_from', 'Packing list.md', await idOf('Packing list.md')],
      ['linked_from', 'People/Priya Shah.md', await idOf('People/Priya Shah.md')],
    ]);
    expect(await related('Finance/Budget 2026.md')).toEqual([['linked_from', 'Trips/Lisbon conference.md', await idOf('Trips/Lisbon conference.md')]]);
  }, 120_000);
});

describe('memex import of browser history', () => {
  const T0 = Date.parse('2026-02-01T08:00:00Z');
  const HOUR = 3_600_000;
  const profile = path.join(tmp, 'Firefox', 'Profiles', 'x1y2z3.default-release');
  const places = path.join(profile, 'places.sqlite');
  const pages = (extraVisit = false) => [
    { url: 'https://www.rust-lang.org/learn', title: 'Learn Rust - Rust Programming Language', times: Array.from({ length: 300 }, (_, i) => T0 + i * HOUR) },
    { url: 'https://en.wikipedia.org/wiki/Axolotl', title: 'Axolotl - Wikipedia', times: extraVisit ? [T0, T0 + 400 * HOUR] : [T0] },
    { url: 'https://duckduckgo.com/?q=sourdough', title: 'sourdough at DuckDuckGo', times: [T0 + HOUR] },
    { url: 'about:newtab', title: 'New Tab', times: [T0] },
  ];

  it('stores one page per URL (300 visits, one document), found by its title; again: nothing new', async () => {
    fs.mkdirSync(profile, { recursive: true });
    buildFirefoxPlaces(places, pages(), [{ url: 'https://en.wikipedia.org/wiki/Axolotl', title: 'Axolotl', folder: ['toolbar', 'Animals'], addedMs: T0 }], { wal: true });
    const r = await memexImport(places);
    expect(r.code).toBe(0);
    expect(r.text).toContain('Firefox history (profile x1y2z3.default-release): 4 pages, 303 visits, 1 bookmarked; 1 left out');
    expect(r.text).toContain('pages: 3 new');
    expect(await countActive('web_page')).toBe(3);
    const hits = await search('learn rust programming');
    expect(hits[0]).toMatchObject({ title: 'Learn Rust - Rust Programming Language', source_type: 'web_page' });
    expect(hits[0].metadata).toMatchObject({ visit_count: 300, browser: 'firefox', url: 'https://www.rust-lang.org/learn' });
    expect((await search('axolotl', '&type=web'))[0].metadata.bookmarks).toEqual([{ title: 'Axolotl', folder: 'Bookmarks Toolbar/Animals', added_at: new Date(T0).toISOString() }]);

    const again = await memexImport(places);
    expect(again.text).toContain('pages: 3 unchanged');
    expect(await countAll('web_page')).toBe(3);
  }, 120_000);

  it('a new visit makes a new version of that page only', async () => {
    buildFirefoxPlaces(places, pages(true), [{ url: 'https://en.wikipedia.org/wiki/Axolotl', title: 'Axolotl', folder: ['toolbar', 'Animals'], addedMs: T0 }]);
    const r = await memexImport(places);
    expect(r.text).toContain('pages: 1 updated (new versions), 2 unchanged');
    expect(await countActive('web_page')).toBe(3);
    expect(await countAll('web_page')).toBe(4);
  }, 120_000);

  it('a Chromium profile: History with its Bookmarks beside it, by naming either', async () => {
    const dir = path.join(tmp, 'google-chrome', 'Default');
    fs.mkdirSync(dir, { recursive: true });
    buildChromiumHistory(path.join(dir, 'History'), [{ url: 'https://www.kernel.org/', title: 'The Linux Kernel Archives', times: [T0, T0 + HOUR] }]);
    fs.writeFileSync(path.join(dir, 'Bookmarks'), chromiumBookmarksJson([{ url: 'https://gitlab.com/explore', name: 'Explore GitLab', folder: ['bookmark_bar'], addedMs: T0 }]));
    const r = await memexImport(path.join(dir, 'History'));
    expect(r.text).toContain('chrome history and bookmarks (profile Default): 2 pages, 2 visits, 1 bookmarked');
    expect(r.text).toContain('pages: 2 new');
    const viaBookmarks = await memexImport(path.join(dir, 'Bookmarks'));
    expect(viaBookmarks.text).toContain('pages: 2 unchanged');
    expect((await search('linux kernel archives'))[0]).toMatchObject({ title: 'The Linux Kernel Archives', source_type: 'web_page' });
  }, 120_000);

  it('a truncated history file is a clear error for that file, and what was stored stays', async () => {
    const bad = path.join(tmp, 'broken-profile', 'places.sqlite');
    fs.mkdirSync(path.dirname(bad), { recursive: true });
    const whole = fs.readFileSync(places);
    fs.writeFileSync(bad, whole.subarray(0, 4096 + 100));
    const r = await memexImport(bad);
    expect(r.code).not.toBe(0);
    expect(r.text).toMatch(/broken-profile\/places\.sqlite.*(unreadable|malformed|not a Firefox)/);
    expect(await countActive('web_page')).toBe(5);
    expect(await countActive('note')).toBe(5);
  }, 120_000);
});
