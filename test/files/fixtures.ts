/**
 * Test files generated on the fly: real PDFs (pdf-lib), images with rendered text (pdf.js + @napi-rs/canvas, using
 * the standard fonts shipped inside pdfjs-dist, so no system font is needed), and a real OCR function (tesseract.js
 * with the bundled English model, offline).
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import zlib from 'node:zlib';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { PNG } from 'pngjs';
import type { OcrFunction } from '../../src/files/extract.ts';

const require = createRequire(import.meta.url);

/** A PDF with a real text layer: one entry per page, each a list of lines. */
export async function makeTextPdf(pages: string[][]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = doc.addPage([595, 842]);
    lines.forEach((line, i) => page.drawText(line, { x: 50, y: 780 - i * 24, size: 16, font }));
  }
  return Buffer.from(await doc.save());
}

/** Renders lines of text to a PNG (large, black on white: easy for OCR). */
export async function renderTextPng(lines: string[], scale = 2): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.HelveticaBold);
  const page = doc.addPage([600, 60 + lines.length * 40]);
  lines.forEach((line, i) => page.drawText(line, { x: 30, y: page.getHeight() - 50 - i * 40, size: 26, font }));
  const pdfBytes = new Uint8Array(await doc.save());
  const pdfjs = await import('pdfjs-dist/legacy/build/pdf.mjs');
  const { createCanvas } = await import('@napi-rs/canvas');
  const pdf = await pdfjs.getDocument({
    data: pdfBytes,
    standardFontDataUrl: path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts') + path.sep,
    disableFontFace: true,
    verbosity: 0,
  }).promise;
  const p = await pdf.getPage(1);
  const vp = p.getViewport({ scale });
  const canvas = createCanvas(Math.floor(vp.width), Math.floor(vp.height));
  const ctx = canvas.getContext('2d');
  ctx.fillStyle = '#fff';
  ctx.fillRect(0, 0, canvas.width, canvas.height);
  await p.render({ canvas: canvas as never, canvasContext: ctx as never, viewport: vp }).promise;
  await pdf.destroy();
  return canvas.toBuffer('image/png');
}

/** A "scanned" PDF: each page is only an image, no text layer. */
export async function makeScannedPdf(pngs: Buffer[]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  for (const png of pngs) {
    const img = await doc.embedPng(png);
    const page = doc.addPage([img.width / 2, img.height / 2]);
    page.drawImage(img, { x: 0, y: 0, width: img.width / 2, height: img.height / 2 });
  }
  return Buffer.from(await doc.save());
}

/** A valid PNG of the given size (grey noise), written with pngjs. */
export function makePng(width: number, height: number): Buffer {
  const png = new PNG({ width, height });
  for (let i = 0; i < png.data.length; i += 4) {
    png.data[i] = png.data[i + 1] = png.data[i + 2] = (i * 7) % 256;
    png.data[i + 3] = 255;
  }
  return PNG.sync.write(png);
}

/** Real OCR: a tesseract.js worker with the bundled English model. Call `terminate` when done. */
export async function makeTesseractOcr(): Promise<{ ocr: OcrFunction; terminate: () => Promise<void> }> {
  const { createWorker } = await import('tesseract.js');
  const eng = require('@tesseract.js-data/eng') as { langPath: string };
  const worker = await createWorker('eng', 1, { langPath: eng.langPath, gzip: true, cacheMethod: 'none' });
  return {
    ocr: async (image) => {
      const r = await worker.recognize(image);
      return { text: r.data.text, confidence: r.data.confidence / 100, language: 'eng' };
    },
    terminate: async () => {
      await worker.terminate();
    },
  };
}

/** The image as a 24-bit bottom-up BMP (BITMAPINFOHEADER), written by hand: sharp has no BMP writer. */
export async function toBmp(image: Buffer): Promise<Buffer> {
  const sharp = (await import('sharp')).default;
  const { data, info } = await sharp(image).flatten({ background: '#ffffff' }).removeAlpha().raw().toBuffer({ resolveWithObject: true });
  const stride = Math.ceil((info.width * 3) / 4) * 4;
  const out = Buffer.alloc(54 + stride * info.height);
  out.write('BM', 0, 'latin1');
  out.writeUInt32LE(out.length, 2);
  out.writeUInt32LE(54, 10);
  out.writeUInt32LE(40, 14);
  out.writeInt32LE(info.width, 18);
  out.writeInt32LE(info.height, 22);
  out.writeUInt16LE(1, 26);
  out.writeUInt16LE(24, 28);
  out.writeUInt32LE(stride * info.height, 34);
  for (let y = 0; y < info.height; y++) {
    const row = 54 + (info.height - 1 - y) * stride;
    for (let x = 0; x < info.width; x++) {
      const p = (y * info.width + x) * info.channels;
      out[row + x * 3] = data[p + 2];
      out[row + x * 3 + 1] = data[p + 1];
      out[row + x * 3 + 2] = data[p];
    }
  }
  return out;
}

/** The image thresholded to a binary PBM (P4, 1 = black), written by hand: sharp has no Netpbm writer. */
export async function toPbm(image: Buffer): Promise<Buffer> {
  const sharp = (await import('sharp')).default;
  const { data, info } = await sharp(image).flatten({ background: '#ffffff' }).greyscale().raw().toBuffer({ resolveWithObject: true });
  const stride = Math.ceil(info.width / 8);
  const bits = Buffer.alloc(stride * info.height);
  for (let y = 0; y < info.height; y++)
    for (let x = 0; x < info.width; x++) if (data[y * info.width + x] < 128) bits[y * stride + (x >> 3)] |= 0x80 >> (x & 7);
  return Buffer.concat([Buffer.from(`P4\n# generated by memex tests\n${info.width} ${info.height}\n`, 'latin1'), bits]);
}

/**
 * A small, valid one-page PDF whose content stream is FlateDecode-compressed zeros that inflate to `inflatedMb`
 * megabytes (zlib compresses zeros ~1000:1, so 512 MB is ~0.5 MB of file): the "decompression bomb" of issue 47.
 * The page also shows `word`, so a reader that survives it has something to find.
 */
export async function makeInflatingPdf(inflatedMb: number, word = 'bomb'): Promise<Buffer> {
  // Streamed through zlib one megabyte at a time: the test process itself never holds the inflated size.
  const zeros = Buffer.alloc(1024 * 1024);
  const deflate = zlib.createDeflate({ level: 9 });
  const out: Buffer[] = [];
  deflate.on('data', (b: Buffer) => out.push(b));
  const done = new Promise((resolve, reject) => deflate.on('end', resolve).on('error', reject));
  deflate.write(`BT /F1 12 Tf 50 780 Td (${word}) Tj ET\n`);
  for (let i = 0; i < inflatedMb; i++) if (!deflate.write(zeros)) await new Promise((r) => deflate.once('drain', r));
  deflate.end();
  await done;
  const deflater = Buffer.concat(out);
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    null, // the stream, written below
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  const parts: Buffer[] = [Buffer.from('%PDF-1.4\n%\xe2\xe3\xcf\xd3\n', 'latin1')];
  const offsets: number[] = [];
  let length = parts[0].length;
  objects.forEach((body, i) => {
    offsets.push(length);
    const obj =
      body === null
        ? Buffer.concat([Buffer.from(`${i + 1} 0 obj\n<< /Length ${deflater.length} /Filter /FlateDecode >>\nstream\n`), deflater, Buffer.from('\nendstream\nendobj\n')])
        : Buffer.from(`${i + 1} 0 obj\n${body}\nendobj\n`);
    parts.push(obj);
    length += obj.length;
  });
  const xref = ['xref', `0 ${objects.length + 1}`, '0000000000 65535 f ', ...offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n `)].join('\n');
  parts.push(Buffer.from(`${xref}\ntrailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${length}\n%%EOF\n`));
  return Buffer.concat(parts);
}
