/**
 * POST /v1/ingest/file (gateway spec 4.1 rule 5; deprecated in the spec, still served): multipart `meta` (JSON) and
 * `upload` (bytes). The upload is streamed into the object store while it is hashed (never held whole in memory),
 * the text is extracted (OCR for images and scanned PDFs), and the document is cataloged with
 * `metadata.attachments[0]` describing the file. See docs/files.md.
 */
import multipart from '@fastify/multipart';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { Readable } from 'node:stream';
import {
  FileIngestService,
  OcrUnavailableError,
  type FileItemResult,
  type StoredUpload,
} from '../../files/ingest-service.ts';
import { CatalogError } from '../../catalog/types.ts';
import { MAX_META_BYTES, parseFileMeta, type ValidationIssue } from '../../files/meta.ts';
import {
  EmptyFileError,
  ObjectStoreError,
  TooLargeError,
  type PutResult,
} from '../../files/object-store.ts';
import { FILE_BATCH_MAX_FILES, type FileBatchItemResultT, type KnownFilesRequestT } from '../../schemas/files.ts';
import { errorEnvelope, multipartRefusal } from '../errors.ts';
import { sendBatchResults } from '../batch-reply.ts';
import { normaliseOptionalMimeType } from '../../util/mime-type.ts';
import { toSubmissionResponse } from './ingest.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { InvalidRequestError, MemexError } from '../../util/errors.ts';

/** 422 in the spec's shape, one detail item per issue (through the shared error mapping). */
function unprocessable(issues: ValidationIssue[]) {
  return new InvalidRequestError(issues);
}

/** Reads a small stream (a `meta` sent as a file part) up to `max` bytes; undefined when longer. */
async function readSmall(stream: AsyncIterable<Buffer>, max: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let n = 0;
  let over = false;
  for await (const c of stream) {
    n += c.length;
    if (n > max) over = true; // keep draining so the parser can go on to the next part
    else chunks.push(c);
  }
  return over ? undefined : Buffer.concat(chunks).toString('utf8');
}

/**
 * busboy reports a body that ends inside a file part ("Part terminated early") by emitting 'error' on the part's
 * stream, possibly before the handler received the part and attached any listener; the stream then never ends and a
 * consumer would wait forever. So once the whole request has been read (or the client went away), a file part that
 * has not received its end is destroyed with a readable error, which the store turns into 400 FILE_READ_FAILED.
 */
function guardTruncatedParts(raw: NodeJS.ReadableStream & { readableEnded?: boolean }) {
  let current: (Readable & { _readableState?: { ended?: boolean } }) | undefined;
  const check = () => {
    const t = setTimeout(() => {
      const f = current;
      if (f && !f.destroyed && f._readableState?.ended !== true) {
        f.destroy(new Error('request body ended inside the upload part (truncated multipart body)'));
      }
    }, 50);
    t.unref();
  };
  raw.once('end', check);
  raw.once('close', check);
  return {
    track(file: Readable) {
      current = file;
      if (raw.readableEnded) check();
    },
  };
}

/** One file's answer in a batch: what the single route would have answered, in the batch's shape. */
function batchItemResult(index: number, filename: string | null, o: FileItemResult, log: FastifyBaseLogger): FileBatchItemResultT {
  if (o.ok) {
    const status = o.outcome.result.duplicate || o.outcome.result.skipped ? 200 : 202;
    return { index, status_code: status, filename, submission: { ...toSubmissionResponse(o.outcome.result), ...o.outcome.file }, error: null };
  }
  const err = o.error;
  const known =
    err instanceof OcrUnavailableError || err instanceof ObjectStoreError ? { status: err.statusCode, code: err.code, message: err.message }
    : err instanceof CatalogError ? { status: err.status, code: err.code, message: err.message }
    : null;
  if (!known) log.error({ err: { message: (err as Error).message, stack: (err as Error).stack } }, 'file batch item failed');
  const { status, code, message } = known ?? { status: 500, code: 'INGEST.UNEXPECTED_ERROR', message: 'unexpected error while ingesting this file' };
  return { index, status_code: status, filename, submission: null, error: errorEnvelope(code, message, status, 'gw_ingest_file_batch') };
}

/** The correlation ids of these routes' error envelopes (src/gateway/errors.ts) start `gw_ingest_file`. */
const UPLOAD_ERRORS = { correlationPrefix: 'gw_ingest_file' };

export async function fileRoutes(app: FastifyInstance, opts: { service: FileIngestService }): Promise<void> {
  const { service } = opts;
  // Scoped to this plugin: other routes keep refusing multipart bodies. The file limit is one byte above
  // FILE_MAX_BYTES so the store's own counter (TooLargeError -> 413, temp file removed) decides; meta is bounded too.
  await app.register(multipart, {
    limits: {
      fileSize: service.maxUploadBytes + 1,
      files: 2,
      fields: 10,
      parts: 12,
      fieldSize: MAX_META_BYTES + 1,
      headerPairs: 50,
    },
    throwFileSizeLimit: false,
  });

  app.route({
    ...ROUTES.ingestFile,
    config: UPLOAD_ERRORS,
    handler: async (req, reply) => {
      const receivedAt = new Date();
      if (!req.isMultipart()) {
        throw unprocessable([
          { loc: ['body', 'meta'], msg: 'Field required (send multipart/form-data)', type: 'missing' },
          { loc: ['body', 'upload'], msg: 'Field required (send multipart/form-data)', type: 'missing' },
        ]);
      }
      const guard = guardTruncatedParts(req.raw);
      let metaRaw: string | undefined;
      let metaTooLong = false;
      let stored: PutResult | undefined;
      let upload: { filename?: string; mimeType?: string } = {};
      const metaIssues = (): ValidationIssue[] | null => {
        if (metaTooLong) return [{ loc: ['body', 'meta'], msg: `meta is larger than ${MAX_META_BYTES} bytes`, type: 'too_long' }];
        if (metaRaw === undefined) return null;
        const m = parseFileMeta(metaRaw);
        return m.ok ? [] : m.errors;
      };
      try {
        for await (const part of req.parts()) {
          if (part.fieldname === 'meta') {
            if (part.type === 'file') {
              const s = await readSmall(part.file, MAX_META_BYTES);
              if (s === undefined) metaTooLong = true;
              else metaRaw = s;
            } else {
              if (part.valueTruncated) metaTooLong = true;
              else metaRaw = typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
            }
            continue;
          }
          if (part.type === 'file' && part.fieldname === 'upload' && !stored) {
            // Bad meta sent first: refuse before reading (and storing) the upload.
            const early = metaIssues();
            if (early && early.length) throw unprocessable(early);
            upload = { filename: part.filename || undefined, mimeType: normaliseOptionalMimeType(part.mimetype) ?? undefined };
            guard.track(part.file);
            stored = await service.store(part.file, upload);
            continue;
          }
          if (part.type === 'file') part.file.resume(); // unknown file parts are skipped (bounded by the limits)
        }
      } catch (err) {
        // The meta refused before its upload was read, a store failure, a multipart limit, a truncated body.
        throw multipartRefusal(err);
      }

      const issues: ValidationIssue[] = [];
      const m = metaTooLong ? undefined : parseFileMeta(metaRaw); // undefined meta -> 'missing'
      if (!m) issues.push(...(metaIssues() ?? []));
      else if (!m.ok) issues.push(...m.errors);
      if (!stored) issues.push({ loc: ['body', 'upload'], msg: 'Field required', type: 'missing' });
      if (issues.length || !m?.ok || !stored) throw unprocessable(issues);

      // OCR unavailable (503, Retry-After), store and catalog errors: the gateway's error handler answers.
      const out = await service.ingestStored(m.meta, stored, upload, receivedAt);
      reply.header('x-file-sha256', out.file.file_sha256);
      reply.header('x-object-key', out.file.object_key);
      return reply.code(out.result.duplicate || out.result.skipped ? 200 : 202).send({ ...toSubmissionResponse(out.result), ...out.file });
    },
  });

  app.route({
    ...ROUTES.ingestFileBatch,
    config: UPLOAD_ERRORS,
    handler: async (req, reply) => {
      const receivedAt = new Date();
      if (!req.isMultipart()) {
        throw unprocessable([{ loc: ['body'], msg: 'Field required (send multipart/form-data: meta, upload, meta, upload, …)', type: 'missing' }]);
      }
      const guard = guardTruncatedParts(req.raw);
      const results: FileBatchItemResultT[] = [];
      const accepted: { index: number; item: StoredUpload }[] = [];
      /** The meta part waiting for its upload (undefined: none; null: it was longer than allowed). */
      let pendingMeta: string | null | undefined;
      const refuse = (index: number, filename: string | null, detail: ValidationIssue[]) =>
        results.push({ index, status_code: 422, filename, submission: null, error: errorEnvelope('INGEST.VALIDATION_ERROR', 'invalid upload', 422, 'gw_ingest_file_batch'), detail });
      const missingUpload = () => refuse(results.length + accepted.length, null, [{ loc: ['body', 'upload'], msg: 'Field required (each meta is followed by its upload)', type: 'missing' }]);
      try {
        // A meta may come as a field or as a file part (FormData sends a Blob as a file), so busboy's limits allow
        // two file parts per upload; the uploads themselves are counted here.
        const limits = { files: 2 * FILE_BATCH_MAX_FILES, fields: FILE_BATCH_MAX_FILES + 8, parts: 2 * FILE_BATCH_MAX_FILES + 8 };
        for await (const part of req.parts({ limits })) {
          if (part.fieldname === 'meta') {
            if (pendingMeta !== undefined) missingUpload();
            if (part.type === 'file') pendingMeta = (await readSmall(part.file, MAX_META_BYTES)) ?? null;
            else pendingMeta = part.valueTruncated ? null : typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
            continue;
          }
          if (part.type !== 'file') continue;
          if (part.fieldname !== 'upload') {
            part.file.resume(); // unknown file parts are skipped (bounded by the limits)
            continue;
          }
          const index = results.length + accepted.length;
          if (index === FILE_BATCH_MAX_FILES) {
            part.file.resume();
            throw new MemexError(`too many files: at most ${FILE_BATCH_MAX_FILES} files per request`, 'INGEST.MULTIPART_LIMIT');
          }
          const filename = part.filename || null;
          const metaRaw = pendingMeta;
          pendingMeta = undefined;
          const m = metaRaw === null || metaRaw === undefined ? null : parseFileMeta(metaRaw);
          if (!m?.ok) {
            part.file.resume(); // not stored: its meta is missing or invalid
            refuse(index, filename, m ? m.errors : metaRaw === null
              ? [{ loc: ['body', 'meta'], msg: `meta is larger than ${MAX_META_BYTES} bytes`, type: 'too_long' }]
              : [{ loc: ['body', 'meta'], msg: 'Field required (each upload follows its meta)', type: 'missing' }]);
            continue;
          }
          const upload = { filename: part.filename || undefined, mimeType: normaliseOptionalMimeType(part.mimetype) ?? undefined };
          guard.track(part.file);
          try {
            accepted.push({ index, item: { meta: m.meta, stored: await service.store(part.file, upload), upload } });
          } catch (err) {
            // Too large or empty (issue 48: one empty attachment failed its whole batch): this file only, nothing of it
            // stored (the store drained and deleted it). Any other store failure ends the request.
            if (!(err instanceof TooLargeError || err instanceof EmptyFileError)) throw err;
            results.push({ index, status_code: err.statusCode, filename, submission: null, error: errorEnvelope(err.code, err.message, err.statusCode, 'gw_ingest_file_batch') });
          }
        }
      } catch (err) {
        throw multipartRefusal(err, { limitNote: ` (at most ${FILE_BATCH_MAX_FILES} files per request)` });
      }
      if (pendingMeta !== undefined) missingUpload();
      if (results.length + accepted.length === 0) {
        throw unprocessable([{ loc: ['body', 'upload'], msg: 'Field required (no meta and upload pairs)', type: 'missing' }]);
      }

      const outcomes = await service.ingestStoredMany(accepted.map((a) => a.item), receivedAt);
      outcomes.forEach((o, i) => results.push(batchItemResult(accepted[i].index, accepted[i].item.upload.filename ?? null, o, req.log)));
      results.sort((a, b) => a.index - b.index);
      return sendBatchResults(reply, results);
    },
  });

  app.route({
    ...ROUTES.knownFiles,
    handler: async (req) => {
      const { files } = req.body as KnownFilesRequestT;
      const items = files.map((f) => {
        const parsed = parseFileMeta({ source: f.source, path: f.path, ...(f.message_id ? { message_id: f.message_id } : {}) });
        return parsed.ok ? { meta: parsed.meta, sha256: f.sha256 } : null;
      });
      const valid = items.flatMap((it, i) => (it ? [{ ...it, i }] : []));
      const { instanceId, known } = await service.knownFiles(valid);
      return {
        instance_id: instanceId,
        known: known.map((k) => ({ path: files[valid[k.index].i].path, sha256: files[valid[k.index].i].sha256.toLowerCase(), doc_id: k.doc_id })),
      };
    },
  });
}
