/**
 * Browser history and bookmarks read from the browsers' own files: Firefox `places.sqlite` (moz_places,
 * moz_historyvisits, moz_bookmarks), Chromium/Chrome/Edge/Brave `History` (urls, visits) and `Bookmarks` (JSON
 * with "roots"), and Google Takeout's `BrowserHistory.json`. One page per URL, whatever the number of visits:
 * its visit count, first and last visit and the most recent visit times, the folders it is bookmarked in.
 *
 * Databases are read from a copy (the database file and its -wal, taken while nothing wrote to them), through
 * the project's WebAssembly SQLite, read-only: a running browser holds its files open and may write at any time.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SqliteSnapshot, type SqliteConnection } from '../../sqlite/engine.ts';
import { sha256Hex } from '../../util/hash.ts';
import type { IngestRequestT } from '../../schemas/ingest.ts';
import type { OutgoingDocument } from '../submit.ts';
import { codedError } from '../../util/errors.ts';

export interface Bookmark {
  title: string | null;
  /** Folder path, e.g. "Bookmarks Toolbar/Recipes". */
  folder: string;
  added_at: string | null;
}

export interface PageRecord {
  url: string;
  title: string | null;
  visitCount: number;
  typedCount: number;
  firstVisit: Date | null;
  lastVisit: Date | null;
  /** Latest first, at most RECENT_VISITS. */
  recent: Date[];
  hidden: boolean;
  description: string | null;
  bookmarks: Bookmark[];
  tags: string[];
}

export const RECENT_VISITS = 20;
const CHROME_EPOCH_OFFSET_US = 11_644_473_600_000_000n;

/** Firefox stores microseconds since 1970. */
export function firefoxTime(v: unknown): Date | null {
  const n = typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : null;
  if (!n || n <= 0) return null;
  const d = new Date(Math.floor(n / 1000));
  return Number.isNaN(d.getTime()) ? null : d;
}

/** Chromium stores microseconds since 1601-01-01 (WebKit time). */
export function chromeTime(v: unknown): Date | null {
  let n: bigint;
  try {
    n = typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(Math.trunc(v)) : typeof v === 'string' && /^\d+$/.test(v) ? BigInt(v) : 0n;
  } catch {
    return null;
  }
  if (n <= CHROME_EPOCH_OFFSET_US) return null;
  const d = new Date(Number((n - CHROME_EPOCH_OFFSET_US) / 1000n));
  return Number.isNaN(d.getTime()) ? null : d;
}

export type BrowserFileKind = 'firefox' | 'chromium' | 'chromium_bookmarks';

export class BrowserFileError extends codedError('IMPORT.UNREADABLE') {}

/** Which browser file a path holds, by its content: null for none. */
export async function browserFileKind(file: string, head: Buffer): Promise<BrowserFileKind | null> {
  if (head.subarray(0, 16).toString('latin1') === 'SQLite format 3\u0000') {
    let snap: SqliteSnapshot | null = null;
    try {
      snap = SqliteSnapshot.open(file);
      const names = new Set(snap.read((c) => c.all<{ name: string }>("SELECT name FROM sqlite_schema WHERE type = 'table'")).map((r) => r.name));
      if (names.has('moz_places') && names.has('moz_historyvisits')) return 'firefox';
      if (names.has('urls') && names.has('visits')) return 'chromium';
    } catch {
      // Unreadable (truncated, damaged): still a browser's file when its first page or its name says so, so that
      // the import names what is wrong with it rather than "not a format memex imports".
      const text = head.toString('latin1');
      if (text.includes('moz_places') || path.basename(file) === 'places.sqlite') return 'firefox';
      if (/CREATE TABLE urls\s*\(/.test(text) || path.basename(file) === 'History') return 'chromium';
      return null;
    } finally {
      snap?.close();
    }
    return null;
  }
  const text = head.toString('utf8', 0, Math.min(head.length, 8192)).trimStart();
  if (text.startsWith('{') && /"roots"\s*:/.test(text) && /"(bookmark_bar|other|synced)"\s*:/.test(head.toString('utf8'))) return 'chromium_bookmarks';
  return null;
}

/**
 * Copies `file` and its `-wal` into a private temp folder, again until the database did not change while it was
 * copied (a checkpoint between the two copies would pair a newer database with an older WAL). The caller removes
 * the folder.
 */
export async function copyDatabase(file: string): Promise<{ dir: string; copy: string }> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-browser-'));
  const copy = path.join(dir, path.basename(file));
  const state = async () => {
    const parts = await Promise.all([file, `${file}-wal`].map((p) => fs.stat(p).then((s) => `${s.size}:${s.mtimeMs}:${s.ino}`, () => '-')));
    return parts.join('|');
  };
  for (let attempt = 0; attempt < 5; attempt++) {
    const before = await state();
    await fs.copyFile(file, copy);
    await fs.rm(`${copy}-wal`, { force: true });
    try {
      await fs.copyFile(`${file}-wal`, `${copy}-wal`);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
    if ((await state()) === before) return { dir, copy };
    await new Promise((r) => setTimeout(r, 200));
  }
  await fs.rm(dir, { recursive: true, force: true });
  throw new BrowserFileError(`${file} kept changing while it was copied; close the browser and try again`);
}

function newPage(url: string): PageRecord {
  return { url, title: null, visitCount: 0, typedCount: 0, firstVisit: null, lastVisit: null, recent: [], hidden: false, description: null, bookmarks: [], tags: [] };
}

const str = (v: unknown) => (typeof v === 'string' && v.length ? v : null);
const num = (v: unknown) => (typeof v === 'bigint' ? Number(v) : typeof v === 'number' ? v : 0);

/** Visits: count, first, last and the most recent, per place, from one table's rows. */
function readVisits(c: SqliteConnection, sql: string, toDate: (v: unknown) => Date | null, pages: Map<number, PageRecord>): void {
  {
    for (const r of c.all<{ pid: number | bigint; n: number | bigint; first: unknown; last: unknown; recent: string | null }>(sql)) {
      const p = pages.get(num(r.pid));
      if (!p) continue;
      p.firstVisit = toDate(r.first);
      p.lastVisit = toDate(r.last) ?? p.lastVisit;
      p.visitCount = Math.max(p.visitCount, num(r.n));
      p.recent = (r.recent ?? '')
        .split(',')
        .filter(Boolean)
        .map((t) => toDate(/^\d+$/.test(t) ? BigInt(t) : t))
        .filter((d): d is Date => d !== null)
        .sort((a, b) => b.getTime() - a.getTime())
        .slice(0, RECENT_VISITS);
    }
  }
}

const VISITS_SQL = (table: string, place: string, time: string) => `
  SELECT ${place} AS pid, count(*) AS n, min(${time}) AS first, max(${time}) AS last,
         (SELECT group_concat(t) FROM (SELECT v2.${time} AS t FROM ${table} v2 WHERE v2.${place} = v.${place} ORDER BY v2.${time} DESC LIMIT ${RECENT_VISITS})) AS recent
    FROM ${table} v GROUP BY ${place}`;

const FIREFOX_ROOTS: Record<string, string> = {
  menu________: 'Bookmarks Menu',
  toolbar_____: 'Bookmarks Toolbar',
  unfiled_____: 'Other Bookmarks',
  mobile______: 'Mobile Bookmarks',
};

export function readFirefox(c: SqliteConnection): PageRecord[] {
  const pages = new Map<number, PageRecord>();
  const cols = new Set(c.all<{ name: string }>('PRAGMA table_info(moz_places)').map((r) => r.name));
  const desc = cols.has('description') ? 'description' : 'NULL';
  for (const r of c.all(`SELECT id, url, title, visit_count, typed, hidden, last_visit_date, ${desc} AS description FROM moz_places WHERE url IS NOT NULL`)) {
    const p = newPage(String(r.url));
    p.title = str(r.title);
    p.visitCount = num(r.visit_count);
    p.typedCount = num(r.typed);
    p.hidden = num(r.hidden) === 1;
    p.lastVisit = firefoxTime(r.last_visit_date);
    p.description = str(r.description);
    pages.set(num(r.id), p);
  }
  readVisits(c, VISITS_SQL('moz_historyvisits', 'place_id', 'visit_date'), firefoxTime, pages);
  // Bookmarks: folders by id (the roots named by their guid), then each bookmark's folder path.
  const folders = new Map<number, { title: string; parent: number; guid: string }>();
  for (const r of c.all('SELECT id, parent, title, guid FROM moz_bookmarks WHERE type = 2')) {
    folders.set(num(r.id), { title: FIREFOX_ROOTS[String(r.guid)] ?? String(r.title ?? ''), parent: num(r.parent), guid: String(r.guid ?? '') });
  }
  const folderPath = (id: number): { path: string; tags: boolean } => {
    const names: string[] = [];
    let tags = false;
    for (let cur = folders.get(id), guard = 0; cur && guard < 64; cur = folders.get(cur.parent), guard++) {
      if (cur.guid === 'root________') break;
      if (cur.guid === 'tags________') tags = true;
      names.unshift(cur.title);
    }
    return { path: names.join('/'), tags };
  };
  for (const r of c.all('SELECT fk, parent, title, dateAdded FROM moz_bookmarks WHERE type = 1 AND fk IS NOT NULL')) {
    const p = pages.get(num(r.fk));
    if (!p) continue;
    const f = folderPath(num(r.parent));
    // A tag is a bookmark in a folder under the "tags" root: the folder's title is the tag.
    if (f.tags) {
      const tag = folders.get(num(r.parent))?.title;
      if (tag && !p.tags.includes(tag)) p.tags.push(tag);
    } else p.bookmarks.push({ title: str(r.title), folder: f.path, added_at: firefoxTime(r.dateAdded)?.toISOString() ?? null });
  }
  return [...pages.values()];
}

export function readChromium(c: SqliteConnection): PageRecord[] {
  const pages = new Map<number, PageRecord>();
  for (const r of c.all('SELECT id, url, title, visit_count, typed_count, last_visit_time, hidden FROM urls WHERE url IS NOT NULL')) {
    const p = newPage(String(r.url));
    p.title = str(r.title);
    p.visitCount = num(r.visit_count);
    p.typedCount = num(r.typed_count);
    p.hidden = num(r.hidden) === 1;
    p.lastVisit = chromeTime(r.last_visit_time);
    pages.set(num(r.id), p);
  }
  readVisits(c, VISITS_SQL('visits', 'url', 'visit_time'), chromeTime, pages);
  return [...pages.values()];
}

interface ChromeNode {
  type?: string;
  name?: string;
  url?: string;
  date_added?: string;
  children?: ChromeNode[];
}

const CHROME_ROOTS: Record<string, string> = { bookmark_bar: 'Bookmarks bar', other: 'Other bookmarks', synced: 'Mobile bookmarks' };

/** The bookmarks of a Chromium `Bookmarks` file, by URL. Throws BrowserFileError when it is not one. */
export function readChromiumBookmarks(text: string): Map<string, Bookmark[]> {
  let json: { roots?: Record<string, ChromeNode> };
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new BrowserFileError(`not valid JSON (${(err as Error).message})`);
  }
  if (!json || typeof json !== 'object' || !json.roots || typeof json.roots !== 'object') throw new BrowserFileError('no "roots": not a Chromium Bookmarks file');
  const out = new Map<string, Bookmark[]>();
  const walk = (node: ChromeNode, folder: string, depth: number) => {
    if (!node || typeof node !== 'object' || depth > 64) return;
    if (node.type === 'url' && typeof node.url === 'string') {
      const list = out.get(node.url) ?? [];
      list.push({ title: str(node.name), folder, added_at: chromeTime(node.date_added)?.toISOString() ?? null });
      out.set(node.url, list);
    } else if (Array.isArray(node.children)) {
      for (const ch of node.children) walk(ch, ch?.type === 'folder' ? (folder ? `${folder}/${ch.name ?? ''}` : String(ch.name ?? '')) : folder, depth + 1);
    }
  };
  for (const [key, root] of Object.entries(json.roots)) {
    if (root && typeof root === 'object' && Array.isArray(root.children)) walk(root, CHROME_ROOTS[key] ?? root.name ?? key, 0);
  }
  return out;
}

/** Adds bookmarks to pages (a bookmarked page never visited becomes a page of its own). */
export function mergeBookmarks(pages: PageRecord[], bookmarks: Map<string, Bookmark[]>): PageRecord[] {
  const byUrl = new Map(pages.map((p) => [p.url, p]));
  for (const [url, list] of bookmarks) {
    let p = byUrl.get(url);
    if (!p) {
      p = newPage(url);
      p.title = list[0].title;
      byUrl.set(url, p);
      pages.push(p);
    }
    p.bookmarks.push(...list);
  }
  return pages;
}

/** Google Takeout's Chrome history (`Chrome/BrowserHistory.json`): {"Browser History": [{url, title, time_usec, page_transition}]}. */
export function readTakeoutHistory(text: string): PageRecord[] {
  let json: Record<string, unknown>;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new BrowserFileError(`not valid JSON (${(err as Error).message})`);
  }
  const list = json?.['Browser History'];
  if (!Array.isArray(list)) throw new BrowserFileError('no "Browser History" list: not a Takeout Chrome history file');
  const byUrl = new Map<string, PageRecord & { times: number[] }>();
  for (const v of list as Array<Record<string, unknown>>) {
    if (!v || typeof v.url !== 'string') continue;
    let p = byUrl.get(v.url);
    if (!p) byUrl.set(v.url, (p = { ...newPage(v.url), times: [] }));
    if (typeof v.title === 'string' && v.title && !p.title) p.title = v.title;
    const us = typeof v.time_usec === 'number' ? v.time_usec : typeof v.time_usec === 'string' ? Number(v.time_usec) : NaN;
    if (Number.isFinite(us) && us > 0) p.times.push(Math.floor(us / 1000));
    if (v.page_transition === 'TYPED') p.typedCount++;
  }
  return [...byUrl.values()].map(({ times, ...p }) => {
    times.sort((a, b) => a - b);
    return {
      ...p,
      visitCount: times.length,
      firstVisit: times.length ? new Date(times[0]) : null,
      lastVisit: times.length ? new Date(times[times.length - 1]) : null,
      recent: times.slice(-RECENT_VISITS).reverse().map((t) => new Date(t)),
    };
  });
}

const KEPT_SCHEMES = /^(https?|file|ftp):/i;

export interface PageSource {
  /** firefox, chrome, edge, brave, chromium… */
  browser: string;
  /** The profile (part of every page's identity: two profiles are two sets of pages). */
  profile: string;
}

/** A page's document; null with the reason when it is left out (an internal page, a hidden redirect). */
export function pageDocument(p: PageRecord, src: PageSource): { doc: OutgoingDocument } | { excluded: string } {
  if (!KEPT_SCHEMES.test(p.url)) return { excluded: `not a web page (${p.url.split(':')[0]}:)` };
  if (p.hidden && !p.bookmarks.length && !p.title) return { excluded: 'hidden by the browser (a redirect or an embedded frame)' };
  let host = '';
  try {
    host = new URL(p.url).host;
  } catch {
    /* keep the URL as it is */
  }
  const title = p.title?.trim() || p.bookmarks.find((b) => b.title)?.title || p.url;
  const lines = [title, p.url];
  if (p.description && p.description !== title) lines.push(p.description.slice(0, 2000));
  const metadata: Record<string, unknown> = {
    url: p.url,
    host,
    browser: src.browser,
    profile: src.profile,
    visit_count: p.visitCount,
    typed_count: p.typedCount,
    first_visit_at: p.firstVisit?.toISOString() ?? null,
    last_visit_at: p.lastVisit?.toISOString() ?? null,
    recent_visits: p.recent.map((d) => d.toISOString()),
  };
  if (p.bookmarks.length) metadata.bookmarks = p.bookmarks.slice(0, 50);
  if (p.tags.length) metadata.tags = p.tags.slice(0, 100);
  const when = p.lastVisit ?? p.firstVisit ?? firstBookmarked(p) ?? new Date(0);
  const request: IngestRequestT = {
    source_type: 'web_page',
    source_id: p.url.length <= 1000 ? p.url : `${p.url.slice(0, 900)}#sha256=${sha256Hex(p.url)}`,
    source_provider: src.browser,
    source_account_id: src.profile,
    title: title.slice(0, 1000),
    canonical_uri: p.url.length <= 8192 ? p.url : null,
    content: { mime_type: 'text/plain', data: lines.join('\n') },
    metadata,
    content_timestamp: when.toISOString(),
    content_timestamp_type: 'modified',
    content_created_at: (p.firstVisit ?? firstBookmarked(p) ?? when).toISOString(),
    content_modified_at: when.toISOString(),
  };
  return { doc: { ref: p.url, request } };
}

function firstBookmarked(p: PageRecord): Date | null {
  const ts = p.bookmarks.map((b) => (b.added_at ? Date.parse(b.added_at) : NaN)).filter((n) => Number.isFinite(n));
  return ts.length ? new Date(Math.min(...ts)) : null;
}

/** The browser a Chromium profile folder belongs to, from its path. */
export function chromiumBrowserOf(file: string): string {
  const p = file.toLowerCase();
  if (p.includes('bravesoftware')) return 'brave';
  if (/microsoft[ /\\-]?edge/.test(p)) return 'edge';
  if (p.includes('vivaldi')) return 'vivaldi';
  if (p.includes('chromium')) return 'chromium';
  return 'chrome';
}
