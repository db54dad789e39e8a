/**
 * What a file is, decided by its content first (magic bytes), then by extension and declared MIME type, so a PDF
 * named `.txt` is still read as a PDF and a text file claiming `image/png` is not sent to OCR.
 */
import path from 'node:path';
import iconv from 'iconv-lite';
import { sniffRaster } from '../ocr/raster.ts';
import { hasLoneSurrogate } from '../util/json-input.ts';
import { bomlessUtf32 } from './decode.ts';

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
