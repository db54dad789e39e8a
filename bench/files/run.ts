/**
 * Files end to end through HTTP: N mixed files (text PDFs, PNGs with rendered text, text files) uploaded to
 * POST /v1/ingest/file of a real server (startServer: loopback HTTP, local object store, shared OCR engine, database),
 * CONCURRENCY uploads in flight. Prints files/s per kind and overall, request latency per kind, and the OCR time per
 * image (tesseract recognition only, as recorded in files.enrichment.ocr.ms) p50/p95.
 *
 * Run: node --import tsx bench/files/run.ts [pglite|postgres]   (env: FILES=500 CONCURRENCY=4)
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer } from '../../src/server.ts';
import { renderTextImage } from '../../test/ocr/render-text.ts';
import { makeTextPdf } from '../../test/files/fixtures.ts';

const backend = process.argv[2] === 'postgres' ? 'postgres' : 'pglite';
const N = Number(process.env.FILES ?? 500);
const CONCURRENCY = Number(process.env.CONCURRENCY ?? 4);
const TOKEN = 'bench-token-0123456789';
const WORDS = ['harbor', 'lantern', 'meadow', 'copper', 'violet', 'orchard', 'canyon', 'ember', 'glacier', 'saffron', 'quartz', 'willow'];
const pick = (i: number, k: number) => Array.from({ length: k }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ');
const pct = (xs: number[], p: number) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))] : NaN);

type Kind = 'pdf' | 'png' | 'txt';
interface Item {
  kind: Kind;
  name: string;
  bytes: Buffer;
}

async function makeItems(n: number): Promise<Item[]> {
  // 40% PDF, 20% PNG (OCR), 40% text: receipts and screenshots are a minority of a document folder.
  const items: Item[] = [];
  for (let i = 0; i < n; i++) {
    const r = i % 5;
    if (r === 0 || r === 3) {
      const lines = Array.from({ length: 20 }, (_, l) => `Line ${l} of document ${i}: ${pick(i + l, 6)}`);
      items.push({ kind: 'pdf', name: `doc-${i}.pdf`, bytes: await makeTextPdf([lines, lines.slice(0, 10)]) });
    } else if (r === 1) {
      items.push({ kind: 'png', name: `shot-${i}.png`, bytes: await renderTextImage(`Receipt ${i}\n${pick(i, 3)}\nTotal ${i}.50 EUR`, { size: 28 }) });
    } else {
      const text = Array.from({ length: 40 }, (_, l) => `Note ${i}.${l}: ${pick(i * 3 + l, 8)}.`).join('\n');
      items.push({ kind: 'txt', name: `note-${i}.txt`, bytes: Buffer.from(text) });
    }
  }
  return items;
}

const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-bench-files-http-'));
let dropDb: (() => Promise<void>) | undefined;
let databaseUrl: string | undefined;
if (backend === 'postgres') {
  const adminUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';
  const name = `memex_bench_files_${Date.now()}`;
  const c = new pg.Client({ connectionString: adminUrl });
  await c.connect();
  await c.query(`CREATE DATABASE ${name}`);
  await c.end();
  const u = new URL(adminUrl);
  u.pathname = `/${name}`;
  databaseUrl = u.toString();
  dropDb = async () => {
    const c2 = new pg.Client({ connectionString: adminUrl });
    await c2.connect();
    await c2.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c2.end();
  };
}

console.log(`machine: ${os.cpus().length} cores, Node ${process.version}; backend ${backend}; ${N} files, ${CONCURRENCY} uploads in flight`);
const items = await makeItems(N);
const count = (k: Kind) => items.filter((x) => x.kind === k).length;
console.log(`files: ${count('pdf')} PDF, ${count('png')} PNG, ${count('txt')} text; ${(items.reduce((a, x) => a + x.bytes.length, 0) / 1024 ** 2).toFixed(1)} MiB`);

const server = await startServer(
  { ...loadServerConfig({ DATA_DIR: path.join(dir, 'data'), PORT: '0', LOG_LEVEL: 'warn', AUTH_TOKEN: TOKEN }), databaseUrl },
  'all',
  { env: { OCR_POOL_SIZE: process.env.OCR_POOL_SIZE ?? '1' } },
);
const serverUrl = server.url!;
try {
  const latency: Record<Kind, number[]> = { pdf: [], png: [], txt: [] };
  const statuses = new Map<number, number>();
  let failedExtraction = 0;
  let next = 0;
  const t0 = performance.now();
  const worker = async () => {
    while (next < items.length) {
      const it = items[next++];
      const form = new FormData();
      form.append('meta', JSON.stringify({ path: `/bench/${it.name}`, mtime: 1767225600 }));
      form.append('upload', new Blob([it.bytes]), it.name);
      const t = performance.now();
      const res = await fetch(`${serverUrl}/v1/ingest/file`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: form });
      const body = (await res.json()) as { extraction_status?: string };
      latency[it.kind].push(performance.now() - t);
      statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
      if (body.extraction_status === 'failed') failedExtraction++;
    }
  };
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const secs = (performance.now() - t0) / 1000;
  console.log(`statuses: ${[...statuses].map(([s, n]) => `${s}×${n}`).join(', ')}; extraction failed: ${failedExtraction}`);
  console.log(`all: ${N} files in ${secs.toFixed(1)} s = ${(N / secs).toFixed(1)} files/s`);
  for (const k of ['pdf', 'png', 'txt'] as Kind[]) {
    const xs = latency[k];
    console.log(`  ${k}: request p50 ${pct(xs, 50).toFixed(0)} ms, p95 ${pct(xs, 95).toFixed(0)} ms (n=${xs.length})`);
  }
  const ocr = await server.db.query<{ ms: number }>(
    `SELECT (enrichment->'ocr'->>'ms')::float AS ms FROM files WHERE enrichment->'ocr'->>'ms' IS NOT NULL`,
  );
  const ms = ocr.rows.map((r) => Number(r.ms));
  console.log(`OCR per image (tesseract recognition): p50 ${pct(ms, 50).toFixed(0)} ms, p95 ${pct(ms, 95).toFixed(0)} ms (n=${ms.length})`);
  const chunks = await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM chunk_documents');
  console.log(`chunks linked: ${chunks.rows[0].n}`);

  // Second pass: every file again = duplicates (no extraction, no OCR).
  next = 0;
  statuses.clear();
  for (const k of Object.keys(latency) as Kind[]) latency[k] = [];
  const t1 = performance.now();
  await Promise.all(Array.from({ length: CONCURRENCY }, worker));
  const secs2 = (performance.now() - t1) / 1000;
  console.log(`re-upload (duplicates): ${(N / secs2).toFixed(1)} files/s; statuses: ${[...statuses].map(([s, n]) => `${s}×${n}`).join(', ')}`);
} finally {
  await server.close();
  await dropDb?.();
  await fs.rm(dir, { recursive: true, force: true });
}
