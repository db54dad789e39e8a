/**
 * Notes vault and browser history imports, time to searchable: a generated 5,000-note Obsidian vault (front
 * matter, tags, wiki links) and a generated Firefox places.sqlite with 200,000 visits, each imported by
 * `memex import PATH` (in this process, over HTTP) into a running gateway (`memex serve` in a child process,
 * embeddings off), then searched until the last item's unique word is found. A second import of each (nothing
 * changed) is timed too.
 *
 *   node --import tsx bench/imports/notes-history.ts [--notes 5000] [--visits 200000] [--pages 20000] [--backend pglite|postgres]
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { runImportCommand } from '../../src/imports/registry.ts';
import { buildFirefoxPlaces, type FakeVisit } from '../../test/helpers/browser-db-builder.ts';
import { machineLine, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    notes: { type: 'string', default: '5000' },
    visits: { type: 'string', default: '200000' },
    pages: { type: 'string', default: '20000' },
    backend: { type: 'string', default: 'pglite' },
  },
});
const NOTES = Number(values.notes);
const VISITS = Number(values.visits);
const PAGES = Number(values.pages);
const backend = values.backend as 'pglite' | 'postgres';
const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-bench-notes-'));

// A seeded generator: the same vault and history every run.
let seed = 42;
const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
const pick = <T>(a: T[]) => a[Math.floor(rand() * a.length)];
const WORDS = 'project meeting garden recipe budget travel lisbon train hotel conference draft idea reading book chapter review deadline invoice kernel search index query notes weekly plan family health running sourdough bread tomato'.split(' ');
const sentence = (n: number) => Array.from({ length: n }, () => pick(WORDS)).join(' ');

function generateVault(root: string, n: number): void {
  fs.mkdirSync(path.join(root, '.obsidian'), { recursive: true });
  fs.writeFileSync(path.join(root, '.obsidian', 'app.json'), '{}');
  const folders = ['Projects', 'Journal', 'Reading', 'Recipes', 'Areas/Health', 'Areas/Money'];
  for (const f of folders) fs.mkdirSync(path.join(root, f), { recursive: true });
  for (let i = 0; i < n; i++) {
    const folder = folders[i % folders.length];
    const links = Array.from({ length: 3 }, () => `[[Note ${Math.floor(rand() * n)}]]`).join(', ');
    const body = [
      '---',
      `title: Note ${i}`,
      `created: 2025-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')}`,
      `tags: [${pick(WORDS)}, ${pick(WORDS)}]`,
      '---',
      `# Note ${i}`,
      '',
      `${sentence(40)} uniqnote${i}.`,
      '',
      `## Links`,
      `See ${links}. #${pick(WORDS)}`,
      '',
      sentence(120),
      '',
    ].join('\n');
    fs.writeFileSync(path.join(root, folder, `Note ${i}.md`), body);
  }
}

function generateHistory(file: string, pages: number, visits: number): void {
  const start = Date.parse('2025-01-01T00:00:00Z');
  const list: FakeVisit[] = [];
  for (let i = 0; i < pages; i++) list.push({ url: `https://site${i % 700}.example/${sentence(2).replace(' ', '/')}/${i}`, title: `${sentence(4)} uniqpage${i}`, times: [] });
  // Zipf-like: a few pages visited very often, most once or twice.
  for (let v = 0; v < visits; v++) {
    const i = v < pages ? v : Math.floor(pages * rand() ** 3);
    list[i].times.push(start + Math.floor(rand() * 365 * 86_400_000));
  }
  buildFirefoxPlaces(file, list);
}

const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'off' });
const sink = { write: () => true } as unknown as NodeJS.WritableStream;
const importOnce = async (p: string) => {
  let text = '';
  const out = { write: (s: string) => ((text += s), true) } as unknown as NodeJS.WritableStream;
  const t = performance.now();
  const code = await runImportCommand([p, '--url', server.url, '--token', server.token], out ?? sink);
  const ms = performance.now() - t;
  if (code !== 0) throw new Error(`import of ${p} exited ${code}:\n${text}`);
  return { ms, text };
};
const searchable = async (word: string, since: number) => {
  for (;;) {
    const r = await fetch(`${server.url}/v1/search?q=${word}&k=1`, { headers: { authorization: `Bearer ${server.token}` } });
    if (r.ok && ((await r.json()) as { hits: unknown[] }).hits.length) return performance.now() - since;
    await new Promise((r) => setTimeout(r, 100));
  }
};

try {
  console.log(machineLine());
  console.log(`backend ${backend}; load ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}`);

  const vault = path.join(work, 'Vault');
  let t = performance.now();
  generateVault(vault, NOTES);
  console.log(`generated a ${NOTES}-note vault in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const first = await importOnce(vault);
  const vaultSearchable = await searchable(`uniqnote${NOTES - 1}`, t);
  console.log(`vault: import ${(first.ms / 1000).toFixed(1)} s (${Math.round(NOTES / (first.ms / 1000))} notes/s), searchable after ${(vaultSearchable / 1000).toFixed(1)} s`);
  console.log(`  ${first.text.trim().split('\n').filter((l) => l.startsWith('notes:')).join(' ')}`);
  const again = await importOnce(vault);
  console.log(`vault again (unchanged): ${(again.ms / 1000).toFixed(1)} s (${Math.round((100 * again.ms) / first.ms)} % of the first); ${again.text.split('\n').find((l) => l.startsWith('notes:'))}`);

  const places = path.join(work, 'profile.default-release', 'places.sqlite');
  fs.mkdirSync(path.dirname(places), { recursive: true });
  t = performance.now();
  generateHistory(places, PAGES, VISITS);
  console.log(`generated places.sqlite: ${PAGES} pages, ${VISITS} visits, ${(fs.statSync(places).size / 2 ** 20).toFixed(1)} MiB in ${((performance.now() - t) / 1000).toFixed(1)} s`);
  t = performance.now();
  const hist = await importOnce(places);
  const histSearchable = await searchable(`uniqpage${PAGES - 1}`, t);
  console.log(`history: import ${(hist.ms / 1000).toFixed(1)} s (${Math.round(VISITS / (hist.ms / 1000))} visits/s, ${Math.round(PAGES / (hist.ms / 1000))} pages/s), searchable after ${(histSearchable / 1000).toFixed(1)} s`);
  console.log(`  ${hist.text.trim().split('\n').filter((l) => l.startsWith('pages:')).join(' ')}`);
  const hist2 = await importOnce(places);
  console.log(`history again (unchanged): ${(hist2.ms / 1000).toFixed(1)} s (${Math.round((100 * hist2.ms) / hist.ms)} % of the first); ${hist2.text.split('\n').find((l) => l.startsWith('pages:'))}`);
  console.log(`gateway peak RSS ${server.peakRssMb()} MB`);
} finally {
  await server.stop();
  fs.rmSync(work, { recursive: true, force: true });
}
