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
import type { Catalog } from '../catalog/catalog.ts';
import type { CatalogDocumentRequest, CatalogIngestResult } from '../catalog/types.ts';
import { serverInstanceId } from '../db/instance.ts';
import type { Queryable } from '../db/types.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import { OcrError } from '../ocr/engine.ts';
import type { FilesConfig } from './config.ts';
import { buildFileDocument, fileIdempotencyKey, type FileDocument, type FileEnrichmentStatus } from './document.ts';
import { detectType, extractText, type ExtractResult, type OcrFunction } from './extract.ts';
import type { FileMeta } from './meta.ts';
import { readObject, type ObjectStore, type PutResult } from './object-store.ts';

export interface FileIngestDeps {
  store: ObjectStore;
  config: FilesConfig;
  catalog: Catalog;
  db: Queryable;
  /** Shared OCR engine; without it images are stored with extraction failed and enrichment `pending`. */
  ocrEngine?: OcrEngine;
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
export class OcrUnavailableError extends Error {
  override name = 'OcrUnavailableError';
  readonly statusCode = 503;
  readonly code = 'INGEST.OCR_UNAVAILABLE';
  readonly retryable = true;
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
   * active document (no extraction, no OCR), else extract and catalog.
   */
  async ingestStored(
    meta: FileMeta,
    stored: PutResult,
    upload: { filename?: string; mimeType?: string },
    receivedAt: Date,
  ): Promise<FileIngestOutcome> {
    const { db, catalog, store } = this.deps;
    const dup = await this.findDuplicate(meta, stored.sha256);
    if (dup) {
      return {
        result: dup.result,
        file: { file_sha256: stored.sha256, object_key: stored.objectKey, extraction_status: dup.extractionStatus },
        objectExisted: stored.existed,
      };
    }

    const workflow: WorkflowStep[] = [{ status: 'submitted', at: receivedAt.toISOString() }];
    const filename = meta.filename || upload.filename;
    const mimeType = meta.mimeType || upload.mimeType;
    // Recorded as being processed in one statement (one commit): a new file row, or a known file taken up again.
    await db.query(
      `INSERT INTO files (file_sha256, object_key, storage_backend, filename, mime_type, size_bytes, enrichment_status)
       VALUES ($1, $2, $3, $4, $5, $6, 'processing')
       ON CONFLICT (file_sha256) DO UPDATE SET enrichment_status = 'processing', updated_at = now()`,
      [stored.sha256, stored.objectKey, store.backend, filename ?? null, mimeType ?? null, stored.sizeBytes],
    );

    workflow.push({ status: 'extracting', at: new Date().toISOString() });
    const transient: OcrCallStats = { ms: [] };
    let extraction: ExtractResult;
    try {
      extraction = await this.extract(stored, filename, mimeType, transient);
    } catch (err) {
      await this.setFileStatus(stored.sha256, 'failed', { error: (err as Error).message, at: new Date().toISOString() });
      throw err;
    }
    if (transient.error) {
      // Put the file back to pending: nothing about it failed, the engine was not available.
      await this.setFileStatus(stored.sha256, 'pending', { error: transient.error.message, at: new Date().toISOString() });
      throw new OcrUnavailableError(`OCR is not available right now (${transient.error.message}); retry later`);
    }
    workflow.push({ status: 'extracted', at: new Date().toISOString(), ...(extraction.status === 'failed' ? { extraction_failed: true } : {}) });

    const doc = buildFileDocument({ meta, stored, backend: store.backend, upload, extraction });
    const fileStatus = doc.metadata.attachments[0].file.enrichment_status;
    // Enrichment of a file document = the OCR/caption step; it already ran inside extraction, so it is recorded as a
    // step that finishes when the document is cataloged.
    workflow.push({ status: 'enriching', at: new Date().toISOString() });
    workflow.push({ status: 'enriched', at: new Date().toISOString() });
    let result: CatalogIngestResult;
    try {
      result = await catalog.ingest(toCatalogRequest(doc, workflow));
    } finally {
      await this.setFileStatus(stored.sha256, fileStatus, enrichmentRecord(extraction, fileStatus, transient.ms));
    }
    // A concurrent upload of the same file may have won: report what the catalog holds.
    const extractionStatus = result.duplicate ? ((await this.extractionStatusOf(result.doc_id)) ?? doc.file.extraction_status) : doc.file.extraction_status;
    return {
      result,
      file: { file_sha256: stored.sha256, object_key: stored.objectKey, extraction_status: extractionStatus },
      objectExisted: stored.existed,
    };
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

  private async setFileStatus(sha: string, status: FileEnrichmentStatus, enrichment: Record<string, unknown>): Promise<void> {
    await this.deps.db.query(
      `UPDATE files SET enrichment_status = $2, enrichment = $3::jsonb, updated_at = now() WHERE file_sha256 = $1`,
      [sha, status, JSON.stringify(enrichment)],
    );
  }

  private async extractionStatusOf(docId: string): Promise<'ready' | 'failed' | null> {
    const r = await this.deps.db.query<{ s: string | null }>(
      `SELECT metadata->'extraction'->>'status' AS s FROM documents WHERE doc_id = $1`,
      [docId],
    );
    const s = r.rows[0]?.s;
    return s === 'ready' || s === 'failed' ? s : null;
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

  /** The active document made from these bytes at this source identity, answered as a duplicate. */
  private async findDuplicate(
    meta: FileMeta,
    sha: string,
  ): Promise<{ result: CatalogIngestResult; extractionStatus: 'ready' | 'failed' } | null> {
    const key = fileIdempotencyKey(meta, sha);
    const r = await this.deps.db.query<{
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
    }>(
      `SELECT s.submission_id, s.status, d.doc_id, d.external_id, d.version_number, d.thread_id, d.status AS doc_status,
              d.metadata->'extraction'->>'status' AS extraction_status,
              (SELECT count(*)::int FROM chunk_documents cd WHERE cd.doc_id = d.doc_id) AS total,
              coalesce((SELECT array_agg(f.file_sha256) FROM document_files f WHERE f.doc_id = d.doc_id), '{}') AS files
         FROM ingest_submissions s JOIN documents d ON d.doc_id = s.result_doc_id
        WHERE s.idempotency_key = $1 AND s.status <> 'failed' AND d.is_active_version`,
      [key],
    );
    const row = r.rows[0];
    if (!row) return null;
    return {
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
    };
  }
}
