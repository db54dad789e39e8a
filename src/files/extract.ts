/**
 * Text extraction for uploaded files.
 *
 * The type is decided by the content first (magic bytes), then by extension and declared MIME type, so a PDF named
 * `.txt` is still read as a PDF and a text file claiming `image/png` is not sent to OCR. Every stage has a limit
 * (bytes, pages, pixels, seconds, characters), and every failure becomes `status: 'failed'` with a readable `error`:
 * nothing thrown from this module is meant to reach the caller.
 *
 * OCR is injected (`ocr` option) so this module does not depend on the engine; without it images come back failed
 * with `error: 'OCR not available'` and `needsOcr` describing what would have been OCR'd.
 */
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import chardet from 'chardet';
import iconv from 'iconv-lite';
import { imageSize } from 'image-size';
import { sniffRaster, toPng } from '../ocr/raster.ts';
import { canonicalJson } from '../util/hash.ts';
import { hasLoneSurrogate } from '../util/json-input.ts';
import { htmlToReadable, shutdownHtmlWorker } from './html-convert.ts';
import { DEFAULT_LIMITS, type ExtractLimits } from './limits.ts';
import { WorkerPool } from './worker-pool.ts';

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

export type ImageType = 'png' | 'jpeg' | 'webp' | 'tiff' | 'heic' | 'gif' | 'bmp' | 'pnm';
export type FileKind = 'pdf' | 'image' | 'html' | 'json' | 'text' | 'binary';

export interface Detected {
  kind: FileKind;
  /** MIME type from the content (or the best guess from the name when the content says nothing). */
  mimeType: string;
  imageType?: ImageType;
  /** How kind was decided. */
  by: 'magic' | 'extension' | 'mime' | 'content';
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

// ---------------------------------------------------------------------------------------------------------------
// Type detection

const EXT_KIND: Record<string, { kind: FileKind; mime: string; imageType?: ImageType }> = {
  pdf: { kind: 'pdf', mime: 'application/pdf' },
  png: { kind: 'image', mime: 'image/png', imageType: 'png' },
  jpg: { kind: 'image', mime: 'image/jpeg', imageType: 'jpeg' },
  jpeg: { kind: 'image', mime: 'image/jpeg', imageType: 'jpeg' },
  webp: { kind: 'image', mime: 'image/webp', imageType: 'webp' },
  tif: { kind: 'image', mime: 'image/tiff', imageType: 'tiff' },
  tiff: { kind: 'image', mime: 'image/tiff', imageType: 'tiff' },
  heic: { kind: 'image', mime: 'image/heic', imageType: 'heic' },
  heif: { kind: 'image', mime: 'image/heif', imageType: 'heic' },
  gif: { kind: 'image', mime: 'image/gif', imageType: 'gif' },
  bmp: { kind: 'image', mime: 'image/bmp', imageType: 'bmp' },
  pbm: { kind: 'image', mime: 'image/x-portable-bitmap', imageType: 'pnm' },
  pgm: { kind: 'image', mime: 'image/x-portable-graymap', imageType: 'pnm' },
  ppm: { kind: 'image', mime: 'image/x-portable-pixmap', imageType: 'pnm' },
  pnm: { kind: 'image', mime: 'image/x-portable-anymap', imageType: 'pnm' },
  html: { kind: 'html', mime: 'text/html' },
  htm: { kind: 'html', mime: 'text/html' },
  xhtml: { kind: 'html', mime: 'application/xhtml+xml' },
  json: { kind: 'json', mime: 'application/json' },
  txt: { kind: 'text', mime: 'text/plain' },
  text: { kind: 'text', mime: 'text/plain' },
  md: { kind: 'text', mime: 'text/markdown' },
  markdown: { kind: 'text', mime: 'text/markdown' },
  csv: { kind: 'text', mime: 'text/csv' },
  tsv: { kind: 'text', mime: 'text/tab-separated-values' },
  log: { kind: 'text', mime: 'text/plain' },
};

const IMAGE_MIME: Record<ImageType, string> = {
  png: 'image/png',
  jpeg: 'image/jpeg',
  webp: 'image/webp',
  tiff: 'image/tiff',
  heic: 'image/heic',
  gif: 'image/gif',
  bmp: 'image/bmp',
  pnm: 'image/x-portable-anymap',
};

/** Netpbm types by magic number: P1/P4 bitmap, P2/P5 greymap, P3/P6 pixmap. */
const NETPBM_MIME = ['bitmap', 'graymap', 'pixmap', 'bitmap', 'graymap', 'pixmap'].map((t) => `image/x-portable-${t}`);

function sniffImage(b: Buffer): ImageType | undefined {
  if (b.length >= 8 && b.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (b.length >= 3 && b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff) return 'jpeg';
  if (b.length >= 12 && b.toString('latin1', 0, 4) === 'RIFF' && b.toString('latin1', 8, 12) === 'WEBP') return 'webp';
  if (b.length >= 4 && (b.toString('latin1', 0, 4) === 'II*\0' || b.toString('latin1', 0, 4) === 'MM\0*')) return 'tiff';
  if (b.length >= 6 && (b.toString('latin1', 0, 6) === 'GIF87a' || b.toString('latin1', 0, 6) === 'GIF89a')) return 'gif';
  if (b.length >= 12 && b.toString('latin1', 4, 8) === 'ftyp') {
    const brand = b.toString('latin1', 8, 12);
    if (['heic', 'heix', 'heim', 'heis', 'hevc', 'hevx', 'mif1', 'msf1', 'heif'].includes(brand)) return 'heic';
  }
  // BMP and Netpbm (PBM/PGM/PPM): by a header that parses, since "BM" and "P1".."P6" alone also start text.
  return sniffRaster(b);
}

function hasBom(b: Buffer): boolean {
  return (
    (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) ||
    (b.length >= 2 && ((b[0] === 0xff && b[1] === 0xfe) || (b[0] === 0xfe && b[1] === 0xff))) ||
    (b.length >= 4 && b[0] === 0 && b[1] === 0 && b[2] === 0xfe && b[3] === 0xff)
  );
}

/**
 * A UTF-16 byte order mark followed by bytes that are not UTF-16: random bytes that happen to start with FF FE
 * (one binary file in 65,536) decode to unpaired surrogates, which real UTF-16 text never holds.
 */
function falseUtf16Bom(b: Buffer): boolean {
  const le = b[0] === 0xff && b[1] === 0xfe;
  const be = b[0] === 0xfe && b[1] === 0xff;
  if (!le && !be) return false;
  const head = b.subarray(2, 2 + 8192);
  const text = iconv.decode(head.subarray(0, head.length & ~1), le ? 'utf-16le' : 'utf-16be');
  // A surrogate pair cut at the end of the head is not a sign of binary.
  return hasLoneSurrogate(text.replace(/[\uD800-\uDBFF]$/, ''));
}

/** Binary = NUL bytes or many control characters in the head, unless a byte order mark explains them. */
function looksBinary(b: Buffer): boolean {
  if (falseUtf16Bom(b)) return true;
  if (hasBom(b)) return false;
  const head = b.subarray(0, 8192);
  let ctrl = 0;
  for (const c of head) {
    if (c === 0) return !looksLikeUtf16NoBom(head) && !bomlessUtf32(head);
    if (c < 9 || (c > 13 && c < 32 && c !== 27)) ctrl++;
  }
  return head.length > 0 && ctrl / head.length > 0.1;
}

/** ASCII-range UTF-16 without a BOM has NULs in every other byte. */
function looksLikeUtf16NoBom(head: Buffer): boolean {
  if (head.length < 4) return false;
  let evenNul = 0;
  let oddNul = 0;
  for (let i = 0; i + 1 < head.length; i += 2) {
    if (head[i] === 0) evenNul++;
    if (head[i + 1] === 0) oddNul++;
  }
  const pairs = Math.floor(head.length / 2);
  return (oddNul > pairs * 0.6 && evenNul < pairs * 0.05) || (evenNul > pairs * 0.6 && oddNul < pairs * 0.05);
}

/** Decides what a file is: magic bytes, then extension, then declared MIME type, then a look at the content. */
export function detectType(b: Buffer, filename?: string, mimeType?: string): Detected {
  const head = b.subarray(0, 1024);
  if (head.indexOf('%PDF-') !== -1) return { kind: 'pdf', mimeType: 'application/pdf', by: 'magic' };
  const img = sniffImage(b);
  if (img) return { kind: 'image', mimeType: img === 'pnm' ? NETPBM_MIME[b[1] - 0x31] : IMAGE_MIME[img], imageType: img, by: 'magic' };
  // Known binary containers we do not extract (zip/Office, gzip, 7z, executables, media).
  if (
    b.length >= 4 &&
    (b.toString('latin1', 0, 4) === 'PK\x03\x04' ||
      (b[0] === 0x1f && b[1] === 0x8b) ||
      b.toString('latin1', 0, 4) === '\x7fELF' ||
      b.toString('latin1', 0, 6) === '7z\xbc\xaf\x27\x1c')
  ) {
    return { kind: 'binary', mimeType: mimeFromName(filename) ?? mimeType ?? 'application/octet-stream', by: 'magic' };
  }
  const binary = looksBinary(b);
  const ext = path.extname(filename ?? '').slice(1).toLowerCase();
  const byExt = EXT_KIND[ext];
  if (byExt && !binary && byExt.kind !== 'pdf' && byExt.kind !== 'image') {
    return { kind: byExt.kind, mimeType: byExt.mime, by: 'extension' };
  }
  const mime = (mimeType ?? '').split(';')[0].trim().toLowerCase();
  if (!binary) {
    if (mime === 'text/html' || mime === 'application/xhtml+xml') return { kind: 'html', mimeType: mime, by: 'mime' };
    if (mime === 'application/json' || mime.endsWith('+json')) return { kind: 'json', mimeType: mime, by: 'mime' };
    const start = decodeHead(b);
    if (/^\s*(<!doctype html|<html[\s>]|<head[\s>]|<body[\s>])/i.test(start)) {
      return { kind: 'html', mimeType: 'text/html', by: 'content' };
    }
    if (mime.startsWith('text/')) return { kind: 'text', mimeType: mime, by: 'mime' };
    return { kind: 'text', mimeType: 'text/plain', by: 'content' };
  }
  return { kind: 'binary', mimeType: byExt?.mime ?? (mime || 'application/octet-stream'), by: byExt ? 'extension' : 'content' };
}

function decodeHead(b: Buffer): string {
  const head = b.subarray(0, 512);
  if (head[0] === 0xff && head[1] === 0xfe) return iconv.decode(head, 'utf-16le');
  if (head[0] === 0xfe && head[1] === 0xff) return iconv.decode(head, 'utf-16be');
  return head.toString('latin1').replace(/^\xef\xbb\xbf/, '');
}

export function mimeFromName(filename?: string): string | undefined {
  const ext = path.extname(filename ?? '').slice(1).toLowerCase();
  return EXT_KIND[ext]?.mime;
}

// ---------------------------------------------------------------------------------------------------------------
// Charset detection and decoding

/** WHATWG treats these labels as windows-1252; so do browsers, and so do we. */
const LATIN1_LABELS = new Set(['iso-8859-1', 'iso8859-1', 'latin1', 'latin-1', 'l1', 'us-ascii', 'ascii', 'cp819', 'ibm819']);

function normaliseCharset(label: string): string | undefined {
  const l = label.trim().toLowerCase();
  if (LATIN1_LABELS.has(l)) return 'windows-1252';
  if (l === 'utf8') return 'utf-8';
  return iconv.encodingExists(l) ? l : undefined;
}

function htmlDeclaredCharset(b: Buffer): string | undefined {
  const head = b.subarray(0, 4096).toString('latin1');
  const m =
    /<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_:.+-]+)/i.exec(head) ?? /<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_.:+-]+)/i.exec(head);
  return m ? normaliseCharset(m[1]) : undefined;
}

/** UTF-32 without a byte-order mark: ASCII-range text has three NULs in every four bytes. */
function bomlessUtf32(head: Buffer): 'utf-32le' | 'utf-32be' | undefined {
  const groups = Math.floor(Math.min(head.length, 8192) / 4);
  if (groups < 2) return undefined;
  let le = 0;
  let be = 0;
  for (let i = 0; i < groups * 4; i += 4) {
    if (head[i + 2] === 0 && head[i + 3] === 0 && (head[i + 1] !== 0 || head[i] !== 0)) le++;
    if (head[i] === 0 && head[i + 1] === 0 && (head[i + 2] !== 0 || head[i + 3] !== 0)) be++;
  }
  if (le > groups * 0.9) return 'utf-32le';
  if (be > groups * 0.9) return 'utf-32be';
  return undefined;
}

/** ISO-2022-JP (7-bit with escape sequences, so also valid UTF-8): recognised by its designations. */
function iso2022(b: Buffer): 'iso-2022-jp' | undefined {
  const head = b.subarray(0, 64 * 1024).toString('latin1');
  return /\x1b(\$[@B]|\$\(D|\([BJI])/.test(head) && /\x1b\$[@B(]/.test(head) ? 'iso-2022-jp' : undefined;
}

/** The encoding the bytes declare for themselves: an XML declaration (any text), or (HTML) a meta charset. */
function declaredCharset(b: Buffer, html: boolean): string | undefined {
  const head = b.subarray(0, 4096).toString('latin1');
  const xml = /^\s*<\?xml[^>]*?\sencoding\s*=\s*["']([A-Za-z0-9_.:+-]+)["']/i.exec(head);
  let declared = xml ? normaliseCharset(xml[1]) : html ? htmlDeclaredCharset(b) : undefined;
  // A declared UTF-16/32 cannot describe ASCII-compatible bytes that spell out the declaration.
  if (declared && /^(utf-?16|utf-?32|ucs-?2)/i.test(declared)) declared = undefined;
  return declared;
}

/** Decoding by byte-order mark (UTF-32 before UTF-16: FF FE 00 00 starts both). */
function decodeByBom(b: Buffer): { text: string; charset: string } | undefined {
  if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return { text: b.subarray(3).toString('utf8'), charset: 'utf-8' };
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xfe && b[2] === 0 && b[3] === 0) return { text: iconv.decode(b.subarray(4), 'utf-32le'), charset: 'utf-32le' };
  if (b.length >= 4 && b[0] === 0 && b[1] === 0 && b[2] === 0xfe && b[3] === 0xff) return { text: iconv.decode(b.subarray(4), 'utf-32be'), charset: 'utf-32be' };
  if (b.length >= 2 && b[0] === 0xff && b[1] === 0xfe) return { text: iconv.decode(b.subarray(2), 'utf-16le'), charset: 'utf-16le' };
  if (b.length >= 2 && b[0] === 0xfe && b[1] === 0xff) return { text: iconv.decode(b.subarray(2), 'utf-16be'), charset: 'utf-16be' };
  return undefined;
}

/**
 * Decodes bytes to text: a BOM wins; then the encoding the document declares (`<?xml encoding?>`, and for HTML
 * `<meta charset>`); then UTF-32 without BOM and ISO-2022-JP by their byte patterns; then valid UTF-8; then a
 * statistical guess (chardet), decoded with iconv-lite; windows-1252 as the last resort (never fails, keeps every byte).
 */
export function decodeText(b: Buffer, opts: { html?: boolean } = {}): { text: string; charset: string; warnings: string[] } {
  const warnings: string[] = [];
  const bom = decodeByBom(b);
  if (bom) return { ...bom, warnings };
  const declared = declaredCharset(b, !!opts.html);
  if (declared) return { text: iconv.decode(b, declared), charset: declared, warnings };
  const utf32 = bomlessUtf32(b);
  if (utf32) return { text: iconv.decode(b, utf32), charset: utf32, warnings };
  const jis = iso2022(b);
  if (jis) return { text: new TextDecoder(jis).decode(b), charset: jis, warnings };
  try {
    return { text: new TextDecoder('utf-8', { fatal: true }).decode(b), charset: 'utf-8', warnings };
  } catch {
    /* not UTF-8 */
  }
  const guess = chardet.detect(b.subarray(0, 1024 * 1024));
  const cs = guess ? normaliseCharset(guess) : undefined;
  if (cs && cs !== 'utf-8') return { text: iconv.decode(b, cs), charset: cs, warnings };
  warnings.push('character set not recognised; decoded as windows-1252');
  return { text: iconv.decode(b, 'windows-1252'), charset: 'windows-1252', warnings };
}

/** LF line ends, no NULs or stray control characters (they break PostgreSQL text and tsvector). */
function cleanText(s: string): string {
  return s
    .replace(/\r\n?/g, '\n')
    .replace(/[\u0000-\u0008\u000b\u000e-\u001f\u007f]/g, '')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** JSON to searchable lines `a.b[0].c: value`; keys and values both kept. */
function jsonToText(value: unknown, maxChars: number): { text: string; truncated: boolean } {
  const lines: string[] = [];
  let size = 0;
  let truncated = false;
  const push = (line: string) => {
    if (truncated) return;
    if (size + line.length > maxChars) {
      truncated = true;
      return;
    }
    size += line.length + 1;
    lines.push(line);
  };
  const walk = (v: unknown, p: string, depth: number) => {
    if (truncated) return;
    if (depth > 64) {
      // canonicalJson is iterative: JSON.stringify would overflow the stack on a file nested 100,000 levels deep.
      push(`${p}: ${canonicalJson(v).slice(0, 10_000)}`);
      return;
    }
    if (Array.isArray(v)) {
      if (v.length === 0) push(`${p}: []`);
      v.forEach((x, i) => walk(x, `${p}[${i}]`, depth + 1));
    } else if (v !== null && typeof v === 'object') {
      const entries = Object.entries(v as Record<string, unknown>);
      if (entries.length === 0) push(`${p}: {}`);
      for (const [k, x] of entries) walk(x, p ? `${p}.${k}` : k, depth + 1);
    } else {
      push(p ? `${p}: ${v === null ? 'null' : String(v)}` : String(v));
    }
  };
  walk(value, '', 0);
  return { text: lines.join('\n'), truncated };
}

// ---------------------------------------------------------------------------------------------------------------
// Images

/** Structural check that catches truncated files cheaply (OCR engines often fail on them with unreadable errors). */
function imageIntegrityError(b: Buffer, type: ImageType): string | undefined {
  if (type === 'png') {
    let off = 8;
    while (off + 8 <= b.length) {
      const len = b.readUInt32BE(off);
      const t = b.toString('latin1', off + 4, off + 8);
      off += 12 + len;
      if (off > b.length) return `truncated PNG: chunk ${t} runs past the end of the file`;
      if (t === 'IEND') return undefined;
    }
    return 'truncated PNG: no IEND chunk';
  }
  if (type === 'jpeg') {
    // The end-of-image marker may be followed by padding; look in the last 64 bytes.
    const tail = b.subarray(Math.max(0, b.length - 64));
    for (let i = tail.length - 2; i >= 0; i--) if (tail[i] === 0xff && tail[i + 1] === 0xd9) return undefined;
    return 'truncated JPEG: no end-of-image marker';
  }
  if (type === 'webp') {
    const riffLen = b.length >= 8 ? b.readUInt32LE(4) : 0;
    if (riffLen + 8 > b.length) return 'truncated WebP: file shorter than its RIFF header says';
  }
  return undefined;
}

/** Images that are OCR'd. HEIC is not: sharp's bundled libheif decodes AVIF only, and tesseract.js reads no HEIC. */
export const OCR_IMAGE_TYPES: ReadonlySet<ImageType> = new Set(['png', 'jpeg', 'webp', 'gif', 'tiff', 'bmp', 'pnm']);
/** What the OCR engine (tesseract.js: Leptonica in WASM) decodes itself; other OCR_IMAGE_TYPES are converted to PNG. */
const OCR_NATIVE_TYPES: ReadonlySet<ImageType> = new Set(['png', 'jpeg', 'webp']);

/** The bytes to hand the OCR function: the image itself, or a PNG of it (sharp, or src/ocr/raster.ts for BMP/PBM). */
async function imageForOcr(b: Buffer, imageType: ImageType, maxPixels: number): Promise<Buffer> {
  if (OCR_NATIVE_TYPES.has(imageType)) return b;
  return (await toPng(b, maxPixels)).png;
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

async function extractImage(b: Buffer, det: Detected, limits: ExtractLimits, opts: ExtractOptions): Promise<ExtractResult> {
  const imageType = det.imageType!;
  const base = { method: 'ocr' as const, text: '', warnings: [] as string[], detected: det };
  const integrity = imageIntegrityError(b, imageType);
  if (integrity) return { ...base, status: 'failed', error: integrity };
  let width = 0;
  let height = 0;
  let dimError: string | undefined;
  try {
    const dim = imageSize(b);
    width = dim.width ?? 0;
    height = dim.height ?? 0;
  } catch (e) {
    dimError = (e as Error).message;
  }
  const image = width && height ? { width, height } : undefined;
  if (!OCR_IMAGE_TYPES.has(imageType)) {
    const reason = `no decoder for ${imageType.toUpperCase()} images (OCR reads ${[...OCR_IMAGE_TYPES].join(', ')})`;
    return { ...base, image, status: 'failed', error: reason, needsOcr: { kind: 'image', imageType, reason } };
  }
  if (dimError !== undefined || !image) {
    return { ...base, status: 'failed', error: `unreadable ${imageType.toUpperCase()} image: ${dimError ?? 'no dimensions'}` };
  }
  if (width * height > limits.maxPixels) {
    return {
      ...base,
      image,
      status: 'failed',
      error: `image too large for OCR: ${width}x${height} exceeds ${limits.maxPixels} pixels`,
      needsOcr: { kind: 'image', imageType, reason: 'over the pixel limit' },
    };
  }
  if (!opts.ocr) {
    return { ...base, image, status: 'failed', error: 'OCR not available', needsOcr: { kind: 'image', imageType, reason: 'OCR not available' } };
  }
  let readable: Buffer;
  try {
    readable = await imageForOcr(b, imageType, limits.maxPixels);
  } catch (e) {
    return { ...base, image, status: 'failed', error: `unreadable ${imageType.toUpperCase()} image: ${(e as Error)?.message ?? String(e)}` };
  }
  try {
    const r = await withTimeout(opts.ocr(readable, { timeoutMs: limits.ocrTimeoutMs }), limits.ocrTimeoutMs, 'OCR');
    const text = cleanText(r.text ?? '');
    const warnings: string[] = [];
    if (!text) warnings.push('OCR found no text in the image');
    return { ...base, image, warnings, status: 'ready', text, ocr: { ...r, text } };
  } catch (e) {
    return { ...base, image, status: 'failed', error: `OCR failed: ${(e as Error)?.message ?? String(e)}` };
  }
}

// ---------------------------------------------------------------------------------------------------------------
// PDF

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

/** Stops the PDF and HTML worker threads (for orderly shutdown; they are unref'd, so they never block exit). */
export async function shutdownExtraction(): Promise<void> {
  await Promise.all([pdfPool.close(), shutdownHtmlWorker()]);
}

/**
 * The first page of a PDF as a PNG whose longer side is at most maxPx (for its thumbnail), rendered in
 * the PDF worker under the extraction's time and memory limits. Throws with the reason when it cannot.
 */
export async function renderPdfFirstPage(b: Buffer, maxPx: number, limits: ExtractLimits = DEFAULT_LIMITS): Promise<Buffer> {
  const data = new Uint8Array(b);
  const r = await pdfPool.run({
    message: { data, thumbnail: { maxPx }, standardFontDataUrl: fontDir() },
    transfer: [data.buffer as ArrayBuffer],
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

async function extractPdf(b: Buffer, det: Detected, limits: ExtractLimits, opts: ExtractOptions): Promise<ExtractResult> {
  const wantRender = (opts.renderPdfPages ?? true) && !!opts.ocr && limits.maxOcrPages > 0;
  // Copy: the worker takes ownership of the bytes it is sent, and the caller keeps its Buffer.
  const data = new Uint8Array(b);
  const r = await pdfPool.run({
    message: {
      data,
      maxPages: limits.maxPages,
      maxTextChars: limits.maxTextChars,
      render: wantRender ? { maxPages: limits.maxOcrPages, maxPixels: limits.maxPixels, scale: 3 } : null,
      standardFontDataUrl: fontDir(),
    },
    transfer: [data.buffer as ArrayBuffer],
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

// ---------------------------------------------------------------------------------------------------------------
// Entry point

function limitText(text: string, max: number, warnings: string[]): { text: string; truncated?: boolean } {
  if (text.length <= max) return { text };
  warnings.push(`text truncated at ${max} characters`);
  return { text: text.slice(0, max), truncated: true };
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
      case 'html': {
        const { text: raw, charset, warnings } = decodeText(b, { html: true });
        const lim = limitText(cleanText(await htmlToReadable(raw, limits, warnings)), limits.maxTextChars, warnings);
        return finishText('html', lim.text, charset, warnings, det, lim.truncated);
      }
      case 'json': {
        const { text: raw, charset, warnings } = decodeText(b);
        let parsed: unknown;
        try {
          parsed = JSON.parse(raw);
        } catch (e) {
          warnings.push(`invalid JSON (${(e as Error).message}); indexed as plain text`);
          const lim = limitText(cleanText(raw), limits.maxTextChars, warnings);
          return finishText('text', lim.text, charset, warnings, det, lim.truncated);
        }
        const j = jsonToText(parsed, limits.maxTextChars);
        if (j.truncated) warnings.push(`text truncated at ${limits.maxTextChars} characters`);
        return finishText('json', cleanText(j.text), charset, warnings, det, j.truncated || undefined);
      }
      case 'text': {
        const { text: raw, charset, warnings } = decodeText(b);
        const lim = limitText(cleanText(raw), limits.maxTextChars, warnings);
        return finishText('text', lim.text, charset, warnings, det, lim.truncated);
      }
    }
  } catch (e) {
    return { status: 'failed', method: 'none', text: '', error: `extraction failed: ${(e as Error)?.message ?? String(e)}`, warnings: [], detected: det };
  }
}

function finishText(
  method: ExtractMethod,
  text: string,
  charset: string,
  warnings: string[],
  det: Detected,
  truncated?: boolean,
): ExtractResult {
  if (!text) return { status: 'failed', method, text: '', error: 'no text found', warnings, detected: det, charset };
  return { status: 'ready', method, text, warnings, detected: det, charset, truncated };
}
