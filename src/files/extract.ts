/**
 * Text extraction for uploaded files: the entry point. It reads the input within the byte limit, decides the type
 * (detect.ts) and hands the bytes to the extractor for it: pdf.ts, image.ts (OCR), textual.ts (text, HTML, JSON;
 * charsets in decode.ts). Every stage has a limit (bytes, pages, pixels, seconds, characters), and every failure
 * becomes `status: 'failed'` with a readable `error`: nothing thrown from here is meant to reach the caller.
 *
 * OCR is injected (`ocr` option) so this module does not depend on the engine; without it images come back failed
 * with `error: 'OCR not available'` and `needsOcr` describing what would have been OCR'd.
 */
import fs from 'node:fs/promises';
import { detectType, type Detected } from './detect.ts';
import type { ExtractInput, ExtractOptions, ExtractResult } from './extract-types.ts';
import { shutdownHtmlWorker } from './html-convert.ts';
import { extractImage } from './image.ts';
import { DEFAULT_LIMITS, type ExtractLimits } from './limits.ts';
import { extractPdf, shutdownPdfWorker } from './pdf.ts';
import { extractTextual } from './textual.ts';

export type { ExtractInput, ExtractMethod, ExtractOptions, ExtractResult, OcrFunction, OcrResult } from './extract-types.ts';

/** Stops the PDF and HTML extraction processes (for orderly shutdown; they are unref'd, so they never block exit). */
export async function shutdownExtraction(): Promise<void> {
  await Promise.all([shutdownPdfWorker(), shutdownHtmlWorker()]);
}

/**
 * Extracts searchable text from one file. Never throws: any failure is `{status: 'failed', error}`.
 */
export async function extractText(input: ExtractInput, options: ExtractOptions = {}): Promise<ExtractResult> {
  const limits: ExtractLimits = { ...DEFAULT_LIMITS, ...options.limits };
  const unknown: Detected = { kind: 'binary', mimeType: input.mimeType ?? 'application/octet-stream', by: 'mime' };
  let b: Buffer;
  try {
    if (input.buffer) {
      b = input.buffer;
    } else if (input.path) {
      const st = await fs.stat(input.path);
      if (!st.isFile()) throw new Error('not a regular file');
      if (st.size > limits.maxBytes) {
        return { status: 'failed', method: 'none', text: '', error: `file too large for extraction: ${st.size} bytes exceeds ${limits.maxBytes}`, warnings: [], detected: unknown };
      }
      b = await fs.readFile(input.path);
    } else {
      return { status: 'failed', method: 'none', text: '', error: 'no input (path or buffer)', warnings: [], detected: unknown };
    }
  } catch (e) {
    return { status: 'failed', method: 'none', text: '', error: `cannot read file: ${(e as Error).message}`, warnings: [], detected: unknown };
  }
  if (b.length > limits.maxBytes) {
    return { status: 'failed', method: 'none', text: '', error: `file too large for extraction: ${b.length} bytes exceeds ${limits.maxBytes}`, warnings: [], detected: unknown };
  }
  let det: Detected = unknown;
  try {
    det = detectType(b, input.filename, input.mimeType);
    if (b.length === 0) return { status: 'failed', method: 'none', text: '', error: 'file is empty', warnings: [], detected: det };
    switch (det.kind) {
      case 'pdf':
        return await extractPdf(b, det, limits, options);
      case 'image':
        return await extractImage(b, det, limits, options);
      case 'binary':
        return { status: 'failed', method: 'none', text: '', error: `unsupported file type (${det.mimeType})`, warnings: [], detected: det };
      case 'html':
      case 'json':
      case 'text':
        return await extractTextual(b, det, limits);
    }
  } catch (e) {
    return { status: 'failed', method: 'none', text: '', error: `extraction failed: ${(e as Error)?.message ?? String(e)}`, warnings: [], detected: det };
  }
}
