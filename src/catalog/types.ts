/** Shapes the catalog accepts and returns (gateway spec 4.6). The gateway prepares them. */
import type { DocumentPersonT, ThreadPayloadT } from '../schemas/ingest.ts';
import { MemexError, type ErrorCode } from '../util/errors.ts';

/** Why the block list (blocklist.ts) skipped a document or card. */
export type BlockReason = 'blocked_source' | 'blocked_identifier' | 'blocked_message';

/** Why an ingest stored nothing: the block list, or an email attachment that is a signature part. */
export type SkipReason = BlockReason | 'email_signature';

export interface AttachmentEntry {
  index: number;
  kind?: 'image' | 'pdf' | 'file' | 'other';
  role?: 'attachment' | 'inline' | 'thumbnail' | 'related';
  mime_type: string;
  size_bytes?: number;
  [key: string]: unknown;
}

/** A document ready for the catalog: text normalised, timestamps in UTC, idempotency key computed. */
export interface CatalogDocumentRequest {
  idempotency_key: string;
  source_type: string;
  source_id: string;
  content_sha256: string;
  text: string;
  content_timestamp: string;
  content_timestamp_type: string;
  external_id?: string | null;
  source_provider?: string | null;
  source_account_id?: string | null;
  title?: string | null;
  mime_type?: string | null;
  canonical_uri?: string | null;
  metadata?: Record<string, unknown> | null;
  people?: DocumentPersonT[] | null;
  thread_id?: string | null;
  thread?: ThreadPayloadT | null;
  parent_doc_id?: string | null;
  source_doc_ids?: string[] | null;
  related_doc_ids?: string[] | null;
  content_created_at?: string | null;
  content_modified_at?: string | null;
  has_location?: boolean | null;
  has_due_date?: boolean | null;
  due_date?: string | null;
  is_completed?: boolean | null;
  completed_at?: string | null;
  /** Replaces metadata.attachments; sets has_attachments / attachment_count. */
  attachments?: AttachmentEntry[] | null;
  /** Explicit facet values that win over the computed ones. */
  facet_overrides?: { has_attachments?: boolean; attachment_count?: number } | null;
  intent?: Record<string, unknown> | null;
  relevance_score?: number | null;
  /** Files (by SHA-256) this document was made from; linked in document_files. */
  file_sha256s?: string[] | null;
  /** Extraction outcome for documents made from files. */
  extraction_failed?: boolean;
  error_details?: Record<string, unknown> | null;
}

export interface CatalogIngestResult {
  submission_id: string;
  doc_id: string;
  external_id: string;
  version_number: number;
  status: string;
  document_status: string;
  thread_id: string | null;
  file_ids: string[];
  duplicate: boolean;
  /**
   * Set when a forget's block list kept the document out, or (`email_signature`) the upload was the
   * signature part of signed mail: nothing was stored.
   */
  skipped?: SkipReason;
  total_chunks: number;
}

export interface BatchItemOutcome {
  index: number;
  ok: boolean;
  /** The document shares a chunk that was still waiting for a vector: re-check its status after commit. */
  recheck?: boolean;
  result?: CatalogIngestResult;
  error?: { code: ErrorCode; message: string; status: number };
  /** The Message-ID of a message the block list kept out (its earlier attachments are erased after commit). */
  blockedMessage?: string;
}

export interface CatalogBatchResult {
  batch_id: string;
  batch_status: string;
  total_count: number;
  success_count: number;
  failure_count: number;
  items: BatchItemOutcome[];
}

export interface ChunkCounts {
  total_chunks: number;
  embedded_chunks: number;
  pending_chunks: number;
  failed_chunks: number;
  /** The first recorded reason of a failed chunk (null when none failed). */
  embedding_error: string | null;
}

export class CatalogError extends MemexError {
  constructor(status: number, code: ErrorCode, message: string) {
    super(message, code, status, { loc: ['body'] });
  }
}
