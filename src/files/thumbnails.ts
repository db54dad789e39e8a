/**
 * Thumbnails of stored images and PDFs (the first page): made once, on the first request, and kept beside
 * the object they show (`sha256/ab/cd/<sha256>.thumb.webp`, ObjectStore.putBeside), so the next request
 * reads them. A thumbnail is a WebP at most THUMBNAIL_MAX_PX on its longer side and at most
 * THUMBNAIL_MAX_BYTES; it goes with its object (removeObjects: forget, garbage collection), and garbage
 * collection removes any left without one.
 *
 * Images are read by sharp (BMP and Netpbm by src/ocr/raster.ts); a PDF's first page is rendered by
 * pdf.js on @napi-rs/canvas in the PDF worker (src/files/pdf-worker.mjs), under the extraction's time and
 * memory limits. Other files have no thumbnail (null).
 */
import type { Sharp } from 'sharp';
import { loadSharp } from '../util/sharp.ts';
import type { Queryable } from '../db/types.ts';
import { decodeBmp, decodeNetpbm, sniffRaster } from '../ocr/raster.ts';
import { detectType } from './detect.ts';
import { renderPdfFirstPage } from './pdf.ts';
import { NotFoundError, readObject, type ObjectStore } from './object-store.ts';
import { storedFile, type StoredFile } from './stored-files.ts';

import { THUMBNAIL_MAX_BYTES, THUMBNAIL_MAX_PX } from '../schemas/files.ts';

// The bounds are the API's (GET /v1/files/{sha256}/thumbnail states them): declared in src/schemas.
export { THUMBNAIL_MAX_BYTES, THUMBNAIL_MAX_PX };
/** Files larger than this get no thumbnail (reading them whole to make one is not worth it). */
export const THUMBNAIL_MAX_SOURCE_BYTES = 100 * 1024 * 1024;
/** Images over this many pixels get none (sharp refuses to decode them: decompression bombs). */
const MAX_PIXELS = 40_000_000;
const NAME = 'thumb.webp';

/** Objects known to have no thumbnail (not an image or PDF, or unreadable), so they are not read again. */
const none = new Set<string>();
const NONE_LIMIT = 10_000;
/** Thumbnails being made: a second request for the same object waits for the first. */
const making = new Map<string, Promise<Buffer | null>>();

/** Thumbnails made at once: each reads its file whole (up to THUMBNAIL_MAX_SOURCE_BYTES). */
const MAKING_AT_ONCE = 2;
let running = 0;
const waiting: (() => void)[] = [];

async function limited<T>(fn: () => Promise<T>): Promise<T> {
  if (running >= MAKING_AT_ONCE) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await fn();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** The image types sharp or raster.ts decodes (HEIC is not in sharp's prebuilt binaries). */
const IMAGE_TYPES = new Set(['png', 'jpeg', 'webp', 'gif', 'tiff', 'bmp', 'pnm']);

/** WebP of `img` within the size bounds: smaller quality, then fewer pixels, until it fits. */
async function encode(input: () => Sharp): Promise<Buffer> {
  for (const px of [THUMBNAIL_MAX_PX, 240, 160]) {
    for (const quality of [80, 60, 40]) {
      const out = await input()
        .resize(px, px, { fit: 'inside', withoutEnlargement: true })
        .webp({ quality, effort: 4 })
        .toBuffer();
      if (out.length <= THUMBNAIL_MAX_BYTES) return out;
    }
  }
  throw new Error('no thumbnail within the size limit');
}

/** The thumbnail of these bytes, or null when they are neither an image nor a PDF. */
export async function makeThumbnail(bytes: Buffer, filename?: string | null, mimeType?: string | null): Promise<Buffer | null> {
  const det = detectType(bytes, filename ?? undefined, mimeType ?? undefined);
  const sharp = await loadSharp();
  if (det.kind === 'pdf') {
    // Rendered at twice the size and scaled down by sharp: smoother text than a render at the size.
    const png = await renderPdfFirstPage(bytes, THUMBNAIL_MAX_PX * 2);
    return encode(() => sharp(png));
  }
  if (det.kind !== 'image' || !det.imageType || !IMAGE_TYPES.has(det.imageType)) return null;
  const raster = sniffRaster(bytes);
  if (raster) {
    const raw = raster === 'bmp' ? decodeBmp(bytes, MAX_PIXELS) : decodeNetpbm(bytes, MAX_PIXELS);
    return encode(() => sharp(raw.data, { raw: { width: raw.width, height: raw.height, channels: raw.channels } }));
  }
  // First frame of an animation; EXIF orientation applied.
  return encode(() => sharp(bytes, { limitInputPixels: MAX_PIXELS, animated: false }).rotate());
}

/**
 * The thumbnail of the stored file with this SHA-256: the one kept beside its object, else made now and
 * kept. Null when there is no such file or it has no thumbnail.
 */
export async function thumbnailOf(db: Queryable, store: ObjectStore, sha256: string): Promise<Buffer | null> {
  if (none.has(sha256)) return null;
  const file = await storedFile(db, sha256);
  if (!file) return null;
  const kept = await store.getBeside(file.object_key, NAME);
  if (kept) return kept;
  let job = making.get(sha256);
  if (!job) {
    job = limited(() => make(db, store, sha256, file)).finally(() => making.delete(sha256));
    making.set(sha256, job);
  }
  return job;
}

async function make(
  db: Queryable,
  store: ObjectStore,
  sha256: string,
  file: StoredFile,
): Promise<Buffer | null> {
  let thumb: Buffer | null = null;
  if (Number(file.size_bytes) <= THUMBNAIL_MAX_SOURCE_BYTES) {
    let bytes: Buffer;
    try {
      bytes = await readObject(store, file.object_key, THUMBNAIL_MAX_SOURCE_BYTES);
    } catch (err) {
      if (err instanceof NotFoundError) return null;
      throw err;
    }
    thumb = await makeThumbnail(bytes, file.filename, file.mime_type).catch(() => null);
  }
  if (!thumb) {
    if (none.size >= NONE_LIMIT) none.clear();
    none.add(sha256);
    return null;
  }
  await store.putBeside(file.object_key, NAME, thumb);
  // Erased while it was made (forget removes the object and what is beside it): nothing of it stays.
  const still = await db.query('SELECT 1 FROM files WHERE file_sha256 = $1', [sha256]);
  if (still.rows.length === 0) {
    await store.deleteBeside(file.object_key, NAME);
    return null;
  }
  return thumb;
}
