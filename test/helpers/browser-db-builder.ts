/**
 * Builds browser history files with the browsers' own schemas (the CREATE statements as Firefox 128's
 * places.sqlite and Chromium 120's History hold them), through the same WebAssembly SQLite the importer reads
 * with, for tests and benchmarks. Firefox writes in WAL mode: `wal: true` sets it in the
 * file's header (journal_mode=WAL, as Firefox keeps it); the -wal itself is checkpointed on close.
 */
import fs from 'node:fs';
import { openWritable } from './chatdb-builder.ts';
import type { SqliteConnection } from '../../src/sqlite/engine.ts';

const FIREFOX_SCHEMA = `
CREATE TABLE moz_origins ( id INTEGER PRIMARY KEY, prefix TEXT NOT NULL, host TEXT NOT NULL, frecency INTEGER NOT NULL, recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER, recalc_alt_frecency INTEGER NOT NULL DEFAULT 0, UNIQUE (prefix, host) );
CREATE TABLE moz_places (   id INTEGER PRIMARY KEY, url LONGVARCHAR, title LONGVARCHAR, rev_host LONGVARCHAR, visit_count INTEGER DEFAULT 0, hidden INTEGER DEFAULT 0 NOT NULL, typed INTEGER DEFAULT 0 NOT NULL, frecency INTEGER DEFAULT -1 NOT NULL, last_visit_date INTEGER , guid TEXT, foreign_count INTEGER DEFAULT 0 NOT NULL, url_hash INTEGER DEFAULT 0 NOT NULL , description TEXT, preview_image_url TEXT, site_name TEXT, origin_id INTEGER REFERENCES moz_origins(id), recalc_frecency INTEGER NOT NULL DEFAULT 0, alt_frecency INTEGER, recalc_alt_frecency INTEGER NOT NULL DEFAULT 0);
CREATE TABLE moz_historyvisits (  id INTEGER PRIMARY KEY, from_visit INTEGER, place_id INTEGER, visit_date INTEGER, visit_type INTEGER, session INTEGER, source INTEGER DEFAULT 0 NOT NULL, triggeringPlaceId INTEGER);
CREATE TABLE moz_inputhistory (  place_id INTEGER NOT NULL, input LONGVARCHAR NOT NULL, use_count INTEGER, PRIMARY KEY (place_id, input));
CREATE TABLE moz_bookmarks (  id INTEGER PRIMARY KEY, type INTEGER, fk INTEGER DEFAULT NULL, parent INTEGER, position INTEGER, title LONGVARCHAR, keyword_id INTEGER, folder_type TEXT, dateAdded INTEGER, lastModified INTEGER, guid TEXT, syncStatus INTEGER NOT NULL DEFAULT 0, syncChangeCounter INTEGER NOT NULL DEFAULT 1);
CREATE TABLE moz_bookmarks_deleted (  guid TEXT PRIMARY KEY, dateRemoved INTEGER NOT NULL DEFAULT 0);
CREATE TABLE moz_keywords (  id INTEGER PRIMARY KEY AUTOINCREMENT, keyword TEXT UNIQUE, place_id INTEGER, post_data TEXT);
CREATE TABLE moz_anno_attributes (  id INTEGER PRIMARY KEY, name VARCHAR(32) UNIQUE NOT NULL);
CREATE TABLE moz_items_annos (  id INTEGER PRIMARY KEY, item_id INTEGER NOT NULL, anno_attribute_id INTEGER, content LONGVARCHAR, flags INTEGER DEFAULT 0, expiration INTEGER DEFAULT 0, type INTEGER DEFAULT 0, dateAdded INTEGER DEFAULT 0, lastModified INTEGER DEFAULT 0);
CREATE TABLE moz_meta (key TEXT PRIMARY KEY, value NOT NULL) WITHOUT ROWID ;
CREATE INDEX moz_places_url_hashindex ON moz_places (url_hash);
CREATE INDEX moz_places_hostindex ON moz_places (rev_host);
CREATE INDEX moz_places_visitcount ON moz_places (visit_count);
CREATE INDEX moz_places_frecencyindex ON moz_places (frecency);
CREATE INDEX moz_places_lastvisitdateindex ON moz_places (last_visit_date);
CREATE UNIQUE INDEX moz_places_guid_uniqueindex ON moz_places (guid);
CREATE INDEX moz_places_originidindex ON moz_places (origin_id);
CREATE INDEX moz_historyvisits_placedateindex ON moz_historyvisits (place_id, visit_date);
CREATE INDEX moz_historyvisits_fromindex ON moz_historyvisits (from_visit);
CREATE INDEX moz_historyvisits_dateindex ON moz_historyvisits (visit_date);
CREATE INDEX moz_bookmarks_itemindex ON moz_bookmarks (fk, type);
CREATE INDEX moz_bookmarks_parentindex ON moz_bookmarks (parent, position);
CREATE INDEX moz_bookmarks_itemlastmodifiedindex ON moz_bookmarks (fk, lastModified);
CREATE INDEX moz_bookmarks_dateaddedindex ON moz_bookmarks (dateAdded);
CREATE UNIQUE INDEX moz_bookmarks_guid_uniqueindex ON moz_bookmarks (guid);
INSERT INTO moz_bookmarks (id, type, parent, position, title, guid) VALUES
  (1, 2, 0, 0, '', 'root________'), (2, 2, 1, 0, 'menu', 'menu________'), (3, 2, 1, 1, 'toolbar', 'toolbar_____'),
  (4, 2, 1, 2, 'tags', 'tags________'), (5, 2, 1, 3, 'unfiled', 'unfiled_____'), (6, 2, 1, 4, 'mobile', 'mobile______');
INSERT INTO moz_meta VALUES ('origin_frecency_count', 0);
PRAGMA user_version = 77;
`;

const CHROMIUM_SCHEMA = `
CREATE TABLE meta(key LONGVARCHAR NOT NULL UNIQUE PRIMARY KEY, value LONGVARCHAR);
CREATE TABLE urls(id INTEGER PRIMARY KEY AUTOINCREMENT,url LONGVARCHAR,title LONGVARCHAR,visit_count INTEGER DEFAULT 0 NOT NULL,typed_count INTEGER DEFAULT 0 NOT NULL,last_visit_time INTEGER NOT NULL,hidden INTEGER DEFAULT 0 NOT NULL);
CREATE TABLE visits(id INTEGER PRIMARY KEY AUTOINCREMENT,url INTEGER NOT NULL,visit_time INTEGER NOT NULL,from_visit INTEGER,external_referrer_url TEXT,transition INTEGER DEFAULT 0 NOT NULL,segment_id INTEGER,visit_duration INTEGER DEFAULT 0 NOT NULL,incremented_omnibox_typed_score BOOLEAN DEFAULT FALSE NOT NULL,opener_visit INTEGER,originator_cache_guid TEXT,originator_visit_id INTEGER,originator_from_visit INTEGER,originator_opener_visit INTEGER,is_known_to_sync BOOLEAN DEFAULT FALSE NOT NULL,consider_for_ntp_most_visited BOOLEAN DEFAULT FALSE NOT NULL,visited_link_id INTEGER DEFAULT 0 NOT NULL,app_id TEXT);
CREATE TABLE visit_source(id INTEGER PRIMARY KEY,source INTEGER NOT NULL);
CREATE TABLE keyword_search_terms (keyword_id INTEGER NOT NULL,url_id INTEGER NOT NULL,term LONGVARCHAR NOT NULL,normalized_term LONGVARCHAR NOT NULL);
CREATE TABLE downloads (id INTEGER PRIMARY KEY,guid VARCHAR NOT NULL,current_path LONGVARCHAR NOT NULL,target_path LONGVARCHAR NOT NULL,start_time INTEGER NOT NULL,received_bytes INTEGER NOT NULL,total_bytes INTEGER NOT NULL,state INTEGER NOT NULL,danger_type INTEGER NOT NULL,interrupt_reason INTEGER NOT NULL,hash BLOB NOT NULL,end_time INTEGER NOT NULL,opened INTEGER NOT NULL,last_access_time INTEGER NOT NULL,transient INTEGER NOT NULL,referrer VARCHAR NOT NULL,site_url VARCHAR NOT NULL,embedder_download_data VARCHAR NOT NULL,tab_url VARCHAR NOT NULL,tab_referrer_url VARCHAR NOT NULL,http_method VARCHAR NOT NULL,by_ext_id VARCHAR NOT NULL,by_ext_name VARCHAR NOT NULL,by_web_app_id VARCHAR NOT NULL,etag VARCHAR NOT NULL,last_modified VARCHAR NOT NULL,mime_type VARCHAR(255) NOT NULL,original_mime_type VARCHAR(255) NOT NULL);
CREATE TABLE segments (id INTEGER PRIMARY KEY,name VARCHAR,url_id INTEGER NON NULL);
CREATE TABLE segment_usage (id INTEGER PRIMARY KEY,segment_id INTEGER NOT NULL,time_slot INTEGER NOT NULL,visit_count INTEGER DEFAULT 0 NOT NULL);
CREATE INDEX visits_url_index ON visits (url);
CREATE INDEX visits_from_index ON visits (from_visit);
CREATE INDEX visits_time_index ON visits (visit_time);
CREATE INDEX urls_url_index ON urls (url);
INSERT INTO meta VALUES ('mmap_status', '-1'), ('version', '66'), ('last_compatible_version', '16');
`;

export interface FakeVisit {
  url: string;
  title: string | null;
  /** Unix ms. */
  times: number[];
  hidden?: boolean;
  typed?: number;
}

export interface FirefoxBookmark {
  url: string;
  title: string;
  /** Folder names under a root: ['toolbar', 'Recipes'] (roots: menu, toolbar, unfiled, mobile). */
  folder: string[];
  tags?: string[];
  addedMs: number;
}

const guid = (n: number, prefix = 'g') => `${prefix}${String(n).padStart(11, '0')}`.slice(-12);
const revHost = (url: string) => {
  try {
    return `${new URL(url).hostname.split('').reverse().join('')}.`;
  } catch {
    return '';
  }
};

function insertMany(db: SqliteConnection, sql: string, rows: unknown[][]): void {
  db.exec('BEGIN');
  const st = db.prepare(sql);
  for (const r of rows) st.run(...(r as never[]));
  st.finalize();
  db.exec('COMMIT');
}

/** A Firefox places.sqlite with these pages, their visits and bookmarks. */
export function buildFirefoxPlaces(file: string, pages: FakeVisit[], bookmarks: FirefoxBookmark[] = [], opts: { wal?: boolean } = {}): void {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) fs.rmSync(f, { force: true });
  const db = openWritable(file);
  try {
    if (opts.wal) db.exec('PRAGMA journal_mode = WAL');
    db.exec(FIREFOX_SCHEMA);
    const ids = new Map<string, number>();
    const placeRows: unknown[][] = [];
    const visitRows: unknown[][] = [];
    let visitId = 0;
    const addPlace = (url: string, title: string | null, times: number[], hidden = false, typed = 0) => {
      const id = ids.size + 1;
      ids.set(url, id);
      const last = times.length ? Math.max(...times) * 1000 : null;
      placeRows.push([id, url, title, revHost(url), times.length, hidden ? 1 : 0, typed, last, guid(id), 0]);
      for (const t of times) visitRows.push([++visitId, 0, id, t * 1000, 1, 0]);
    };
    for (const p of pages) addPlace(p.url, p.title, p.times, p.hidden, p.typed);
    for (const b of bookmarks) if (!ids.has(b.url)) addPlace(b.url, b.title, []);
    insertMany(db, 'INSERT INTO moz_places (id, url, title, rev_host, visit_count, hidden, typed, last_visit_date, guid, foreign_count) VALUES (?,?,?,?,?,?,?,?,?,?)', placeRows);
    insertMany(db, 'INSERT INTO moz_historyvisits (id, from_visit, place_id, visit_date, visit_type, session) VALUES (?,?,?,?,?,?)', visitRows);
    const roots: Record<string, number> = { menu: 2, toolbar: 3, unfiled: 5, mobile: 6 };
    const folders = new Map<string, number>();
    let nextId = 100;
    const folderId = (parent: number, name: string) => {
      const key = `${parent}/${name}`;
      let id = folders.get(key);
      if (!id) {
        id = nextId++;
        folders.set(key, id);
        db.exec(`INSERT INTO moz_bookmarks (id, type, parent, position, title, guid) VALUES (${id}, 2, ${parent}, 0, '${name.replace(/'/g, "''")}', '${guid(id, 'f')}')`);
      }
      return id;
    };
    const bmRows: unknown[][] = [];
    for (const b of bookmarks) {
      let parent = roots[b.folder[0]] ?? 5;
      for (const name of b.folder.slice(1)) parent = folderId(parent, name);
      const id = nextId++;
      bmRows.push([id, 1, ids.get(b.url), parent, 0, b.title, b.addedMs * 1000, b.addedMs * 1000, guid(id, 'b')]);
      for (const tag of b.tags ?? []) {
        const t = folderId(4, tag);
        const tid = nextId++;
        bmRows.push([tid, 1, ids.get(b.url), t, 0, null, b.addedMs * 1000, b.addedMs * 1000, guid(tid, 't')]);
      }
    }
    insertMany(db, 'INSERT INTO moz_bookmarks (id, type, fk, parent, position, title, dateAdded, lastModified, guid) VALUES (?,?,?,?,?,?,?,?,?)', bmRows);
  } finally {
    db.close();
  }
}

const CHROME_OFFSET_US = 11_644_473_600_000_000n;
export const toChromeTime = (ms: number) => BigInt(ms) * 1000n + CHROME_OFFSET_US;

/** A Chromium History file with these pages and visits. */
export function buildChromiumHistory(file: string, pages: FakeVisit[]): void {
  for (const f of [file, `${file}-journal`, `${file}-wal`]) fs.rmSync(f, { force: true });
  const db = openWritable(file);
  try {
    db.exec(CHROMIUM_SCHEMA);
    const urlRows: unknown[][] = [];
    const visitRows: unknown[][] = [];
    let vid = 0;
    pages.forEach((p, i) => {
      const last = p.times.length ? toChromeTime(Math.max(...p.times)) : 0n;
      urlRows.push([i + 1, p.url, p.title ?? '', p.times.length, p.typed ?? 0, last, p.hidden ? 1 : 0]);
      for (const t of p.times) visitRows.push([++vid, i + 1, toChromeTime(t), 0, 805306368, 0]);
    });
    insertMany(db, 'INSERT INTO urls (id, url, title, visit_count, typed_count, last_visit_time, hidden) VALUES (?,?,?,?,?,?,?)', urlRows);
    insertMany(db, 'INSERT INTO visits (id, url, visit_time, from_visit, transition, visit_duration) VALUES (?,?,?,?,?,?)', visitRows);
  } finally {
    db.close();
  }
}

/** A Chromium `Bookmarks` file as Chrome writes it (checksum, roots, version 1). */
export function chromiumBookmarksJson(entries: Array<{ url: string; name: string; folder: string[]; addedMs: number }>): string {
  let id = 10;
  const root = (name: string) => ({ children: [] as any[], date_added: '13300000000000000', date_modified: '0', guid: `root-${name}`, id: String(id++), name, type: 'folder' });
  const roots: Record<string, any> = { bookmark_bar: root('Bookmarks bar'), other: root('Other bookmarks'), synced: root('Mobile bookmarks') };
  for (const e of entries) {
    let node = roots[e.folder[0]] ?? roots.other;
    for (const name of e.folder.slice(1)) {
      let sub = node.children.find((c: any) => c.type === 'folder' && c.name === name);
      if (!sub) node.children.push((sub = { children: [], date_added: '13300000000000000', date_modified: '0', guid: `f-${id}`, id: String(id++), name, type: 'folder' }));
      node = sub;
    }
    node.children.push({ date_added: toChromeTime(e.addedMs).toString(), date_last_used: '0', guid: `b-${id}`, id: String(id++), name: e.name, type: 'url', url: e.url });
  }
  return JSON.stringify({ checksum: '0123456789abcdef0123456789abcdef', roots, version: 1 }, null, 3);
}
