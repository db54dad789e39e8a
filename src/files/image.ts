/**
 * Images: a structural check for truncated files, the size limit, conversion of what the OCR engine cannot decode
 * itself, and the OCR call (injected: without an `ocr` function an image comes back failed with `needsOcr`).
 */
import { imageSize } from 'image-size';
import { toPng } from '../ocr/raster.ts';
import { cleanText } from './decode.ts';
import type { Detected, ImageType } from './detect.ts';
import type { ExtractOptions, ExtractResult } from './extract-types.ts';
import type { ExtractLimits } from './limits.ts';

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

/** A promise that fails with "<what> timed out after <ms> ms" when it has not settled by then. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what} timed out after ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

/** OCR of one image, within the pixel and time limits; never throws. */
export async function extractImage(b: Buffer, det: Detected, limits: ExtractLimits, opts: ExtractOptions): Promise<ExtractResult> {
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
