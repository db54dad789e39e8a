/**
 * `memex import FILE` for browser files: Firefox `places.sqlite`, Chromium `History` (with the `Bookmarks` beside
 * it, when there is one) or `Bookmarks` (with the `History` beside it), and Takeout's `BrowserHistory.json`
 * (through importPages). One `web_page` document per URL; a second import stores only the pages whose visits or
 * bookmarks changed (as new versions). Options: `--browser NAME`, `--profile NAME` (the profile is part of each
 * page's identity; default: the folder the file is in), `--url`, `--token`.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { RunRecorder } from '../../coverage/recorder.ts';
import { SqliteSnapshot } from '../../sqlite/engine.ts';
import { connect, describeTotals, startImport, reportCoverage, sendDocuments, type Connection, type ImportIo, type Output, type OutgoingDocument } from '../submit.ts';
import {
  BrowserFileError,
  browserFileKind,
  chromiumBrowserOf,
  copyDatabase,
  mergeBookmarks,
  pageDocument,
  readChromium,
  readChromiumBookmarks,
  readFirefox,
  type PageRecord,
  type PageSource,
} from './history.ts';

const USAGE = 'usage: memex import places.sqlite|History|Bookmarks [--browser NAME] [--profile NAME] [--url URL] [--token TOKEN]';

async function readDatabase(file: string, read: typeof readFirefox): Promise<PageRecord[]> {
  const { dir, copy } = await copyDatabase(file);
  let snap: SqliteSnapshot | null = null;
  try {
    snap = SqliteSnapshot.open(copy);
    return snap.read(read);
  } finally {
    snap?.close();
    await fs.rm(dir, { recursive: true, force: true });
  }
}

async function exists(p: string): Promise<boolean> {
  return fs.stat(p).then((s) => s.isFile(), () => false);
}

export async function importBrowserCommand(argv: string[], io: ImportIo = {}): Promise<number> {
  const started = startImport(argv, io, USAGE);
  if (typeof started === 'number') return started;
  const { out, env, args } = started;
  const take = (k: string) => {
    const v = args.options.get(k);
    args.options.delete(k);
    return v;
  };
  const browserOpt = take('--browser');
  const profileOpt = take('--profile');
  if (args.options.size) {
    out.write(`memex import: unknown option ${[...args.options.keys()][0]}\n${USAGE}\n`);
    return 2;
  }
  const file = path.resolve(args.path);
  let head: Buffer;
  try {
    const fh = await fs.open(file, 'r');
    try {
      const buf = Buffer.alloc(64 * 1024);
      const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
      head = buf.subarray(0, bytesRead);
    } finally {
      await fh.close();
    }
  } catch (err) {
    out.write(`memex import: cannot read ${args.path}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
    return 2;
  }
  const kind = await browserFileKind(file, head);
  if (!kind) {
    out.write(`memex import: ${args.path} is not a Firefox places.sqlite, a Chromium History or a Bookmarks file\n`);
    return 2;
  }
  let conn: Connection;
  try {
    conn = connect(args, env, (m) => out.write(`memex import: ${m}\n`));
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n`);
    return 2;
  }
  const dir = path.dirname(file);
  const src: PageSource = {
    browser: browserOpt ?? (kind === 'firefox' ? 'firefox' : chromiumBrowserOf(file)),
    profile: profileOpt ?? path.basename(dir),
  };
  const run = new RunRecorder({ collector: 'import_browser', source_type: 'web_page', source_account_id: src.profile, source_ref: file });
  let pages: PageRecord[];
  let what: string;
  try {
    if (kind === 'firefox') {
      pages = await readDatabase(file, readFirefox);
      what = `Firefox history (profile ${src.profile})`;
    } else {
      // A Chromium profile keeps history and bookmarks in two files: one import takes both, so a page has one
      // document whichever file was named.
      const historyFile = kind === 'chromium' ? file : path.join(dir, 'History');
      const bookmarksFile = kind === 'chromium_bookmarks' ? file : path.join(dir, 'Bookmarks');
      const withHistory = kind === 'chromium' || ((await exists(historyFile)) && (await browserFileKind(historyFile, await fs.readFile(historyFile).then((b) => b.subarray(0, 16)))) === 'chromium');
      pages = withHistory ? await readDatabase(historyFile, readChromium) : [];
      const withBookmarks = kind === 'chromium_bookmarks' || (await exists(bookmarksFile));
      if (withBookmarks) {
        try {
          pages = mergeBookmarks(pages, readChromiumBookmarks(await fs.readFile(bookmarksFile, 'utf8')));
        } catch (err) {
          if (kind === 'chromium_bookmarks') throw err;
          out.write(`memex import: ${bookmarksFile} left out: ${(err as Error).message}\n`);
        }
      }
      what = `${src.browser} ${[withHistory ? 'history' : '', withBookmarks ? 'bookmarks' : ''].filter(Boolean).join(' and ')} (profile ${src.profile})`;
    }
  } catch (err) {
    const reason = err instanceof BrowserFileError ? err.message : `unreadable: ${(err as Error).message}`;
    out.write(`memex import: ${args.path}: ${reason}; nothing was imported from it\n`);
    await reportCoverage(conn, run, out, reason);
    return 1;
  }
  return importPages(pages, src, run, conn, out, what);
}

/** Sends the pages (one document each) and reports the run's coverage; the exit status. */
export async function importPages(pages: PageRecord[], src: PageSource, run: RunRecorder, conn: Connection, out: Output, what: string): Promise<number> {
  const docs: OutgoingDocument[] = [];
  let visits = 0;
  let bookmarked = 0;
  for (const p of pages) {
    run.seen(p.url);
    visits += p.visitCount;
    if (p.bookmarks.length) bookmarked++;
    const d = pageDocument(p, src);
    if ('doc' in d) docs.push(d.doc);
    else run.skipped(p.url, 'excluded', d.excluded);
  }
  out.write(`${what}: ${pages.length} pages, ${visits} visits, ${bookmarked} bookmarked; ${pages.length - docs.length} left out (internal pages, hidden redirects)\n`);
  const totals = await sendDocuments(conn.client, docs, run);
  for (const r of totals.refusals.slice(0, 20)) out.write(`  ${r.ref}: refused by the server: ${r.error}\n`);
  out.write(`pages: ${describeTotals(totals)}\n`);
  await reportCoverage(conn, run, out);
  return totals.failed + totals.pending > 0 ? 1 : 0;
}
