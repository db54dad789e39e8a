/**
 * Files core benchmark (no HTTP, no database): object store throughput and memory, extraction per type, OCR per image.
 * Run: node --import tsx bench/files/core.ts
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { extractText } from '../../src/files/extract.ts';
import { LocalObjectStore } from '../../src/files/object-store.ts';
import { makeScannedPdf, makeTesseractOcr, makeTextPdf, renderTextPng } from '../../test/files/fixtures.ts';

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((p / 100) * xs.length))];
const root = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-bench-files-'));
console.log(`machine: ${os.cpus().length} cores, Node ${process.version}`);
try {
  const store = await LocalObjectStore.open({ root });

  // 1. One large upload streamed: throughput and peak RSS growth (shows the upload is not buffered whole).
  const totalMb = 256;
  const chunk = Buffer.alloc(1024 * 1024);
  async function* big() {
    for (let i = 0; i < totalMb; i++) {
      chunk.writeUInt32LE(i, 0);
      yield chunk;
    }
  }
  const rss0 = process.memoryUsage().rss;
  let peak = rss0;
  const timer = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
  let t = performance.now();
  await store.put(Readable.from(big()), { maxBytes: 1024 ** 3 });
  const secs = (performance.now() - t) / 1000;
  clearInterval(timer);
  console.log(`put ${totalMb} MiB stream: ${(totalMb / secs).toFixed(0)} MiB/s, RSS growth ${((peak - rss0) / 1024 ** 2).toFixed(0)} MiB`);

  // 2. Many small files, then the same files again (dedup path).
  const n = 500;
  const files = Array.from({ length: n }, (_, i) => Buffer.from(`file ${i} `.repeat(2000)));
  t = performance.now();
  for (const f of files) await store.put(Readable.from([f]), { maxBytes: 1e7 });
  const newRate = n / ((performance.now() - t) / 1000);
  t = performance.now();
  for (const f of files) await store.put(Readable.from([f]), { maxBytes: 1e7 });
  const dupRate = n / ((performance.now() - t) / 1000);
  console.log(`put ${n} x 16 KB: ${newRate.toFixed(0)} new files/s (fsync each), ${dupRate.toFixed(0)} duplicate files/s`);

  // 3. Extraction per type.
  const pdf = await makeTextPdf(Array.from({ length: 5 }, (_, p) => Array.from({ length: 20 }, (_, l) => `Page ${p} line ${l} invoice total amount due`)));
  const html = Buffer.from('<html><body>' + '<p>Some paragraph with <b>bold</b> words &amp; entities.</p>'.repeat(2000) + '</body></html>');
  const txt = Buffer.from('plain text line\n'.repeat(5000));
  for (const [name, buf, reps] of [
    ['pdf (5 pages)', pdf, 20],
    ['html (120 KB)', html, 50],
    ['text (80 KB)', txt, 200],
  ] as const) {
    const times: number[] = [];
    for (let i = 0; i < reps; i++) {
      const s = performance.now();
      const r = await extractText({ buffer: buf, filename: name.split(' ')[0] === 'pdf' ? 'a.pdf' : name.startsWith('html') ? 'a.html' : 'a.txt' });
      if (r.status !== 'ready') throw new Error(`${name}: ${r.error}`);
      times.push(performance.now() - s);
    }
    console.log(`extract ${name}: p50 ${pct(times, 50).toFixed(1)} ms, p95 ${pct(times, 95).toFixed(1)} ms`);
  }

  // 4. OCR with tesseract.js (one worker), images with rendered text, and a scanned 1-page PDF.
  const engine = await makeTesseractOcr();
  try {
    const imgs = await Promise.all(Array.from({ length: 10 }, (_, i) => renderTextPng([`RECEIPT NUMBER ${1000 + i}`, 'Thank you for shopping'])));
    const times: number[] = [];
    for (const img of imgs) {
      const s = performance.now();
      const r = await extractText({ buffer: img, filename: 'a.png' }, { ocr: engine.ocr });
      if (r.status !== 'ready') throw new Error(r.error);
      times.push(performance.now() - s);
    }
    console.log(`OCR PNG (1200x260): p50 ${pct(times, 50).toFixed(0)} ms, p95 ${pct(times, 95).toFixed(0)} ms (n=${times.length})`);
    const scanned = await makeScannedPdf([imgs[0]]);
    const st: number[] = [];
    for (let i = 0; i < 3; i++) {
      const s = performance.now();
      await extractText({ buffer: scanned, filename: 'scan.pdf' }, { ocr: engine.ocr });
      st.push(performance.now() - s);
    }
    console.log(`OCR scanned PDF page (render + OCR): p50 ${pct(st, 50).toFixed(0)} ms (n=${st.length})`);
  } finally {
    await engine.terminate();
  }
} finally {
  await fs.rm(root, { recursive: true, force: true });
}
