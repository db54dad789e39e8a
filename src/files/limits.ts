/** How much text extraction reads and how long it may take: the defaults, which files/config.ts lets the environment change. */
export interface ExtractLimits {
  /** Largest file extraction will read (bytes). */
  maxBytes: number;
  /** PDF pages whose text is read. */
  maxPages: number;
  /** Scanned-PDF pages rendered and OCR'd (0 disables PDF OCR). */
  maxOcrPages: number;
  /** Largest image (width × height) sent to OCR, and the pixel budget of one rendered PDF page. */
  maxPixels: number;
  /** Wall-clock limit for PDF parsing (the worker is terminated past it). */
  timeoutMs: number;
  /** Wall-clock limit for one OCR call. */
  ocrTimeoutMs: number;
  /** Longest text kept; the rest is cut with a warning. */
  maxTextChars: number;
  /** Memory limit of an extraction process (PDF, HTML): its heap, and its resident growth over its idle size. */
  maxMemoryMb: number;
  /** Longest HTML converted (characters); longer HTML is cut first, with a warning. */
  maxHtmlChars: number;
  /** Wall-clock budget of one HTML conversion (a separate process, killed past it; the extraction then fails). */
  htmlTimeoutMs: number;
}

export const DEFAULT_LIMITS: ExtractLimits = {
  maxBytes: 100 * 1024 * 1024,
  maxPages: 500,
  maxOcrPages: 20,
  maxPixels: 40_000_000,
  timeoutMs: 60_000,
  ocrTimeoutMs: 30_000,
  maxTextChars: 5_000_000,
  maxMemoryMb: 512,
  maxHtmlChars: 8_000_000,
  htmlTimeoutMs: 10_000,
};
