/**
 * Builds the document (text, identity, metadata, attachment descriptor) for a file uploaded through
 * POST /v1/ingest/file, following spec-notes A4.1 with one deliberate change to the identity (see `fileIdentity`).
 * Pure: no I/O, so the route, the CLI (`memex ingest`) and the fs-watch collector path all produce the same document.
 */
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { ExtractResult } from './extract.ts';
import type { FileMeta } from './meta.ts';
import type { ObjectStoreBackend, PutResult } from './object-store.ts';
import { normaliseOptionalMimeType } from '../util/mime-type.ts';

export const SOURCE_TYPES = [
  'chatapp',
  'sms',
  'email',
  'email_local',
  'localfs',
  'cloud_drive',
  'note',
  'reminder',
  'host_reminders',
  'calendar_event',
  'contact',
] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

export type AttachmentKind = 'image' | 'pdf' | 'file' | 'other';
export type FileEnrichmentStatus = 'pending' | 'processing' | 'enriched' | 'failed' | 'skipped';

/** One entry of metadata.attachments (gateway spec §2.1). */
export interface AttachmentDescriptor {
  index: number;
  kind: AttachmentKind;
  role: 'attachment' | 'inline' | 'thumbnail' | 'related';
  mime_type: string;
  size_bytes: number;
  filename: string;
  source_ref: { path: string; message_attachment_id?: string; page?: number };
  file: {
    sha256: string;
    object_key: string;
    storage_backend: ObjectStoreBackend;
    enrichment_status: FileEnrichmentStatus;
  };
  ocr?: { text: string; confidence: number | null; language: string | null; truncated?: boolean };
  caption?: string;
  image?: { width: number; height: number };
}

export interface FileDocumentInput {
  meta: FileMeta;
  stored: PutResult;
  backend: ObjectStoreBackend;
  /** From the multipart part: its filename and content type. */
  upload?: { filename?: string; mimeType?: string };
  extraction: ExtractResult;
  now?: Date;
  /** FILE_PLACEHOLDER_TEXT / IMAGE_PLACEHOLDER_TEXT: first word of the body when no text could be extracted. */
  placeholders?: { file?: string; image?: string };
}

/** What the gateway forwards to the catalog (field names as in the documents table / catalog payload). */
export interface FileDocument {
  idempotency_key: string;
  source_type: SourceType;
  source_provider: string;
  source_id: string;
  external_id: string;
  title: string;
  text: string;
  text_sha256: string;
  mime_type: string;
  content_timestamp: string;
  content_timestamp_type: 'modified';
  content_modified_at: string | null;
  metadata: Record<string, unknown> & { attachments: AttachmentDescriptor[] };
  has_attachments: true;
  attachment_count: 1;
  extraction_failed: boolean;
  error_details: Record<string, unknown> | null;
  intent: Record<string, unknown> | null;
  relevance_score: number | null;
  /** For the FileIngestResponse and the X-File-SHA256 / X-Object-Key headers. */
  file: { file_sha256: string; object_key: string; extraction_status: 'ready' | 'failed' };
}

/** Largest OCR text copied into the attachment descriptor (the full text is in the document text). */
export const MAX_DESCRIPTOR_OCR_CHARS = 65_536;

export function sha256Hex(s: string | Buffer): string {
  return createHash('sha256').update(s).digest('hex');
}

function mapSourceType(source: string): SourceType {
  if ((SOURCE_TYPES as readonly string[]).includes(source)) return source as SourceType;
  if (source.startsWith('email')) return 'email'; // e.g. email_imap/<account>
  return 'localfs';
}

/**
 * Source identity of a file document.
 *
 * spec-notes A4.1 (from the original system) uses `localfs:<sha256>` as the external id. That makes every edit of a
 * file a brand-new document while the old text stays active and searchable, and the issue wants the fs-watch path to
 * produce "a new version on change". So the identity of a file on disk is its PATH: `localfs:<path>`; uploading a
 * changed file at the same path gives the same external id with a new idempotency key, which the catalog turns into
 * version + 1 (spec §3 Document versions), and the same bytes uploaded again are a duplicate. Content dedup still
 * happens where it matters for storage: the object store keeps one copy per SHA-256 whatever the path.
 *
 * Email attachments never change once sent: their identity is the message plus the content,
 * `email-attachment:<message_id>:<sha256>` (the collector's own Idempotency-Key, host-agent spec §2.6), so two
 * attachments of one message with the same file name stay distinct.
 */
export function fileIdentity(meta: FileMeta, sha256: string): { sourceType: SourceType; sourceProvider: string; externalId: string } {
  const sourceType = mapSourceType(meta.source);
  if (sourceType === 'localfs') {
    return { sourceType, sourceProvider: 'filesystem', externalId: `localfs:${meta.path}` };
  }
  if (meta.messageId) {
    return { sourceType, sourceProvider: meta.source, externalId: `email-attachment:${meta.messageId}:${sha256}` };
  }
  return { sourceType, sourceProvider: meta.source, externalId: `${meta.source}:${meta.path}` };
}

/** Idempotency key of a file document: same source identity and same bytes = the same submission (a duplicate). */
export function fileIdempotencyKey(meta: FileMeta, sha256: string): string {
  const { sourceType, externalId } = fileIdentity(meta, sha256);
  return sha256Hex(`${sourceType}:${externalId}:${sha256}`);
}

function attachmentKind(x: ExtractResult): AttachmentKind {
  if (x.detected.kind === 'image') return 'image';
  if (x.detected.kind === 'pdf') return 'pdf';
  if (x.detected.kind === 'binary') return 'other';
  return 'file';
}

const GENERIC_MIME = new Set(['', 'application/octet-stream', 'binary/octet-stream', 'application/unknown']);

/**
 * Content type: what the bytes say when the magic bytes were recognised (a PDF is a PDF whatever it was called);
 * else what the sender declared; else what extension or content suggested.
 */
export function resolveContentType(meta: FileMeta, upload: FileDocumentInput['upload'], x: ExtractResult): string {
  if (x.detected.by === 'magic' && x.detected.kind !== 'binary') return x.detected.mimeType;
  for (const c of [meta.mimeType, upload?.mimeType]) {
    const m = normaliseOptionalMimeType(c) ?? '';
    if (!GENERIC_MIME.has(m)) return m;
  }
  return x.detected.mimeType || 'application/octet-stream';
}

/** Enrichment status of the file (spec §3): OCR ran -> enriched|failed; OCR wanted but absent -> pending. */
function enrichmentStatus(x: ExtractResult): FileEnrichmentStatus {
  if (x.ocr) return x.status === 'ready' ? 'enriched' : 'failed';
  if (x.needsOcr) {
    if (x.needsOcr.reason.startsWith('OCR not available') || x.needsOcr.reason.includes('OCR not available')) return 'pending';
    return 'skipped'; // unsupported format or over the pixel limit
  }
  if (x.detected.kind === 'image' && x.status === 'failed') return 'failed'; // truncated / unreadable image
  return 'skipped'; // text kinds need no enrichment
}

export function buildFileDocument(input: FileDocumentInput): FileDocument {
  const { meta, stored, extraction: x } = input;
  const now = input.now ?? new Date();
  const filename = meta.filename || input.upload?.filename || path.basename(meta.path) || 'document';
  const contentType = resolveContentType(meta, input.upload, x);
  const modified = meta.mtime ?? now;
  const { sourceType, sourceProvider, externalId } = fileIdentity(meta, stored.sha256);

  // Collector-supplied enrichment (email attachments: enrichment{}, local images: image{}).
  const caption = (meta.image?.caption ?? meta.enrichment?.caption)?.trim() || undefined;
  const collectorOcr = (meta.image?.ocr_text ?? meta.enrichment?.ocr_text)?.trim() || undefined;

  const extractedText = x.status === 'ready' ? x.text : '';
  const ocrText = x.ocr?.text || (extractedText ? undefined : collectorOcr);
  // Name, path and time are in the title, metadata.localfs and content_timestamp: as lines of the text
  // they matched every search for "home" or a date and were quoted by ask as if they were content
  // (spec-notes A4.1 put them there for display only). Tags and a caption are words a person searches by.
  const header = [
    meta.tags.length ? `Tags: ${meta.tags.join(', ')}` : '',
    caption ? `Caption: ${caption}` : '',
  ].filter(Boolean);

  let body: string;
  let status: 'ready' | 'failed' = x.status;
  let method: string = x.method;
  if (extractedText) {
    body = x.ocr ? `OCR:\n${extractedText}` : extractedText;
  } else if (collectorOcr) {
    body = `OCR:\n${collectorOcr}`;
    status = 'ready';
    method = 'collector-ocr';
  } else if (caption) {
    body = '';
    status = 'ready';
    method = 'collector-caption';
  } else {
    const isImage = x.detected.kind === 'image';
    const ph = isImage ? (input.placeholders?.image ?? '[image]') : (input.placeholders?.file ?? '[file]');
    body = `${ph} ${filename} (${contentType})${x.error ? `: ${x.error}` : ''}`;
  }
  const text = [...header, '', body].join('\n').replace(/\n{3,}/g, '\n\n').trim();

  const descriptor: AttachmentDescriptor = {
    index: 0,
    kind: attachmentKind(x),
    role: 'attachment',
    mime_type: contentType,
    size_bytes: stored.sizeBytes,
    filename,
    source_ref: { path: meta.path, ...(meta.contentId ? { message_attachment_id: meta.contentId } : {}) },
    file: {
      sha256: stored.sha256,
      object_key: stored.objectKey,
      storage_backend: input.backend,
      enrichment_status: collectorOcr && !x.ocr ? 'enriched' : enrichmentStatus(x),
    },
  };
  if (ocrText) {
    descriptor.ocr = {
      text: ocrText.slice(0, MAX_DESCRIPTOR_OCR_CHARS),
      confidence: x.ocr?.confidence ?? null,
      language: x.ocr?.language ?? null,
      ...(ocrText.length > MAX_DESCRIPTOR_OCR_CHARS ? { truncated: true } : {}),
    };
  }
  if (caption) descriptor.caption = caption;
  if (x.image) descriptor.image = x.image;

  const extraction: Record<string, unknown> = { status, method };
  if (x.error && status === 'failed') extraction.error = x.error;
  if (x.pages !== undefined) extraction.pages = x.pages;
  if (x.charset) extraction.charset = x.charset;
  if (x.truncated) extraction.truncated = true;
  if (x.warnings.length) extraction.warnings = x.warnings.slice(0, 20);
  if (x.needsOcr && status === 'failed') extraction.needs_ocr = x.needsOcr;

  const metadata: FileDocument['metadata'] = {
    source: meta.source,
    localfs: {
      path: meta.path,
      filename,
      tags: meta.tags,
      ...(meta.mtime ? { mtime: meta.mtime.toISOString() } : {}),
      ...(meta.ctime ? { ctime: meta.ctime.toISOString() } : {}),
      ...(Object.keys(meta.extra).length ? { extra: meta.extra } : {}),
    },
    file: { sha256: stored.sha256, object_key: stored.objectKey, size_bytes: stored.sizeBytes, content_type: contentType },
    extraction,
    ingested_at: now.toISOString(),
    attachments: [descriptor],
  };
  if (meta.messageId || meta.contentId) {
    metadata.email = { ...(meta.messageId ? { message_id: meta.messageId } : {}), ...(meta.contentId ? { content_id: meta.contentId } : {}) };
  }
  if (meta.enrichment) metadata.enrichment = meta.enrichment;
  if (meta.image) metadata.image = meta.image;
  if (meta.sha256 && meta.sha256 !== stored.sha256) {
    // The sender's hash disagrees with the bytes received: keep the document, flag the mismatch.
    extraction.warnings = [...((extraction.warnings as string[]) ?? []), `meta.sha256 ${meta.sha256} does not match the upload`];
  }

  const extractionFailed = status === 'failed';
  return {
    idempotency_key: fileIdempotencyKey(meta, stored.sha256),
    source_type: sourceType,
    source_provider: sourceProvider,
    source_id: meta.path,
    external_id: externalId,
    title: filename,
    text,
    text_sha256: sha256Hex(text),
    mime_type: contentType,
    content_timestamp: modified.toISOString(),
    content_timestamp_type: 'modified',
    content_modified_at: meta.mtime ? meta.mtime.toISOString() : null,
    metadata,
    has_attachments: true,
    attachment_count: 1,
    extraction_failed: extractionFailed,
    error_details: extractionFailed
      ? { code: 'EXTRACTION_FAILED', message: x.error ?? 'extraction failed', method: x.method, ...(x.warnings.length ? { warnings: x.warnings.slice(0, 20) } : {}) }
      : null,
    intent: meta.intent ?? null,
    relevance_score: meta.relevanceScore ?? null,
    file: { file_sha256: stored.sha256, object_key: stored.objectKey, extraction_status: status },
  };
}
