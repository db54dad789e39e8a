/**
 * The file ingestion pipeline behind POST /v1/ingest/file: store the upload (streamed, hashed, deduplicated), record
 * the file, extract its text (OCR through the shared engine), and hand the document to the catalog.
 *
 * Why it runs in the request: extraction is bounded by the per-stage limits (bytes, pages, pixels, seconds; see
 * docs/files.md), so the answer can carry the real `extraction_status`. The document therefore enters the catalog
 * once, after extraction, with its final text; the workflow steps it went through (submitted -> extracting ->
 * extracted -> enriching -> enriched) are recorded with their times in `metadata.workflow`, and the embedding worker
 * moves it to `indexed` like any other document.
 *
 * File enrichment status (spec §3) lives on the `files` row: inserted `pending`, `processing` while extraction runs,
 * then `enriched` (OCR ran and read text), `failed` (OCR or decoding failed) or `skipped` (no OCR needed, or the type
 * or size is unsupported). The row exists before the document links it (document_files has a foreign key to it).
 */
import type { Readable } from 'node:stream';
import { batchKeyOf, type Catalog } from '../catalog/catalog.ts';
import type { IngestItem } from '../catalog/ingest.ts';
import { CatalogError, type CatalogDocumentRequest, type CatalogIngestResult } from '../catalog/types.ts';
import { serverInstanceId } from '../db/instance.ts';
import type { Queryable } from '../db/types.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import { OcrError } from '../ocr/engine.ts';
import type { FilesConfig } from './config.ts';
import { blockedAmong, skippedResult } from '../catalog/blocklist.ts';
import type { SkipReason } from '../catalog/types.ts';
import { isSignaturePart } from '../mail/signature.ts';
import { buildFileDocument, fileIdempotencyKey, fileIdentity, type FileDocument, type FileEnrichmentStatus } from './document.ts';
import { detectType } from './detect.ts';
import { extractText, type ExtractResult, type OcrFunction } from './extract.ts';
import type { FileMeta } from './meta.ts';
import { readObject, removeObjects, type ObjectStore, type PutResult } from './object-store.ts';
import { isCalendarFile, MAX_CALENDAR_ATTACHMENT_BYTES } from '../calendar/config.ts';
import { MemexError } from '../util/errors.ts';

export interface FileIngestDeps {
  store: ObjectStore;
  config: FilesConfig;
  catalog: Catalog;
  db: Queryable;
  /** Shared OCR engine; without it images are stored with extraction failed and enrichment `pending`. */
  ocrEngine?: OcrEngine;
  /** The local paths of files now stored (new or already there), for coverage's not-stored lists. */
  onStoredPaths?: (paths: string[]) => Promise<unknown>;
}

export interface FileIngestOutcome {
  result: CatalogIngestResult;
  file: { file_sha256: string; object_key: string; extraction_status: 'ready' | 'failed' };
  /** True when the object store already held these bytes. */
  objectExisted: boolean;
}

/**
 * OCR was refused for a reason that says nothing about the file (pool busy, engine closed): no document is created
 * (it would be stored as "extraction failed" forever, since a re-upload is a duplicate); the client retries.
 */
export class OcrUnavailableError extends MemexError {
  /** The status the gateway answers with, by Fastify's name (the upload routes read it). */
  readonly statusCode: number;
  constructor(message: string) {
    super(message, 'INGEST.OCR_UNAVAILABLE');
    this.statusCode = this.status;
  }
}

/** What happened in the OCR calls of one file: transient refusals, and the recognition time of each image/page. */
export interface OcrCallStats {
  error?: OcrError;
  ms: number[];
}

/** Plugs the shared engine into extractText, remembering transient refusals and timings. */
export function engineOcr(engine: OcrEngine, transient: OcrCallStats): OcrFunction {
  return async (image, { timeoutMs }) => {
    try {
      const r = await engine.recognize(image, { timeoutMs });
      transient.ms.push(r.timings_ms.ocr);
      const conf = r.ocr_boxes.length ? r.ocr_boxes.reduce((a, b) => a + b.confidence, 0) / r.ocr_boxes.length : undefined;
      return { text: r.ocr_text, confidence: conf, language: r.lang };
    } catch (err) {
      if (err instanceof OcrError && (err.code === 'busy' || err.code === 'closed')) transient.error ??= err;
      throw err;
    }
  };
}

/** The catalog payload of a built file document. */
export function toCatalogRequest(doc: FileDocument, workflow: WorkflowStep[]): CatalogDocumentRequest {
  return {
    idempotency_key: doc.idempotency_key,
    source_type: doc.source_type,
    source_provider: doc.source_provider,
    source_id: doc.source_id,
    external_id: doc.external_id,
    content_sha256: doc.text_sha256,
    text: doc.text,
    title: doc.title,
    mime_type: doc.mime_type,
    content_timestamp: doc.content_timestamp,
    content_timestamp_type: doc.content_timestamp_type,
    content_modified_at: doc.content_modified_at,
    metadata: { ...doc.metadata, workflow },
    facet_overrides: { has_attachments: doc.has_attachments, attachment_count: doc.attachment_count },
    file_sha256s: [doc.file.file_sha256],
    extraction_failed: doc.extraction_failed,
    error_details: doc.error_details,
    intent: doc.intent,
    relevance_score: doc.relevance_score,
  };
}

export interface WorkflowStep {
  status: 'submitted' | 'extracting' | 'extracted' | 'enriching' | 'enriched';
  at: string;
  extraction_failed?: boolean;
}

/** The enrichment jsonb of the files row: what was done to the bytes, never the text itself. */
function enrichmentRecord(x: ExtractResult, status: FileEnrichmentStatus, ocrMs: number[]): Record<string, unknown> {
  return {
    status,
    method: x.method,
    extraction_status: x.status,
    ...(x.error ? { error: x.error.slice(0, 1000) } : {}),
    detected: x.detected.mimeType,
    ...(x.pages !== undefined ? { pages: x.pages } : {}),
    ...(x.image ? { image: x.image } : {}),
    ...(x.ocr
      ? {
          ocr: {
            chars: x.ocr.text.length,
            confidence: x.ocr.confidence ?? null,
            language: x.ocr.language ?? null,
            pages: x.ocr.pages,
            ms: ocrMs.reduce((a, b) => a + b, 0),
          },
        }
      : {}),
    ...(x.needsOcr ? { needs_ocr: x.needsOcr } : {}),
    at: new Date().toISOString(),
  };
}

/** File name and type as the multipart part gave them. */
export interface UploadNames {
  filename?: string;
  mimeType?: string;
}

/** One upload already in the object store, with its meta. */
export interface StoredUpload {
  meta: FileMeta;
  stored: PutResult;
  upload: UploadNames;
}

/** The outcome of one upload of a batch: its answer, or the error the single route would have raised. */
export type FileItemResult = { ok: true; outcome: FileIngestOutcome } | { ok: false; error: unknown };

/** One document's catalog answer, or the error it met. */
type Cataloged = { ok: true; result: CatalogIngestResult } | { ok: false; error: unknown };

interface FileStatusUpdate {
  sha: string;
  status: FileEnrichmentStatus;
  enrichment: Record<string, unknown>;
}

const isEmailType = (t: string) => t === 'email' || t === 'email_local';

/** The name and type a file is known by: the meta's, else the multipart part's. */
function namesOf(item: StoredUpload): UploadNames {
  return { filename: item.meta.filename || item.upload.filename, mimeType: item.meta.mimeType || item.upload.mimeType };
}

/** What the web UI's upload sends as `meta.source` (ui/src/api.ts), with `path` = `upload/<name>`. */
const WEB_UPLOAD_SOURCE = 'upload';

interface DuplicateRow {
  submission_id: string;
  status: string;
  doc_id: string;
  external_id: string;
  version_number: number;
  thread_id: string | null;
  doc_status: string;
  extraction_status: string | null;
  total: number;
  files: string[];
}

/** The columns of a duplicate answer, over submissions `s` and documents `d`. */
const DUPLICATE_COLUMNS = `s.submission_id, s.status, d.doc_id, d.external_id, d.version_number, d.thread_id,
              d.status AS doc_status, d.metadata->'extraction'->>'status' AS extraction_status,
              (SELECT count(*)::int FROM chunk_documents cd WHERE cd.doc_id = d.doc_id) AS total,
              coalesce((SELECT array_agg(f.file_sha256) FROM document_files f WHERE f.doc_id = d.doc_id), '{}') AS files`;

export class FileIngestService {
  constructor(private readonly deps: FileIngestDeps) {}

  get maxUploadBytes(): number {
    return this.deps.config.maxUploadBytes;
  }

  /** Streams an upload into the store. ObjectStoreError subclasses carry the HTTP status. */
  async store(stream: Readable, upload: { filename?: string; mimeType?: string }): Promise<PutResult> {
    return this.deps.store.put(stream, { maxBytes: this.deps.config.maxUploadBytes, filename: upload.filename, mimeType: upload.mimeType });
  }

  /**
   * The document for stored bytes: a duplicate answer when the same file at the same source identity is already the
   * active document (no extraction, no OCR), else extract and catalog. Errors are thrown (the single upload route).
   */
  async ingestStored(meta: FileMeta, stored: PutResult, upload: UploadNames, receivedAt: Date): Promise<FileIngestOutcome> {
    const [item] = await this.ingestStoredMany([{ meta, stored, upload }], receivedAt);
    if (!item.ok) throw item.error;
    return item.outcome;
  }

  /**
   * Several stored uploads (POST /v1/ingest/file:batch) with the same steps as one, in a few statements for all of
   * them: one duplicate lookup, one files upsert, extraction file by file, one catalog batch (one transaction for the
   * usual batch), one status update. One item's failure (OCR unavailable, a catalog refusal) never stops the others;
   * it comes back as that item's error.
   */
  async ingestStoredMany(items: StoredUpload[], receivedAt: Date): Promise<FileItemResult[]> {
    const results = await this.ingestAll(items, receivedAt);
    const stored = items.flatMap((item, i) => {
      const r = results[i];
      return item.meta.source === 'localfs' && r.ok && !r.outcome.result.skipped ? [item.meta.path] : [];
    });
    if (stored.length > 0 && this.deps.onStoredPaths) await this.deps.onStoredPaths(stored).catch(() => undefined);
    return results;
  }

  private async ingestAll(items: StoredUpload[], receivedAt: Date): Promise<FileItemResult[]> {
    const { db, catalog, store } = this.deps;
    const results: (FileItemResult | undefined)[] = new Array(items.length);
    const duplicates = await this.findDuplicates(items);
    const blocked = await this.screen(items, duplicates);
    const todo = items.map((item, index) => ({ item, index })).filter(({ index }) => !duplicates.has(index) && !blocked.has(index));
    for (const [index, outcome] of blocked) results[index] = { ok: true, outcome };
    for (const [index, dup] of duplicates) {
      const { stored } = items[index];
      results[index] = {
        ok: true,
        outcome: {
          result: dup.result,
          file: { file_sha256: stored.sha256, object_key: stored.objectKey, extraction_status: dup.extractionStatus },
          objectExisted: stored.existed,
        },
      };
    }
    if (todo.length === 0) return results as FileItemResult[];

    // Recorded as being processed in one statement (one commit): new file rows, or known files taken up again.
    const rows = new Map<string, { stored: PutResult; filename: string | null; mimeType: string | null }>();
    for (const { item } of todo) {
      if (rows.has(item.stored.sha256)) continue;
      rows.set(item.stored.sha256, { stored: item.stored, filename: namesOf(item).filename ?? null, mimeType: namesOf(item).mimeType ?? null });
    }
    const files = [...rows.values()];
    await db.query(
      `INSERT INTO files (file_sha256, object_key, storage_backend, filename, mime_type, size_bytes, enrichment_status)
       SELECT sha, key, $3, name, mime, size, 'processing'
         FROM unnest($1::text[], $2::text[], $4::text[], $5::text[], $6::bigint[]) AS x(sha, key, name, mime, size)
       ON CONFLICT (file_sha256) DO UPDATE SET enrichment_status = 'processing', updated_at = now()`,
      [
        files.map((f) => f.stored.sha256),
        files.map((f) => f.stored.objectKey),
        store.backend,
        files.map((f) => f.filename),
        files.map((f) => f.mimeType),
        files.map((f) => f.stored.sizeBytes),
      ],
    );

    // Extraction, one file after the other (PDF and HTML work runs in the extraction workers, OCR in its engine).
    const built: { index: number; item: StoredUpload; doc: FileDocument; workflow: WorkflowStep[]; status: FileStatusUpdate }[] = [];
    const statuses: FileStatusUpdate[] = [];
    for (const { item, index } of todo) {
      const workflow: WorkflowStep[] = [{ status: 'submitted', at: receivedAt.toISOString() }];
      const { filename, mimeType } = namesOf(item);
      workflow.push({ status: 'extracting', at: new Date().toISOString() });
      const transient: OcrCallStats = { ms: [] };
      let extraction: ExtractResult;
      try {
        extraction = await this.extract(item.stored, filename, mimeType, transient);
      } catch (err) {
        statuses.push({ sha: item.stored.sha256, status: 'failed', enrichment: { error: (err as Error).message, at: new Date().toISOString() } });
        results[index] = { ok: false, error: err };
        continue;
      }
      if (transient.error) {
        // Put the file back to pending: nothing about it failed, the engine was not available.
        statuses.push({ sha: item.stored.sha256, status: 'pending', enrichment: { error: transient.error.message, at: new Date().toISOString() } });
        results[index] = { ok: false, error: new OcrUnavailableError(`OCR is not available right now (${transient.error.message}); retry later`) };
        continue;
      }
      workflow.push({ status: 'extracted', at: new Date().toISOString(), ...(extraction.status === 'failed' ? { extraction_failed: true } : {}) });
      const doc = buildFileDocument({ meta: item.meta, stored: item.stored, backend: store.backend, upload: item.upload, extraction });
      const fileStatus = doc.metadata.attachments[0].file.enrichment_status;
      // Enrichment of a file document = the OCR/caption step; it already ran inside extraction, so it is recorded as a
      // step that finishes when the document is cataloged.
      workflow.push({ status: 'enriching', at: new Date().toISOString() });
      workflow.push({ status: 'enriched', at: new Date().toISOString() });
      built.push({ index, item, doc, workflow, status: { sha: item.stored.sha256, status: fileStatus, enrichment: enrichmentRecord(extraction, fileStatus, transient.ms) } });
    }

    try {
      const cataloged = await this.catalogMany(built.map((b) => ({ index: b.index, request: toCatalogRequest(b.doc, b.workflow) })));
      // A concurrent upload of the same file may have won: report what the catalog holds.
      const raced = [...cataloged.values()].flatMap((c) => (c.ok && c.result.duplicate ? [c.result.doc_id] : []));
      const racedStatus = await this.extractionStatusOf(raced);
      for (const b of built) {
        const c = cataloged.get(b.index)!;
        if (!c.ok) {
          results[b.index] = c;
          continue;
        }
        const extractionStatus = c.result.duplicate ? (racedStatus.get(c.result.doc_id) ?? b.doc.file.extraction_status) : b.doc.file.extraction_status;
        results[b.index] = {
          ok: true,
          outcome: {
            result: c.result,
            file: { file_sha256: b.item.stored.sha256, object_key: b.item.stored.objectKey, extraction_status: extractionStatus },
            objectExisted: b.item.stored.existed,
          },
        };
      }
    } finally {
      await this.setFileStatuses([...statuses, ...built.map((b) => b.status)]);
    }
    await this.calendarAttachments(built.map((b) => ({ item: b.item, result: results[b.index] })));
    return results as FileItemResult[];
  }

  /**
   * The block list, before any work: an upload of a forgotten source, or an attachment of a forgotten
   * message or sender, is answered `skipped` (as the catalog would) without extraction, and bytes this
   * upload brought that no file record names are deleted again. So is an email attachment that is the
   * message's signature part (`skipped: email_signature`, src/mail/signature.ts).
   */
  private async screen(items: StoredUpload[], duplicates: Map<number, unknown>): Promise<Map<number, FileIngestOutcome>> {
    const out = new Map<number, FileIngestOutcome>();
    const open = items.map((item, index) => ({ item, index })).filter(({ index }) => !duplicates.has(index));
    if (open.length === 0) return out;
    const docs = open.map(({ item }) => ({
      source_type: fileIdentity(item.meta, item.stored.sha256).sourceType,
      metadata: item.meta.messageId ? { email: { message_id: item.meta.messageId } } : null,
    }));
    const reasons: (SkipReason | null)[] = await blockedAmong(this.deps.db, docs, this.deps.catalog.phoneRegion);
    // The signature part of signed mail (signature.asc, smime.p7s) an older collector still uploads: no document.
    open.forEach(({ item }, i) => {
      if (docs[i].metadata && isEmailType(docs[i].source_type) && isSignaturePart(namesOf(item))) reasons[i] ??= 'email_signature';
    });
    const fresh: string[] = [];
    open.forEach(({ item, index }, i) => {
      const reason = reasons[i];
      if (!reason) return;
      out.set(index, {
        result: skippedResult(fileIdentity(item.meta, item.stored.sha256).externalId, reason),
        file: { file_sha256: item.stored.sha256, object_key: item.stored.objectKey, extraction_status: 'failed' },
        objectExisted: item.stored.existed,
      });
      if (!item.stored.existed) fresh.push(item.stored.sha256);
    });
    if (fresh.length > 0) {
      const named = await this.deps.db.query<{ file_sha256: string }>('SELECT file_sha256 FROM files WHERE file_sha256 = ANY($1::text[])', [fresh]);
      const keep = new Set(named.rows.map((r) => r.file_sha256));
      const kept = new Set(open.filter(({ index }) => !out.has(index)).map(({ item }) => item.stored.sha256));
      const keys = open.filter(({ index, item }) => out.has(index) && !item.stored.existed && !keep.has(item.stored.sha256) && !kept.has(item.stored.sha256));
      await removeObjects(this.deps.store, new Set(keys.map(({ item }) => item.stored.objectKey)));
    }
    return out;
  }

  /** One document through the single-document path (errors thrown as they are), several through one catalog batch. */
  private async catalogMany(items: IngestItem[]): Promise<Map<number, Cataloged>> {
    const out = new Map<number, Cataloged>();
    if (items.length === 1) {
      try {
        out.set(items[0].index, { ok: true, result: await this.deps.catalog.ingest(items[0].request) });
      } catch (err) {
        out.set(items[0].index, { ok: false, error: err });
      }
      return out;
    }
    if (items.length === 0) return out;
    const batch = await this.deps.catalog.ingestBatch(items, batchKeyOf(items.map((i) => i.request)));
    for (const o of batch.items) {
      out.set(o.index, o.ok ? { ok: true, result: o.result! } : { ok: false, error: new CatalogError(o.error!.status, o.error!.code, o.error!.message) });
    }
    return out;
  }

  /**
   * A stored calendar file (an invitation attached to an email, an .ics upload) is also read as events and tasks
   * (src/calendar/attachments.ts). Never fails the upload: the file is stored whatever its calendar holds.
   */
  private async calendarAttachments(done: { item: StoredUpload; result: FileItemResult | undefined }[]): Promise<void> {
    for (const { item, result } of done) {
      const { filename, mimeType } = namesOf(item);
      if (!result?.ok || result.outcome.result.skipped || !isCalendarFile(filename, mimeType)) continue;
      if (item.stored.sizeBytes > MAX_CALENDAR_ATTACHMENT_BYTES) continue;
      try {
        const bytes = await readObject(this.deps.store, item.stored.objectKey, MAX_CALENDAR_ATTACHMENT_BYTES);
        const { eventsFromAttachment } = await import('../calendar/attachments.ts');
        await eventsFromAttachment(this.deps.catalog, bytes, result.outcome.result.doc_id);
      } catch {
        // An unreadable calendar stays a file.
      }
    }
  }

  private async extract(
    stored: PutResult,
    filename: string | undefined,
    mimeType: string | undefined,
    transient: OcrCallStats,
  ): Promise<ExtractResult> {
    const { store, config, ocrEngine } = this.deps;
    const options = { limits: config.extract, ocr: ocrEngine ? engineOcr(ocrEngine, transient) : undefined };
    if (store.localPath) return extractText({ path: store.localPath(stored.objectKey), filename, mimeType }, options);
    if (stored.sizeBytes > config.extract.maxBytes) {
      return {
        status: 'failed',
        method: 'none',
        text: '',
        error: `file too large for extraction: ${stored.sizeBytes} bytes exceeds ${config.extract.maxBytes}`,
        warnings: [],
        detected: detectType(Buffer.alloc(0), filename, mimeType),
      };
    }
    // Store errors (S3 unreachable) propagate as ObjectStoreError: 503, retryable.
    const buffer = await readObject(store, stored.objectKey, config.extract.maxBytes);
    return extractText({ buffer, filename, mimeType }, options);
  }

  /** The enrichment status of files after their extraction, in one statement (the last update of a file wins). */
  private async setFileStatuses(updates: FileStatusUpdate[]): Promise<void> {
    const last = new Map(updates.map((u) => [u.sha, u]));
    if (last.size === 0) return;
    const rows = [...last.values()];
    await this.deps.db.query(
      `UPDATE files f SET enrichment_status = x.status, enrichment = x.enrichment::jsonb, updated_at = now()
         FROM unnest($1::text[], $2::text[], $3::text[]) AS x(sha, status, enrichment) WHERE f.file_sha256 = x.sha`,
      [rows.map((r) => r.sha), rows.map((r) => r.status), rows.map((r) => JSON.stringify(r.enrichment))],
    );
  }

  private async extractionStatusOf(docIds: string[]): Promise<Map<string, 'ready' | 'failed'>> {
    if (docIds.length === 0) return new Map();
    const r = await this.deps.db.query<{ doc_id: string; s: string | null }>(
      `SELECT doc_id, metadata->'extraction'->>'status' AS s FROM documents WHERE doc_id = ANY($1::uuid[])`,
      [docIds],
    );
    return new Map(r.rows.flatMap((row) => (row.s === 'ready' || row.s === 'failed' ? [[row.doc_id, row.s] as const] : [])));
  }

  /**
   * Which of these uploads the server already holds: the same source identity and the same bytes as an active
   * document (exactly what a re-upload would answer as a duplicate). `memex ingest` asks this before it skips a file
   * its state file calls unchanged, so a lost or different database is never taken for one that holds the files.
   */
  async knownFiles(items: { meta: FileMeta; sha256: string }[]): Promise<{ instanceId: string; known: { index: number; doc_id: string }[] }> {
    const instanceId = await serverInstanceId(this.deps.db);
    if (items.length === 0) return { instanceId, known: [] };
    const keys = items.map((it) => fileIdempotencyKey(it.meta, it.sha256.toLowerCase()));
    const r = await this.deps.db.query<{ key: string; doc_id: string }>(
      `SELECT s.idempotency_key AS key, d.doc_id
         FROM ingest_submissions s JOIN documents d ON d.doc_id = s.result_doc_id
        WHERE s.idempotency_key = ANY($1::text[]) AND s.status <> 'failed' AND d.is_active_version`,
      [keys],
    );
    const byKey = new Map(r.rows.map((row) => [row.key, row.doc_id]));
    return { instanceId, known: keys.flatMap((k, index) => (byKey.has(k) ? [{ index, doc_id: byKey.get(k)! }] : [])) };
  }

  /**
   * The uploads whose bytes at their source identity are already the active document, answered as duplicates.
   * And a file dropped on the web UI (source `upload`: a name, no place on disk) whose bytes are already a
   * stored file's, or a file `memex ingest` sends whose bytes and name are those of an earlier web upload: the
   * same file twice, answered with the document already there ("already stored"), not a second document.
   */
  private async findDuplicates(items: StoredUpload[]): Promise<Map<number, { result: CatalogIngestResult; extractionStatus: 'ready' | 'failed' }>> {
    const keys = items.map((it) => fileIdempotencyKey(it.meta, it.stored.sha256));
    const r = await this.deps.db.query<DuplicateRow & { idempotency_key: string }>(
      `SELECT s.idempotency_key, ${DUPLICATE_COLUMNS}
         FROM ingest_submissions s JOIN documents d ON d.doc_id = s.result_doc_id
        WHERE s.idempotency_key = ANY($1::text[]) AND s.status <> 'failed' AND d.is_active_version`,
      [[...new Set(keys)]],
    );
    const byKey = new Map<string, DuplicateRow>(r.rows.map((row) => [row.idempotency_key, row]));
    const byIndex = new Map<number, DuplicateRow>();
    keys.forEach((key, index) => {
      const row = byKey.get(key);
      if (row) byIndex.set(index, row);
    });
    const local = items.flatMap((it, index) =>
      !byIndex.has(index) && fileIdentity(it.meta, it.stored.sha256).sourceType === 'localfs' ? [{ it, index }] : [],
    );
    if (local.length > 0) {
      const same = await this.deps.db.query<DuplicateRow & { sha: string; path: string | null; filename: string | null }>(
        `SELECT f.file_sha256 AS sha, d.metadata->'localfs'->>'path' AS path, d.metadata->'localfs'->>'filename' AS filename,
                ${DUPLICATE_COLUMNS}
           FROM document_files f JOIN documents d ON d.doc_id = f.doc_id
           JOIN LATERAL (SELECT * FROM ingest_submissions x WHERE x.result_doc_id = d.doc_id AND x.status <> 'failed'
                          ORDER BY x.created_at DESC LIMIT 1) s ON true
          WHERE f.file_sha256 = ANY($1::text[]) AND d.is_active_version AND d.source_type = 'localfs'
          ORDER BY d.ingested_at`,
        [[...new Set(local.map(({ it }) => it.stored.sha256))]],
      );
      for (const { it, index } of local) {
        const name = it.meta.filename ?? it.meta.path.split('/').pop();
        const match = same.rows.find(
          (row) =>
            row.sha === it.stored.sha256 &&
            (it.meta.source === WEB_UPLOAD_SOURCE || (row.path?.startsWith(`${WEB_UPLOAD_SOURCE}/`) === true && row.filename === name)),
        );
        if (match) byIndex.set(index, match);
      }
    }
    const out = new Map<number, { result: CatalogIngestResult; extractionStatus: 'ready' | 'failed' }>();
    byIndex.forEach((row, index) => {
      out.set(index, {
        result: {
          submission_id: row.submission_id,
          doc_id: row.doc_id,
          external_id: row.external_id,
          version_number: row.version_number,
          status: row.status,
          document_status: row.doc_status,
          thread_id: row.thread_id,
          file_ids: row.files,
          duplicate: true,
          total_chunks: row.total,
        },
        extractionStatus: row.extraction_status === 'failed' ? 'failed' : 'ready',
      });
    });
    return out;
  }
}
