/**
 * GET /v1/files/{sha256}: the stored bytes of an attachment or uploaded file, as a download. The
 * response is never rendered by the browser as a page (attachment disposition, nosniff, and a
 * sandboxing CSP), so a stored HTML or SVG file cannot run script on the gateway's origin.
 *
 * GET /v1/files/{sha256}/thumbnail: a small WebP of a stored image or PDF (its first page), made on the
 * first request and kept beside the object (src/files/thumbnails.ts); 404 for other files.
 */
import type { FastifyInstance } from 'fastify';
import type { Queryable } from '../../db/types.ts';
import { DetailMessage as NotFound, MediaResponse } from '../../schemas/common.ts';
import { Sha256Params } from '../../schemas/files.ts';
import { NotFoundError, type ObjectStore } from '../../files/object-store.ts';
import { storedFile } from '../../files/stored-files.ts';
import { THUMBNAIL_MAX_BYTES, THUMBNAIL_MAX_PX, thumbnailOf } from '../../files/thumbnails.ts';

/** RFC 6266 / 5987 filename parameters: an ASCII fallback and the UTF-8 name. */
export function contentDisposition(filename: string): string {
  const ascii = filename.replace(/[^\x20-\x7e]|["\\]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(filename)}`;
}

export async function fileDownloadRoutes(app: FastifyInstance, opts: { store: ObjectStore; db: Queryable }): Promise<void> {
  const { store, db } = opts;
  app.get<{ Params: { sha256: string } }>(
    '/v1/files/:sha256',
    {
      schema: {
        tags: ['files'],
        summary: 'Download a stored file by its SHA-256',
        params: Sha256Params,
        response: { 200: MediaResponse('application/octet-stream', 'The file as stored'), 404: NotFound },
      },
    },
    async (req, reply) => {
      const sha = req.params.sha256.toLowerCase();
      const row = await storedFile(db, sha);
      if (!row) return reply.code(404).send({ detail: 'File not found' });
      let body;
      try {
        body = await store.get(row.object_key);
      } catch (err) {
        if (err instanceof NotFoundError) return reply.code(404).send({ detail: 'File not found in the object store' });
        throw err;
      }
      return reply
        .header('content-type', 'application/octet-stream')
        .header('content-length', String(row.size_bytes))
        .header('content-disposition', contentDisposition(row.filename ?? sha))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "sandbox; default-src 'none'")
        .header('cache-control', 'private, max-age=3600')
        .send(body);
    },
  );

  app.get<{ Params: { sha256: string } }>(
    '/v1/files/:sha256/thumbnail',
    {
      schema: {
        tags: ['files'],
        summary: 'Thumbnail of a stored image or PDF',
        description: `A WebP at most ${THUMBNAIL_MAX_PX} px on its longer side and ${THUMBNAIL_MAX_BYTES / 1024} KB: the image, or a PDF's first page. Made on the first request and kept beside the file; 404 for files of other types.`,
        params: Sha256Params,
        response: { 404: NotFound },
      },
    },
    async (req, reply) => {
      const thumb = await thumbnailOf(db, store, req.params.sha256.toLowerCase());
      if (!thumb) return reply.code(404).send({ detail: 'No thumbnail for this file' });
      return reply
        .header('content-type', 'image/webp')
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "sandbox; default-src 'none'")
        // Content-addressed: the same address always shows the same bytes.
        .header('cache-control', 'private, max-age=86400')
        .send(thumb);
    },
  );
}
