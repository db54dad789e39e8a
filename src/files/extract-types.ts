/**
 * The shapes text extraction works with: its input, options, the OCR plug point and the result (src/files/extract.ts
 * is the entry point; detect.ts, decode.ts, textual.ts, image.ts and pdf.ts do the work).
 */
import type { Detected, ImageType } from './detect.ts';
import type { ExtractLimits } from './limits.ts';

export interface OcrResult {
  text: string;
  /** 0..1 */
  confidence?: number;
  language?: string;
}

/** Plug point for the shared OCR engine (src/ocr/engine.ts): recognise the text in one encoded image. */
export type OcrFunction = (image: Buffer, opts: { timeoutMs: number }) => Promise<OcrResult>;

export interface ExtractInput {
  /** Path of the file to read, or … */
  path?: string;
  /** … its bytes. */
  buffer?: Buffer;
  filename?: string;
  mimeType?: string;
}

export interface ExtractOptions {
  limits?: Partial<ExtractLimits>;
  ocr?: OcrFunction;
  /** Render pages of scanned PDFs for OCR (default true; needs @napi-rs/canvas and an `ocr` function). */
  renderPdfPages?: boolean;
}

export type ExtractMethod = 'pdf-text' | 'pdf-ocr' | 'ocr' | 'text' | 'html' | 'json' | 'none';

export interface ExtractResult {
  status: 'ready' | 'failed';
  method: ExtractMethod;
  text: string;
  /** PDF page count (all pages of the file, not only those read). */
  pages?: number;
  error?: string;
  warnings: string[];
  detected: Detected;
  /** Character set the text was decoded from (text kinds). */
  charset?: string;
  /** Set when OCR ran (images, scanned PDFs). */
  ocr?: OcrResult & { pages?: number };
  /** Set when the file would need OCR that did not happen: what it is and why. */
  needsOcr?: { kind: 'image' | 'pdf'; imageType?: ImageType; reason: string };
  truncated?: boolean;
  /** Image size when known. */
  image?: { width: number; height: number };
}
