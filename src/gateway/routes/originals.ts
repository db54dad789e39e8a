/**
 * The originals of collected messages (src/catalog/originals.ts, docs/email-collectors.md "The original"):
 *
 * - POST /v1/ingest/originals: multipart, `meta` (JSON {doc_id, kind?}) then `original` (the bytes), repeated. The
 *   collectors send it once a batch of documents is answered, naming each message's version by the doc_id of its
 *   answer. A memex addition beside the spec's ingest API (a gateway without it answers 404 and the collectors stop
 *   sending originals to it). Each original is answered on its own, like the file batch.
 * - POST /v1/admin/email/reparse: every stored message rebuilt from its original (`memex reindex --reparse`,
 *   src/maintenance/reparse.ts); answers the counts when done.
 * - GET /v1/documents/{doc_id}/original: the bytes as message/rfc822, as a download that the browser never renders
 *   (the headers of GET /v1/files/{sha256}).
 */
import multipart from '@fastify/multipart';
import { Readable } from 'node:stream';
import type { FastifyInstance } from 'fastify';
import type { Database } from '../../db/types.ts';
import type { Catalog } from '../../catalog/catalog.ts';
import {
  linkOriginals,
  ORIGINAL_MAX_BYTES,
  ORIGINAL_MIME_TYPE,
  originalOf,
  type OriginalKind,
} from '../../catalog/originals.ts';
import {
  NotFoundError as ObjectNotFoundError,
  ObjectStoreError,
  removeObjects,
  type ObjectStore,
  type PutResult,
} from '../../files/object-store.ts';
import {
  ORIGINAL_META_MAX_BYTES,
  ORIGINALS_MAX_PER_REQUEST,
  type OriginalItemResultT,
} from '../../schemas/originals.ts';
import { errorEnvelope, multipartRefusal } from '../errors.ts';
import { sendBatchResults } from '../batch-reply.ts';
import { contentDisposition } from './file-download.ts';
import { isUuid } from '../../util/ids.ts';
import { ROUTES } from '../../schemas/routes.ts';
import { IngestRequest } from '../../schemas/ingest.ts';
import { compileBodyValidator } from '../validation.ts';
import { InvalidRequestError, MemexError, NotFoundError } from '../../util/errors.ts';

/** The meta part: {doc_id, kind?} and nothing else; a message saying what is wrong otherwise. */
function parseMeta(raw: string | null | undefined): { docId: string; kind: OriginalKind } | string {
  if (raw === null) return `meta is larger than ${ORIGINAL_META_MAX_BYTES} bytes`;
  if (raw === undefined) return 'each original follows its meta ({"doc_id": "…"})';
  let m: unknown;
  try {
    m = JSON.parse(raw);
  } catch {
    return 'meta is not JSON';
  }
  if (!m || typeof m !== 'object' || Array.isArray(m)) return 'meta must be a JSON object';
  const o = m as Record<string, unknown>;
  const extra = Object.keys(o).filter((k) => k !== 'doc_id' && k !== 'kind');
  if (extra.length) return `unknown meta field ${extra[0].slice(0, 40)}`;
  if (!isUuid(o.doc_id)) return 'meta.doc_id must be a UUID';
  if (o.kind !== undefined && o.kind !== 'rfc822') return 'meta.kind must be "rfc822"';
  return { docId: o.doc_id, kind: 'rfc822' };
}

/** What a message rebuilt from its original must be to be stored: an ingest body (memex reindex --reparse). */
const validateIngest = compileBodyValidator(IngestRequest);

/** Small originals are held in memory while their writes run a few at once: at most PARALLEL_WRITES × this. */
const SMALL_ORIGINAL_BYTES = 1024 * 1024;
const PARALLEL_WRITES = 8;
/** Small originals held for one putSmall: a request of 100 messages is usually one. */
const SMALL_BATCH_BYTES = 4 * 1024 * 1024;

/**
 * The stream's first bytes up to `max` (complete: the stream ended within them). The iterator is driven by hand so
 * that stopping early does not destroy the stream: `rest` goes on from there.
 */
async function readUpTo(stream: Readable, max: number): Promise<{ bytes: Buffer; complete: boolean; rest: AsyncIterator<Buffer> }> {
  const it = stream[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  const chunks: Buffer[] = [];
  let n = 0;
  for (;;) {
    const r = await it.next();
    if (r.done) return { bytes: Buffer.concat(chunks), complete: true, rest: it };
    chunks.push(r.value);
    n += r.value.length;
    if (n > max) return { bytes: Buffer.concat(chunks), complete: false, rest: it };
  }
}

/** The bytes already read, then the rest of the stream. */
async function* concatStreams(head: Buffer, rest: AsyncIterator<Buffer>): AsyncGenerator<Buffer> {
  yield head;
  for (let r = await rest.next(); !r.done; r = await rest.next()) yield r.value;
}

async function readSmall(stream: AsyncIterable<Buffer>, max: number): Promise<string | null> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of stream) {
    n += c.length;
    if (n <= max) chunks.push(c); // keep draining past the limit so the parser goes on
  }
  return n > max ? null : Buffer.concat(chunks).toString('utf8');
}

export async function originalRoutes(app: FastifyInstance, opts: { store: ObjectStore; db: Database; catalog: Catalog }): Promise<void> {
  const { store, db, catalog } = opts;
  await app.register(multipart, {
    limits: {
      fileSize: ORIGINAL_MAX_BYTES + 1,
      files: 2 * ORIGINALS_MAX_PER_REQUEST,
      fields: ORIGINALS_MAX_PER_REQUEST + 8,
      parts: 2 * ORIGINALS_MAX_PER_REQUEST + 8,
      fieldSize: ORIGINAL_META_MAX_BYTES + 1,
      headerPairs: 50,
    },
    throwFileSizeLimit: false,
  });

  app.route({
    ...ROUTES.ingestOriginals,
    // The correlation ids of its error envelopes (src/gateway/errors.ts).
    config: { correlationPrefix: 'gw_ingest_originals' },
    handler: async (req, reply) => {
      if (!req.isMultipart()) {
        throw new InvalidRequestError({ loc: ['body'], msg: 'Field required (send multipart/form-data: meta, original, meta, original, …)', type: 'missing' });
      }
      const results: OriginalItemResultT[] = [];
      const accepted: { index: number; docId: string; kind: OriginalKind; stored: PutResult }[] = [];
      let pendingMeta: string | null | undefined;
      let count = 0; // originals met so far (their index)
      // Writes of small originals run a few at once: each put ends with fsyncs, and parallel ones share the
      // filesystem's journal commits, where one after the other a batch of 100 waits for 200 of them in a row.
      const writing = new Set<Promise<void>>();
      let fatal: unknown; // a store failure that ends the request, met by a write running beside the parsing
      const write = async (index: number, docId: string, kind: OriginalKind, body: Readable) => {
        try {
          accepted.push({ index, docId, kind, stored: await store.put(body, { maxBytes: ORIGINAL_MAX_BYTES, mimeType: ORIGINAL_MIME_TYPE }) });
        } catch (err) {
          // Too large or empty: this original only (the store drained and deleted it). Other store failures end the request.
          if (err instanceof ObjectStoreError && (err.statusCode === 413 || err.statusCode === 400)) refuse(index, err.statusCode, err.code, err.message, docId);
          else fatal ??= err;
        }
      };
      // Small originals are stored together where the store can (one worker round trip for the lot, files
      // fsynced and every directory once), a few MB at a time.
      let small: { index: number; docId: string; kind: OriginalKind; bytes: Buffer }[] = [];
      let smallBytes = 0;
      const storeSmall = async () => {
        const batch = small;
        small = [];
        smallBytes = 0;
        const stored = batch.length ? await store.putSmall!(batch.map((b) => b.bytes)) : [];
        batch.forEach((b, i) => accepted.push({ index: b.index, docId: b.docId, kind: b.kind, stored: stored[i] }));
      };
      const refuse = (index: number, status: number, code: string, message: string, docId: string | null = null) =>
        results.push({ index, status_code: status, doc_id: docId, sha256: null, size_bytes: null, error: errorEnvelope(code, message, status, 'gw_ingest_originals') });
      try {
        for await (const part of req.parts()) {
          if (part.fieldname === 'meta') {
            if (pendingMeta !== undefined) refuse(count++, 422, 'INGEST.VALIDATION_ERROR', 'a meta without its original');
            if (part.type === 'file') pendingMeta = await readSmall(part.file, ORIGINAL_META_MAX_BYTES);
            else pendingMeta = part.valueTruncated ? null : typeof part.value === 'string' ? part.value : JSON.stringify(part.value);
            continue;
          }
          if (part.type !== 'file') continue;
          if (part.fieldname !== 'original') {
            part.file.resume();
            continue;
          }
          const index = count++;
          if (index === ORIGINALS_MAX_PER_REQUEST) {
            part.file.resume();
            throw new MemexError(`too many originals: at most ${ORIGINALS_MAX_PER_REQUEST} per request`, 'INGEST.MULTIPART_LIMIT');
          }
          const meta = parseMeta(pendingMeta);
          pendingMeta = undefined;
          if (typeof meta === 'string') {
            part.file.resume(); // not stored: its meta is missing or invalid
            refuse(index, 422, 'INGEST.VALIDATION_ERROR', meta);
            continue;
          }
          // A message (most are a few KB) is read whole and written beside the next ones; a large one streams.
          const head = await readUpTo(part.file, SMALL_ORIGINAL_BYTES);
          if (head.complete && store.putSmall && head.bytes.length > 0) {
            small.push({ index, docId: meta.docId, kind: meta.kind, bytes: head.bytes });
            smallBytes += head.bytes.length;
            if (smallBytes >= SMALL_BATCH_BYTES) await storeSmall();
          } else if (head.complete) {
            const w = write(index, meta.docId, meta.kind, Readable.from([head.bytes])).finally(() => writing.delete(w));
            writing.add(w);
            if (writing.size >= PARALLEL_WRITES) await Promise.race(writing);
          } else {
            await write(index, meta.docId, meta.kind, Readable.from(concatStreams(head.bytes, head.rest)));
          }
          if (fatal) throw fatal;
        }
        await Promise.all(writing);
        if (fatal) throw fatal;
        await storeSmall();
      } catch (err) {
        await Promise.allSettled(writing);
        // This route's refusals have said `retryable: false` for a client's request (its items too); the
        // collectors send an original again at their next run.
        throw multipartRefusal(err, { retryable: false });
      }
      if (pendingMeta !== undefined) refuse(count++, 422, 'INGEST.VALIDATION_ERROR', 'a meta without its original');
      if (results.length + accepted.length === 0) {
        throw new InvalidRequestError({ loc: ['body', 'original'], msg: 'Field required (no meta and original pairs)', type: 'missing' });
      }
      const outcomes = accepted.length ? await db.transaction((tx) => linkOriginals(tx, store.backend, accepted)) : [];
      // Objects written now that nothing names (their document is gone or is no message): removed again.
      const named = new Set(accepted.filter((_, i) => outcomes[i].ok).map((a) => a.stored.sha256));
      const orphans = accepted.filter((a, i) => !outcomes[i].ok && !a.stored.existed && !named.has(a.stored.sha256)).map((a) => a.stored.objectKey);
      if (orphans.length) await removeObjects(store, new Set(orphans));
      outcomes.forEach((o, i) => {
        const a = accepted[i];
        if (o.ok) results.push({ index: a.index, status_code: o.duplicate ? 200 : 201, doc_id: a.docId, sha256: o.sha256, size_bytes: o.sizeBytes, error: null });
        else refuse(a.index, o.status, o.code, o.message, a.docId);
      });
      results.sort((a, b) => a.index - b.index);
      return sendBatchResults(reply, results);
    },
  });

  app.route<{ Params: { doc_id: string } }>({
    ...ROUTES.documentOriginal,
    handler: async (req, reply) => {
      const original = await originalOf(db, req.params.doc_id);
      if (!original) throw new NotFoundError('No original is kept for this document');
      let body;
      try {
        body = await store.get(original.object_key);
      } catch (err) {
        if (err instanceof ObjectNotFoundError) throw new NotFoundError('The original is not in the object store');
        throw err;
      }
      return reply
        .header('content-type', ORIGINAL_MIME_TYPE)
        .header('content-length', String(original.size_bytes))
        .header('content-disposition', contentDisposition(`${req.params.doc_id}.eml`))
        .header('x-content-type-options', 'nosniff')
        .header('content-security-policy', "sandbox; default-src 'none'")
        .header('cache-control', 'private, max-age=3600')
        .send(body);
    },
  });

  app.route({
    ...ROUTES.reparseEmail,
    handler: async (req) => {
      const { reparseEmail } = await import('../../maintenance/reparse.ts');
      const result = await reparseEmail({ db, store, catalog, validate: validateIngest });
      req.log.info({ repaired: result.repaired, unchanged: result.unchanged, failed: result.failed, without_original: result.without_original }, 'email reparsed from the originals');
      return result;
    },
  });
}
