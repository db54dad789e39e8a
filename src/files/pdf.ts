/**
 * PDFs, read in a child process (pdf-worker.mjs, run by worker-pool.ts) under time and memory limits: the text layer, and for scanned
 * pages or an unreadable text layer the rendered pages OCR'd within one time budget; also a PDF's first page
 * rendered for its thumbnail.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { cleanText } from './decode.ts';
import type { Detected } from './detect.ts';
import type { ExtractOptions, ExtractResult, OcrFunction } from './extract-types.ts';
import { withTimeout } from './image.ts';
import { DEFAULT_LIMITS, type ExtractLimits } from './limits.ts';
import { WorkerPool } from './worker-pool.ts';

interface PdfWorkerOk {
  ok: true;
  numPages: number;
  pagesRead: number;
  pagesWithText: number;
  pageTexts: string[];
  truncated: boolean;
  scanned: boolean;
  /** A text layer that is not text (share of word-like text below the worker's threshold). */
  unreadable?: boolean;
  wordShare?: number;
  images: Uint8Array[];
  renderer: string;
  renderError?: string;
  warnings: string[];
}
type PdfWorkerReply = PdfWorkerOk | { ok: false; error: string };

const require = createRequire(import.meta.url);
let standardFontDataUrl: string | undefined;
function fontDir(): string {
  // pdf.js reads its standard fonts (for text content of PDFs using the base-14 fonts) from this folder.
  standardFontDataUrl ??= path.join(path.dirname(require.resolve('pdfjs-dist/package.json')), 'standard_fonts') + path.sep;
  return standardFontDataUrl;
}

/** The PDF worker (pdf-worker.mjs), reused across files; see WorkerPool. */
const pdfPool = new WorkerPool<PdfWorkerReply>({ script: new URL('./pdf-worker.mjs', import.meta.url), what: 'PDF extraction', quiet: true });

/** Stops the PDF extraction process (orderly shutdown, tests; it is unref'd, so it never blocks exit). */
export function shutdownPdfWorker(): Promise<void> {
  return pdfPool.close();
}

/**
 * The first page of a PDF as a PNG whose longer side is at most maxPx (for its thumbnail), rendered in
 * the PDF worker under the extraction's time and memory limits. Throws with the reason when it cannot.
 */
export async function renderPdfFirstPage(b: Buffer, maxPx: number, limits: ExtractLimits = DEFAULT_LIMITS): Promise<Buffer> {
  const r = await pdfPool.run({
    message: { data: new Uint8Array(b.buffer, b.byteOffset, b.byteLength), thumbnail: { maxPx }, maxImagePixels: limits.maxPixels, standardFontDataUrl: fontDir() },
    timeoutMs: limits.timeoutMs,
    memoryMb: limits.maxMemoryMb,
    timeoutError: `PDF page rendering timed out after ${limits.timeoutMs} ms`,
  });
  if (!r.ok) throw new Error(r.error);
  const png = r.images[0];
  if (!png) throw new Error('the PDF has no page to render');
  return Buffer.from(png.buffer, png.byteOffset, png.byteLength);
}

/** OCR of the rendered pages of a PDF, sharing one time budget. */
async function ocrPdfPages(r: PdfWorkerOk, limits: ExtractLimits, ocrFn: OcrFunction, warnings: string[]) {
  const pageTexts: string[] = [];
  const confidences: number[] = [];
  let language: string | undefined;
  // The whole OCR pass of one PDF shares one budget (timeoutMs), so 20 pages cannot take 20 × ocrTimeoutMs.
  const deadline = Date.now() + limits.timeoutMs;
  for (let i = 0; i < r.images.length; i++) {
    const left = deadline - Date.now();
    if (left <= 0) {
      warnings.push(`OCR stopped after ${i} of ${r.images.length} pages: time limit of ${limits.timeoutMs} ms reached`);
      break;
    }
    try {
      const img = Buffer.from(r.images[i].buffer, r.images[i].byteOffset, r.images[i].byteLength);
      const ms = Math.min(limits.ocrTimeoutMs, left);
      const o = await withTimeout(ocrFn(img, { timeoutMs: ms }), ms, 'OCR');
      pageTexts.push(cleanText(o.text ?? ''));
      if (typeof o.confidence === 'number') confidences.push(o.confidence);
      language ??= o.language;
    } catch (e) {
      warnings.push(`page ${i + 1}: OCR failed: ${(e as Error)?.message ?? String(e)}`);
      pageTexts.push('');
    }
  }
  const ocrText = cleanText(pageTexts.join('\n\n')).slice(0, limits.maxTextChars);
  const confidence = confidences.length ? confidences.reduce((a, c) => a + c, 0) / confidences.length : undefined;
  return { ocrText, ocr: { text: ocrText, confidence, language, pages: pageTexts.length } };
}

/**
 * A PDF whose text layer is unreadable (fonts without a Unicode map): OCR of its rendered pages replaces
 * the text, marked `method: 'pdf-ocr'`. Without OCR, or when OCR finds nothing, the text layer is kept
 * (null) with a warning and needsOcr, so nothing is lost.
 */
async function unreadablePdfFallback(r: PdfWorkerOk, text: string, det: Detected, limits: ExtractLimits, opts: ExtractOptions, warnings: string[]): Promise<ExtractResult | null> {
  const share = Math.round((r.wordShare ?? 0) * 100);
  warnings.push(`PDF text layer looks unreadable (${share}% word-like text)`);
  if (!opts.ocr || r.images.length === 0) {
    const reason = !opts.ocr ? 'text layer unreadable; OCR not available' : `text layer unreadable; ${r.renderError ?? 'no page could be rendered'}`;
    return { status: 'ready', method: 'pdf-text', text, pages: r.numPages, warnings, detected: det, truncated: r.truncated || undefined, needsOcr: { kind: 'pdf', reason } };
  }
  const { ocrText, ocr } = await ocrPdfPages(r, limits, opts.ocr, warnings);
  if (!ocrText) {
    warnings.push('OCR found no text; the text layer is kept');
    return null;
  }
  return { status: 'ready', method: 'pdf-ocr', text: ocrText, pages: r.numPages, warnings, detected: det, ocr };
}

/** Text of a PDF from its text layer, or OCR of its rendered pages when it has none (or an unreadable one). */
export async function extractPdf(b: Buffer, det: Detected, limits: ExtractLimits, opts: ExtractOptions): Promise<ExtractResult> {
  const wantRender = (opts.renderPdfPages ?? true) && !!opts.ocr && limits.maxOcrPages > 0;
  const r = await pdfPool.run({
    message: {
      // Sent as a copy (structured clone over the process channel): the caller keeps its Buffer.
      data: new Uint8Array(b.buffer, b.byteOffset, b.byteLength),
      maxImagePixels: limits.maxPixels,
      maxPages: limits.maxPages,
      maxTextChars: limits.maxTextChars,
      render: wantRender ? { maxPages: limits.maxOcrPages, maxPixels: limits.maxPixels, scale: 3 } : null,
      standardFontDataUrl: fontDir(),
    },
    timeoutMs: limits.timeoutMs,
    memoryMb: limits.maxMemoryMb,
    timeoutError: `PDF extraction timed out after ${limits.timeoutMs} ms`,
  });
  if (!r.ok) return { status: 'failed', method: 'pdf-text', text: '', error: r.error, warnings: [], detected: det };
  const warnings = [...r.warnings];
  const text = cleanText(r.pageTexts.join('\n\n'));
  if (r.unreadable) {
    const fallback = await unreadablePdfFallback(r, text, det, limits, opts, warnings);
    if (fallback) return fallback;
  }
  if (!r.scanned) {
    return { status: 'ready', method: 'pdf-text', text, pages: r.numPages, warnings, detected: det, truncated: r.truncated || undefined };
  }
  // No text layer: a scanned document (or one with only images).
  if (!opts.ocr) {
    return {
      status: 'failed',
      method: 'pdf-text',
      text,
      pages: r.numPages,
      error: 'PDF has no text layer and OCR is not available',
      warnings,
      detected: det,
      needsOcr: { kind: 'pdf', reason: 'no text layer; OCR not available' },
    };
  }
  if (!wantRender || r.images.length === 0) {
    const reason = r.renderError ?? (limits.maxOcrPages === 0 ? 'PDF OCR disabled (maxOcrPages = 0)' : 'no page could be rendered');
    return {
      status: 'failed',
      method: 'pdf-text',
      text,
      pages: r.numPages,
      error: `PDF has no text layer: ${reason}`,
      warnings,
      detected: det,
      needsOcr: { kind: 'pdf', reason },
    };
  }
  const { ocrText, ocr } = await ocrPdfPages(r, limits, opts.ocr, warnings);
  if (!ocrText) {
    return {
      status: 'failed',
      method: 'pdf-ocr',
      text: '',
      pages: r.numPages,
      error: 'PDF has no text layer and OCR found no text',
      warnings,
      detected: det,
      ocr,
    };
  }
  return { status: 'ready', method: 'pdf-ocr', text: ocrText, pages: r.numPages, warnings, detected: det, ocr };
}
