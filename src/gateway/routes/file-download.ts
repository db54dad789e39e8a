/**
 * GET /v1/files/{sha256}: the stored bytes of an attachment or uploaded file, as a download. The
 * response is never rendered by the browser as a page (attachment disposition, nosniff, and a
 * sandboxing CSP), so a stored HTML or SVG file cannot run script on the gateway's origin.
 *
 * GET /v1/files/{sha256}/image: the stored bytes of a raster image, for an <img> of the web UI. The type
 * is the server's, read from the bytes (PNG, JPEG, GIF, WebP, BMP: what a browser shows and never runs),
 * never the one the sender declared; anything else (SVG, HTML, a type that only claims to be an image)
 * is 404. Sent inline but with nosniff and the same sandboxing CSP, so even opened in a tab of its own
 * it is a picture in an opaque origin (issue 47 item 1).
 *
 * GET /v1/files/{sha256}/thumbnail: a small WebP of a stored image or PDF (its first page), made on the
 * first request and kept beside the object (src/files/thumbnails.ts); 404 for other files.
 */
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Queryable } from '../../db/types.ts';
import { SHOWN_IMAGE_TYPES as SHOWN_IMAGE_MIME_TYPES } from '../../schemas/files.ts';
import { detectType, type ImageType } from '../../files/detect.ts';
import { NotFoundError as ObjectNotFoundError, type ObjectStore } from '../../files/object-store.ts';
import { NotFoundError } from '../../util/errors.ts';
import { storedFile } from '../../files/stored-files.ts';
import { thumbnailOf } from '../../files/thumbnails.ts';
import { ROUTES } from '../../schemas/routes.ts';

/** RFC 6266 / 5987 filename parameters: an ASCII fallback and the UTF-8 name. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

/** Served inline only with one of these types, decided from the bytes: raster images a browser shows. */
const SHOWN_IMAGE_TYPES: Partial<Record<ImageType, string>> = SHOWN_IMAGE_MIME_TYPES;
/** Enough of the start of a file for its magic bytes (a BMP header is checked to 54 bytes). */
const HEAD_BYTES = 4096;

/** The first `n` bytes of `stream` (fewer at its end) and a stream of the whole, those bytes first. */
async function peek(stream: Readable, n: number): Promise<{ head: Buffer; whole: Readable }> {
  const chunks: Buffer[] = [];
  let have = 0;
  const it = stream[Symbol.asyncIterator]();
  let done = false;
  while (have < n) {
    const r = await it.next();
    if (r.done) {
      done = true;
      break;
    }
    const b = Buffer.isBuffer(r.value) ? r.value : Buffer.from(r.value as Uint8Array);
    chunks.push(b);
    have += b.length;
  }
  const start = Buffer.concat(chunks, have);
  const whole = Readable.from(
    (async function* () {
      yield start;
      if (done) return;
      for (let r = await it.next(); !r.done; r = await it.next()) yield r.value as Buffer;
    })(),
    { objectMode: false },
  );
  whole.once('close', () => stream.destroy());
  return { head: start.subarray(0, n), whole };
}

export async function fileDownloadRoutes(app: FastifyInstance, opts: { store: ObjectStore; db: Queryable }): Promise<void> {
  const { store, db } = opts;
  app.route<{ Params: { sha256: string } }>({
    ...ROUTES.downloadFile,
    handler: async (req, reply) => {
      const sha = req.params.sha256.toLowerCase();
      const row = await storedFile(db, sha);
      if (!row) throw new NotFoundError('File not found');
      let body;
      try {
        body = await store.get(row.object_key);
      } catch (err) {
        if (err instanceof ObjectNotFoundError) throw new NotFoundError('File not found in the object store');
        throw err;
      }
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(row.size_bytes))
        .header('content-disposition', contentDisposition(row.filename ?? sha))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "sandbox; default-src 'none'")
        .header('cross-origin-resource-policy', 'same-origin')
        .header('cache-control', 'private, max-age=3600')
        .send(body);
    },
  });

  app.route<{ Params: { sha256: string } }>({
    ...ROUTES.fileImage,
    handler: async (req, reply) => {
      const sha = req.params.sha256.toLowerCase();
      const row = await storedFile(db, sha);
      if (!row) throw new NotFoundError('File not found');
      let body: Readable;
      try {
        body = await store.get(row.object_key);
      } catch (err) {
        if (err instanceof ObjectNotFoundError) throw new NotFoundError('File not found in the object store');
        throw err;
      }
      const { head, whole } = await peek(body, HEAD_BYTES);
      const det = detectType(head);
      const type = det.by === 'magic' && det.kind === 'image' && det.imageType ? SHOWN_IMAGE_TYPES[det.imageType] : undefined;
      if (!type) {
        whole.destroy();
        throw new NotFoundError('This file is not an image that can be shown in the page: download it instead');
      }
      return reply
        .header('content-type', type)
        .header('content-length', String(row.size_bytes))
        .header('content-disposition', contentDisposition(row.filename ?? sha).replace(/^attachment/, 'inline'))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "sandbox; default-src 'none'")
        .header('cross-origin-resource-policy', 'same-origin')
        .header('cache-control', 'private, max-age=3600')
        .send(whole);
    },
  });

  app.route<{ Params: { sha256: string } }>({
    ...ROUTES.fileThumbnail,
    handler: async (req, reply) => {
      const thumb = await thumbnailOf(db, store, req.params.sha256.toLowerCase());
      if (!thumb) throw new NotFoundError('No thumbnail for this file');
      return reply
        .header('content-type', 'image/webp')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "sandbox; default-src 'none'")
        // Content-addressed: the same address always shows the same bytes.
        .header('cache-control', 'private, max-age=86400')
        .send(thumb);
    },
  });
}
