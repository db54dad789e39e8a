/**
 * Web UI speed in Debian's Chromium: search-as-you-type latency (from the last keystroke to the
 * results painted, and the same less the 120 ms typing pause the page waits for) over the search
 * benchmark's generated corpus, and the JavaScript and CSS a first load fetches (gzipped).
 *
 *   node --import tsx bench/ui/run.ts [--pg] [--docs 100000] [--queries 200]
 *
 * Queries are the keyword and phrase queries of bench/search/corpus.ts, typed one character every
 * 30 ms (faster than the pause, so only the pause searches), each different from the one before.
 */
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import zlib from 'node:zlib';
import { chromium } from 'playwright-core';
import { loadServerConfig } from '../../src/config/server.ts';
import { openDatabase } from '../../src/db/index.ts';
import type { Database } from '../../src/db/types.ts';
import { composeGateway } from '../../src/app/gateway-services.ts';
import { createSearch } from '../../src/search/search.ts';
import { buildUi, CHROMIUM, CHROMIUM_ARGS } from '../../test/helpers/browser.ts';
import { openScratchPostgres } from '../lib/database.ts';
import { generateCorpus, loadCorpus } from '../search/corpus.ts';


const args = process.argv.slice(2);
const opt = (k: string, d: number) => (args.includes(k) ? Number(args[args.indexOf(k) + 1]) : d);
const usePg = args.includes('--pg');
const N = opt('--docs', 100_000);
const QUERIES = opt('--queries', 200);
const TOKEN = 'bench-token-0123456789';
const PAUSE_MS = 120; // ui/src/pages/search.tsx DEBOUNCE_MS

const uiDir = await buildUi();
const gz = (f: string) => zlib.gzipSync(fs.readFileSync(f), { level: 9 }).length;
const html = fs.readFileSync(path.join(uiDir, 'index.html'), 'utf8');
const firstLoad = [...html.matchAll(/(?:src|href)="\/(assets\/[^"]+)"/g)].map((m) => path.join(uiDir, m[1]));
const jsBytes = firstLoad.filter((f) => f.endsWith('.js')).reduce((a, f) => a + gz(f), 0);
const cssBytes = firstLoad.filter((f) => f.endsWith('.css')).reduce((a, f) => a + gz(f), 0);
console.log(`first load: JavaScript ${(jsBytes / 1024).toFixed(1)} KB gzipped, CSS ${(cssBytes / 1024).toFixed(1)} KB gzipped (${firstLoad.length} files)`);

const corpus = generateCorpus(N);
const { db, drop } = usePg
  ? await openScratchPostgres('memex_bench_ui')
  : await (async () => {
      const d: Database = await openDatabase({});
      return { db: d, drop: () => d.close() };
    })();
const t0 = Date.now();
await loadCorpus(db, corpus);
if (usePg) await db.exec('VACUUM ANALYZE');
const search = createSearch({ db });
await search.refreshIndex();
console.log(`${db.kind}: ${N} documents loaded and indexed in ${((Date.now() - t0) / 1000).toFixed(1)} s`);

const app = await composeGateway({ config: loadServerConfig({ LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), db, search, uiDir });
const url = await app.listen({ host: '127.0.0.1', port: 0 });
const browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
const page = await (await browser.newContext({ viewport: { width: 1440, height: 900 } })).newPage();
await page.goto(`${url}/`);
await page.getByLabel('Access token').fill(TOKEN);
await page.getByRole('button', { name: 'Sign in' }).click();
await page.getByRole('searchbox').waitFor();

const planned = corpus
  .plan(QUERIES * 4)
  .filter((q) => q.kind === 'keywords' || q.kind === 'phrase')
  .map((q) => q.q.replace(/"/g, ''));
const queries = planned.filter((q, i) => q !== planned[i - 1]).slice(0, QUERIES);

const IN_PAGE = `(q) => new Promise((resolve) => {
  const input = document.getElementById('q');
  let typed = 0;
  input.addEventListener('input', () => (typed = performance.now()), { once: true });
  const obs = new MutationObserver(() => {
    const ol = document.querySelector('ol.hits');
    if (typed && ol && ol.dataset.query === q) {
      obs.disconnect();
      requestAnimationFrame(() => resolve(performance.now() - typed));
    }
  });
  obs.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
})`;

const box = page.getByRole('searchbox');
const lat: number[] = [];
for (const [i, q] of queries.entries()) {
  await box.fill('');
  await box.pressSequentially(q.slice(0, -1), { delay: 30 });
  // Timed in the page: from the last key's input event to the frame after the hits for q render.
  // Timed in the page: from the last key's input event to the frame after the hits for q render.
  // (A string, not a function: tsx's transform would add helpers the page does not have.)
  await page.evaluate(`window.__typed = (${IN_PAGE})(${JSON.stringify(q.trim())}); 0`);
  const done = () => page.evaluate('window.__typed') as Promise<number>;
  await page.keyboard.type(q.slice(-1));
  const ms = await Promise.race([
    done(),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no results for "${q}" after 30 s`)), 30_000).unref()),
  ]).catch(async (err) => {
    console.log(await page.evaluate(`JSON.stringify([document.getElementById('q').value, document.querySelector('ol.hits')?.dataset.query, document.getElementById('search-status')?.textContent, location.hash])`));
    throw err;
  });
  if (i >= 5) lat.push(ms); // the first few warm up the page and the caches
}
lat.sort((a, b) => a - b);
const pct = (p: number) => lat[Math.min(lat.length - 1, Math.floor((p / 100) * lat.length))];
console.log(`machine: ${os.cpus().length} cores, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}, Node ${process.version}`);
console.log(
  `search as you type, ${lat.length} queries: keystroke to painted results p50 ${pct(50).toFixed(0)} ms, p95 ${pct(95).toFixed(0)} ms; ` +
    `after the ${PAUSE_MS} ms pause p50 ${(pct(50) - PAUSE_MS).toFixed(0)} ms, p95 ${(pct(95) - PAUSE_MS).toFixed(0)} ms`,
);
await browser.close();
await app.close();
await search.close();
await drop();
