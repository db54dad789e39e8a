import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import iconv from 'iconv-lite';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { engineOcrFunction } from '../../src/agent/collectors/chatapp/ocr.ts';
import { detectType } from '../../src/files/detect.ts';
import { extractText, type OcrFunction } from '../../src/files/extract.ts';
import { createOcrEngine } from '../../src/ocr/engine.ts';
import { makePng, makeScannedPdf, makeTesseractOcr, makeTextPdf, renderTextPng, toBmp, toPbm } from './fixtures.ts';

let tmp: string;
beforeAll(async () => {
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-extract-'));
});
afterAll(async () => {
  await fs.rm(tmp, { recursive: true, force: true });
});

/** An OCR stand-in that records its calls; the real engine is used in the "real OCR" block below. */
function recordingOcr(text = 'recognised'): { ocr: OcrFunction; calls: Buffer[] } {
  const calls: Buffer[] = [];
  return { calls, ocr: async (img) => (calls.push(img), { text, confidence: 0.5 }) };
}

describe('PDF', () => {
  it('extracts the text layer of a real multi-page PDF, from a path', async () => {
    const pdf = await makeTextPdf([['Invoice 4711 from Acme Widgets', 'Total due: 99.50 EUR'], ['Second page mentions the ferret']]);
    const p = path.join(tmp, 'invoice.pdf');
    await fs.writeFile(p, pdf);
    const r = await extractText({ path: p, filename: 'invoice.pdf' });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('pdf-text');
    expect(r.pages).toBe(2);
    expect(r.text).toContain('Invoice 4711 from Acme Widgets');
    expect(r.text).toContain('Total due: 99.50 EUR');
    expect(r.text).toContain('ferret');
    expect(r.detected).toMatchObject({ kind: 'pdf', mimeType: 'application/pdf', by: 'magic' });
  });

  it('recognises a PDF by its content even under a misleading name and type', async () => {
    const pdf = await makeTextPdf([['renamed pdf still readable']]);
    const r = await extractText({ buffer: pdf, filename: 'notes.txt', mimeType: 'text/plain' });
    expect(r.method).toBe('pdf-text');
    expect(r.text).toContain('renamed pdf still readable');
  });

  it('reads at most maxPages pages and says so', async () => {
    const pdf = await makeTextPdf([['alpha page'], ['beta page'], ['gamma page'], ['delta page']]);
    const r = await extractText({ buffer: pdf, filename: 'long.pdf' }, { limits: { maxPages: 2 } });
    expect(r.status).toBe('ready');
    expect(r.pages).toBe(4);
    expect(r.text).toContain('beta page');
    expect(r.text).not.toContain('gamma');
    expect(r.warnings.join()).toContain('first 2 of 4 pages');
  });

  it('a corrupt PDF fails with a readable error instead of throwing', async () => {
    const r = await extractText({ buffer: Buffer.from('%PDF-1.7\n1 0 obj << /Type /Catalog >> garbage garbage\n'), filename: 'broken.pdf' });
    expect(r.status).toBe('failed');
    expect(r.error).toMatch(/PDF/);
    expect(r.text).toBe('');
  });

  it('a PDF cut in half fails or yields what survived, never throws', async () => {
    const pdf = await makeTextPdf([['half a document']]);
    const r = await extractText({ buffer: pdf.subarray(0, Math.floor(pdf.length / 2)), filename: 'cut.pdf' });
    expect(['ready', 'failed']).toContain(r.status);
    if (r.status === 'failed') expect(r.error).toBeTruthy();
  });

  it('stops a PDF that takes longer than the time limit (worker terminated)', async () => {
    const pdf = await makeTextPdf([['slow']]);
    const r = await extractText({ buffer: pdf, filename: 'slow.pdf' }, { limits: { timeoutMs: 1 } });
    expect(r.status).toBe('failed');
    expect(r.error).toBe('PDF extraction timed out after 1 ms');
    // The stuck worker was killed; the next file gets a fresh one.
    const next = await extractText({ buffer: pdf, filename: 'next.pdf' });
    expect(next).toMatchObject({ status: 'ready', text: 'slow' });
  });

  it('a PDF worker that runs out of memory fails that file only', async () => {
    // A 1 MB heap cannot even hold pdf.js: V8 aborts the extraction process as out of memory.
    const r = await extractText({ buffer: await makeTextPdf([['too big for the heap']]), filename: 'big.pdf' }, { limits: { maxMemoryMb: 1 } });
    expect(r).toMatchObject({ status: 'failed', error: 'PDF extraction exceeded the 1 MB memory limit' });
    const ok = await extractText({ buffer: await makeTextPdf([['after oom']]), filename: 'ok.pdf' });
    expect(ok).toMatchObject({ status: 'ready', text: 'after oom' });
  });

  it('the caller keeps its buffer intact (the worker gets a copy)', async () => {
    const pdf = await makeTextPdf([['keep my bytes']]);
    const copy = Buffer.from(pdf);
    await extractText({ buffer: pdf, filename: 'a.pdf' });
    expect(pdf.equals(copy)).toBe(true);
  });

  it('a scanned PDF (no text layer) without OCR is failed with needsOcr', async () => {
    const scanned = await makeScannedPdf([makePng(200, 100)]);
    const r = await extractText({ buffer: scanned, filename: 'scan.pdf' });
    expect(r.status).toBe('failed');
    expect(r.error).toBe('PDF has no text layer and OCR is not available');
    expect(r.needsOcr).toEqual({ kind: 'pdf', reason: 'no text layer; OCR not available' });
  });

  it('a scanned PDF with OCR: pages are rendered to PNG (at most maxOcrPages) and OCR text is returned', async () => {
    const scanned = await makeScannedPdf([makePng(300, 150), makePng(300, 150), makePng(300, 150)]);
    const { ocr, calls } = recordingOcr('page text');
    const r = await extractText({ buffer: scanned, filename: 'scan.pdf' }, { ocr, limits: { maxOcrPages: 2, maxPixels: 500_000 } });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('pdf-ocr');
    expect(calls).toHaveLength(2);
    for (const png of calls) {
      expect(png.subarray(1, 4).toString()).toBe('PNG');
      const w = png.readUInt32BE(16);
      const h = png.readUInt32BE(20);
      expect(w * h).toBeLessThanOrEqual(500_000);
    }
    expect(r.ocr).toMatchObject({ pages: 2, confidence: 0.5 });
    expect(r.warnings.join()).toContain('first 2 of 3 scanned pages');
  });

  it('OCR of a scanned PDF shares one time budget: slow pages past it are skipped with a warning', async () => {
    const scanned = await makeScannedPdf([makePng(100, 50), makePng(100, 50), makePng(100, 50)]);
    let calls = 0;
    const slowOcr: OcrFunction = async () => {
      calls++;
      await new Promise((r) => setTimeout(r, 1000));
      return { text: `page ${calls}` };
    };
    const r = await extractText({ buffer: scanned, filename: 'scan.pdf' }, { ocr: slowOcr, limits: { timeoutMs: 1500, ocrTimeoutMs: 10_000 } });
    expect(r.status).toBe('ready');
    expect(r.text).toContain('page 1');
    expect(calls).toBeLessThan(3);
    expect(r.warnings.join()).toMatch(/OCR stopped after \d of 3 pages/);
  });
});

describe('images', () => {
  it('without an OCR function an image is failed "OCR not available", carrying the image type', async () => {
    const r = await extractText({ buffer: makePng(40, 20), filename: 'shot.png' });
    expect(r).toMatchObject({
      status: 'failed',
      error: 'OCR not available',
      needsOcr: { kind: 'image', imageType: 'png' },
      image: { width: 40, height: 20 },
      detected: { kind: 'image', mimeType: 'image/png' },
    });
  });

  it('a truncated PNG fails with a readable error and is not sent to OCR', async () => {
    const png = makePng(64, 64);
    const { ocr, calls } = recordingOcr();
    const r = await extractText({ buffer: png.subarray(0, Math.floor(png.length * 0.6)), filename: 'cut.png' }, { ocr });
    expect(r.status).toBe('failed');
    expect(r.error).toMatch(/^truncated PNG/);
    expect(calls).toHaveLength(0);
  });

  it('a truncated JPEG (no end marker) fails', async () => {
    const jpegHead = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]);
    const r = await extractText({ buffer: jpegHead, filename: 'x.jpg' }, recordingOcr());
    expect(r.status).toBe('failed');
    expect(r.error).toMatch(/truncated JPEG/);
  });

  it('an image over the pixel limit is refused before OCR', async () => {
    const { ocr, calls } = recordingOcr();
    const r = await extractText({ buffer: makePng(300, 300), filename: 'big.png' }, { ocr, limits: { maxPixels: 50_000 } });
    expect(r.status).toBe('failed');
    expect(r.error).toBe('image too large for OCR: 300x300 exceeds 50000 pixels');
    expect(calls).toHaveLength(0);
  });

  it('HEIC is recognised but has no decoder: failed with needsOcr', async () => {
    const heic = Buffer.concat([Buffer.from([0, 0, 0, 0x18]), Buffer.from('ftypheic'), Buffer.alloc(100)]);
    const r = await extractText({ buffer: heic, filename: 'photo' }, recordingOcr());
    expect(r.status).toBe('failed');
    expect(r.detected.imageType).toBe('heic');
    expect(r.needsOcr?.imageType).toBe('heic');
  });

  it('GIF, TIFF, BMP and PBM reach the OCR function as PNG; a broken TIFF fails readably without OCR', async () => {
    const png = makePng(40, 20);
    const sharp = (await import('sharp')).default;
    const cases = [
      ['gif', await sharp(png).gif().toBuffer(), 'image/gif'],
      ['tiff', await sharp(png).tiff().toBuffer(), 'image/tiff'],
      ['bmp', await toBmp(png), 'image/bmp'],
      ['pnm', await toPbm(png), 'image/x-portable-bitmap'],
    ] as const;
    for (const [type, buf, mime] of cases) {
      const { ocr, calls } = recordingOcr();
      const r = await extractText({ buffer: buf, filename: 'picture' }, { ocr });
      expect(r.detected).toMatchObject({ kind: 'image', imageType: type, mimeType: mime, by: 'magic' });
      expect(r.status).toBe('ready');
      expect(r.image).toEqual({ width: 40, height: 20 });
      expect(calls).toHaveLength(1);
      expect(calls[0].subarray(1, 4).toString('latin1')).toBe('PNG');
    }
    const { ocr, calls } = recordingOcr();
    const broken = await extractText({ buffer: Buffer.concat([Buffer.from('II*\0'), Buffer.alloc(100)]), filename: 'scan.tif' }, { ocr });
    expect(broken.status).toBe('failed');
    expect(broken.error).toMatch(/^unreadable TIFF image/);
    expect(calls).toHaveLength(0);
  });

  it('an OCR engine that throws or hangs gives a failed result, not an exception', async () => {
    const png = makePng(10, 10);
    const boom = await extractText({ buffer: png, filename: 'a.png' }, { ocr: async () => Promise.reject(new Error('engine exploded')) });
    expect(boom).toMatchObject({ status: 'failed', error: 'OCR failed: engine exploded' });
    const hang = await extractText({ buffer: png, filename: 'a.png' }, { ocr: () => new Promise(() => {}), limits: { ocrTimeoutMs: 50 } });
    expect(hang).toMatchObject({ status: 'failed', error: 'OCR failed: OCR timed out after 50 ms' });
  });
});

describe('text, HTML, JSON', () => {
  it('HTML in ISO-8859-1 with a meta charset: decoded, scripts and styles dropped, paragraphs kept, entities decoded', async () => {
    const html = iconv.encode(
      `<!DOCTYPE html><html><head><meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">
       <title>ignored title</title><style>body { color: red }</style></head>
       <body><h1>Crème brûlée</h1><p>Déjà vu &amp; café &lt;3 &euro;</p>
       <script>var secret = "do not index";</script><p>Second paragraph</p></body></html>`,
      'latin1',
    );
    const r = await extractText({ buffer: html, filename: 'page.html' });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('html');
    expect(r.charset).toBe('windows-1252');
    expect(r.text).toContain('Crème brûlée');
    expect(r.text).toContain('Déjà vu & café <3 €');
    expect(r.text).not.toContain('do not index');
    expect(r.text).not.toContain('color: red');
    expect(r.text).toMatch(/café <3 €\n\nSecond paragraph/);
  });

  it('HTML is recognised by content without an extension', async () => {
    const r = await extractText({ buffer: Buffer.from('<!doctype html><html><body><p>hello <b>world</b></p></body></html>'), filename: 'download' });
    expect(r.method).toBe('html');
    expect(r.text).toBe('hello world');
  });

  it('hostile HTML: over-long input is cut with a warning; 20,000 nested elements do not crash', async () => {
    const long = Buffer.from('<html><body>' + '<p>filler words here</p>'.repeat(2000) + '<p>TAILWORD</p></body></html>');
    const r = await extractText({ buffer: long, filename: 'long.html' }, { limits: { maxHtmlChars: 5000 } });
    expect(r.status).toBe('ready');
    expect(r.text).not.toContain('TAILWORD');
    expect(r.warnings.join()).toContain('HTML cut at 5000 characters');
    const deep = Buffer.from('<html><body>' + '<div>'.repeat(20_000) + 'deep text' + '</div>'.repeat(20_000) + '<p>shallow text</p></body></html>');
    const d = await extractText({ buffer: deep, filename: 'deep.html' });
    expect(d.status).toBe('ready');
    expect(d.text).toContain('shallow text');
  });

  it('UTF-16 text with a BOM (LE and BE)', async () => {
    const s = 'Grüße aus Köln — 東京 ✓\r\nzweite Zeile';
    const le = Buffer.concat([Buffer.from([0xff, 0xfe]), iconv.encode(s, 'utf-16le')]);
    const be = Buffer.concat([Buffer.from([0xfe, 0xff]), iconv.encode(s, 'utf-16be')]);
    for (const [buf, cs] of [
      [le, 'utf-16le'],
      [be, 'utf-16be'],
    ] as const) {
      const r = await extractText({ buffer: buf, filename: 'notes.txt' });
      expect(r.status).toBe('ready');
      expect(r.charset).toBe(cs);
      expect(r.text).toBe('Grüße aus Köln — 東京 ✓\nzweite Zeile');
    }
  });

  it('a binary file that happens to start with a UTF-16 byte order mark stays binary', async () => {
    // Random bytes after FF FE decode to unpaired surrogates, which real UTF-16 text never holds.
    let x = 17;
    const noise = Buffer.from(Array.from({ length: 4096 }, () => ((x = (x * 1103515245 + 12345) & 0x7fffffff) >> 16) & 0xff));
    for (const bom of [[0xff, 0xfe], [0xfe, 0xff]]) {
      const buf = Buffer.concat([Buffer.from(bom), noise]);
      expect(detectType(buf, 'data.bin', 'application/octet-stream').kind).toBe('binary');
      const r = await extractText({ buffer: buf, filename: 'data.bin' });
      expect(r.status).toBe('failed');
    }
  });

  it('legacy 8-bit text without a declaration is detected (chardet) and decoded', async () => {
    const s = 'Le cœur a ses raisons que la raison ne connaît point. Où est la bibliothèque ? Très élégant, déjà réglé, à côté du château.';
    const r = await extractText({ buffer: iconv.encode(s, 'windows-1252'), filename: 'fr.txt' });
    expect(r.status).toBe('ready');
    expect(r.text).toBe(s);
  });

  it('Markdown stays as written; CRLF becomes LF; NUL-free', async () => {
    const r = await extractText({ buffer: Buffer.from('# Title\r\n\r\n- item one\r\n- item two\r\n'), filename: 'README.md' });
    expect(r).toMatchObject({ status: 'ready', method: 'text', text: '# Title\n\n- item one\n- item two' });
    expect(r.detected.mimeType).toBe('text/markdown');
  });

  it('JSON becomes searchable key: value lines', async () => {
    const json = JSON.stringify({ order: { id: 4711, customer: { name: 'Ada Lovelace' }, items: [{ sku: 'W-1', qty: 2 }] }, paid: true });
    const r = await extractText({ buffer: Buffer.from(json), filename: 'order.json' });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('json');
    expect(r.text.split('\n')).toEqual(['order.id: 4711', 'order.customer.name: Ada Lovelace', 'order.items[0].sku: W-1', 'order.items[0].qty: 2', 'paid: true']);
  });

  it('invalid JSON is indexed as plain text with a warning', async () => {
    const r = await extractText({ buffer: Buffer.from('{"a": 1, oops'), filename: 'bad.json' });
    expect(r.status).toBe('ready');
    expect(r.text).toBe('{"a": 1, oops');
    expect(r.warnings[0]).toMatch(/invalid JSON/);
  });

  it('long text is cut at maxTextChars with a warning', async () => {
    const r = await extractText({ buffer: Buffer.from('word '.repeat(1000)), filename: 'a.txt' }, { limits: { maxTextChars: 1000 } });
    expect(r.text.length).toBe(1000);
    expect(r.truncated).toBe(true);
    expect(r.warnings.join()).toContain('truncated');
  });

  it('binary, empty and oversized files fail cleanly', async () => {
    const zip = await extractText({ buffer: Buffer.concat([Buffer.from('PK\x03\x04'), Buffer.alloc(50)]), filename: 'a.docx' });
    expect(zip).toMatchObject({ status: 'failed', method: 'none' });
    expect(zip.error).toMatch(/^unsupported file type/);
    const bin = await extractText({ buffer: Buffer.from([1, 2, 3, 0, 5, 6, 0, 0, 9, 0, 1, 2]), filename: 'blob.dat' });
    expect(bin.status).toBe('failed');
    const empty = await extractText({ buffer: Buffer.alloc(0), filename: 'empty.txt' });
    expect(empty).toMatchObject({ status: 'failed', error: 'file is empty' });
    const blank = await extractText({ buffer: Buffer.from('  \n\n '), filename: 'blank.txt' });
    expect(blank).toMatchObject({ status: 'failed', error: 'no text found' });
    const p = path.join(tmp, 'big.txt');
    await fs.writeFile(p, 'x'.repeat(5000));
    const big = await extractText({ path: p, filename: 'big.txt' }, { limits: { maxBytes: 4096 } });
    expect(big.error).toBe('file too large for extraction: 5000 bytes exceeds 4096');
    const missing = await extractText({ path: path.join(tmp, 'nope.txt') });
    expect(missing.error).toMatch(/^cannot read file/);
  });

  it('detectType: magic bytes first, then extension, then MIME, then content', () => {
    expect(detectType(Buffer.from('%PDF-1.4 ...'), 'a.txt').kind).toBe('pdf');
    expect(detectType(makePng(1, 1), 'a.pdf')).toMatchObject({ kind: 'image', imageType: 'png', by: 'magic' });
    expect(detectType(Buffer.from('{"a":1}'), 'a.json')).toMatchObject({ kind: 'json', by: 'extension' });
    expect(detectType(Buffer.from('{"a":1}'), 'noext', 'application/json')).toMatchObject({ kind: 'json', by: 'mime' });
    expect(detectType(Buffer.from('plain words'), 'noext')).toMatchObject({ kind: 'text', by: 'content' });
    // A text file claiming to be a PNG is not sent to OCR.
    expect(detectType(Buffer.from('not an image'), 'fake.png', 'image/png').kind).toBe('text');
  });
});

describe('real OCR (tesseract.js, bundled English model)', () => {
  let engine: Awaited<ReturnType<typeof makeTesseractOcr>>;
  beforeAll(async () => {
    engine = await makeTesseractOcr();
  });
  const sharedEngine = createOcrEngine({ languages: ['en'], timeoutMs: 60_000 });
  afterAll(async () => {
    await engine?.terminate();
    await sharedEngine.close();
  });

  it('reads the words of a PNG with rendered text', async () => {
    const png = await renderTextPng(['PARCEL RECEIPT 73914', 'Kingfisher Logistics']);
    const r = await extractText({ buffer: png, filename: 'screenshot.png' }, { ocr: engine.ocr });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('ocr');
    expect(r.text).toContain('RECEIPT');
    expect(r.text).toContain('73914');
    expect(r.text).toMatch(/Kingfisher/);
    expect(r.ocr?.confidence).toBeGreaterThan(0.5);
  });

  it('reads the words of the same text saved as BMP, PBM and GIF, through the shared engine', async () => {
    const shared = engineOcrFunction(() => sharedEngine);
    const png = await renderTextPng(['PARCEL RECEIPT 73914', 'Kingfisher Logistics']);
    const sharp = (await import('sharp')).default;
    for (const [name, buf] of [
      ['scan.bmp', await toBmp(png)],
      ['scan.pbm', await toPbm(png)],
      ['scan.gif', await sharp(png).gif().toBuffer()],
    ] as const) {
      const r = await extractText({ buffer: buf, filename: name }, { ocr: shared });
      expect(r.status, name).toBe('ready');
      expect(r.text, name).toContain('73914');
      expect(r.text, name).toMatch(/Kingfisher/);
    }
  });

  it('reads a scanned PDF by rendering its pages and OCRing them', async () => {
    const page = await renderTextPng(['QUARTERLY STATEMENT', 'Account 55021']);
    const scanned = await makeScannedPdf([page]);
    const r = await extractText({ buffer: scanned, filename: 'scan.pdf' }, { ocr: engine.ocr });
    expect(r.status).toBe('ready');
    expect(r.method).toBe('pdf-ocr');
    expect(r.text).toContain('STATEMENT');
    expect(r.text).toContain('55021');
  });
});
