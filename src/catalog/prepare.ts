/**
 * Turns a v1 ingest request into a catalog document (gateway spec 4.1 rule 1): text extracted
 * and normalised, timestamps in UTC with a type, people kept, idempotency key computed.
 */
import type { CatalogDocumentRequest } from './types.ts';
import { TIMESTAMP_TYPES } from '../schemas/common.ts';
import type { IngestRequestT } from '../schemas/ingest.ts';
import { canonicalJson, normaliseText, sha256Hex } from '../util/hash.ts';
import { parseTimestamp, toUtcIso } from '../util/timestamp.ts';
import { MemexError, type ErrorCode } from '../util/errors.ts';

/** Preparation failure: a 4xx with the spec's 422 detail item, or another status with an error code. */
export class PrepareError extends MemexError {
  declare readonly loc: (string | number)[];

  constructor(
    status: number,
    code: ErrorCode,
    message: string,
    loc: (string | number)[],
    type: string,
  ) {
    super(message, code, status, { loc, type });
  }
}

const TEXT_MIME_TYPES = new Set(['text/plain', 'text/markdown']);
const SENT_BY_DEFAULT = new Set(['chatapp', 'sms', 'email']);

/** The text of `content`: plain unless `encoding` is base64 (then it must decode to UTF-8). */
export function extractContentText(content: IngestRequestT['content']): string {
  const mime = (content.mime_type ?? 'text/plain').split(';')[0].trim().toLowerCase();
  if (!TEXT_MIME_TYPES.has(mime)) {
    throw new PrepareError(
      415,
      'INGEST.UNSUPPORTED_MEDIA_TYPE',
      `content.mime_type ${mime} is not supported here; send text/plain or text/markdown (files go to /v1/ingest/file)`,
      ['body', 'content', 'mime_type'],
      'unsupported_media_type',
    );
  }
  if ((content.encoding ?? '').trim().toLowerCase() !== 'base64') return content.data;
  const compact = content.data.replace(/\s+/g, '');
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(compact) || compact.length % 4 !== 0) {
    throw new PrepareError(422, 'INGEST.INVALID_BASE64', 'content.data is not valid base64', ['body', 'content', 'data'], 'base64_decode');
  }
  const bytes = Buffer.from(compact, 'base64');
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw new PrepareError(422, 'INGEST.INVALID_UTF8', 'base64 payload is not valid UTF-8', ['body', 'content', 'data'], 'utf8_decode');
  }
  return text;
}

/**
 * The idempotency key: SHA-256 of source type, source id, text hash and the canonical JSON of
 * the metadata, and the account when there is one (spec 2.1: a version's identity includes
 * source_account_id, so the same message in two accounts is two documents). The same content sent
 * twice is one submission; changed text or metadata is an edit and becomes a new version.
 */
export function idempotencyKey(
  sourceType: string,
  sourceId: string,
  textHash: string,
  metadata: unknown,
  accountId?: string | null,
): string {
  const metaHash = sha256Hex(canonicalJson(metadata ?? {}));
  return sha256Hex(`${sourceType}:${sourceId}:${textHash}:${metaHash}${accountKeyPart(accountId)}`);
}

/** The account's part of an idempotency key: none without an account, so keys made before it stay the same. */
export function accountKeyPart(accountId: string | null | undefined): string {
  return accountId ? `:account:${accountId}` : '';
}

export function prepareIngest(req: IngestRequestT, now = new Date()): CatalogDocumentRequest {
  const text = normaliseText(extractContentText(req.content));
  if (!text) {
    throw new PrepareError(422, 'INGEST.EMPTY_TEXT', 'content.data is empty after normalisation', ['body', 'content', 'data'], 'value_error.empty');
  }
  const textHash = sha256Hex(text);
  const tsType = (req.content_timestamp_type ?? (SENT_BY_DEFAULT.has(req.source_type) ? 'sent' : 'created'))
    .trim()
    .toLowerCase();
  if (!(TIMESTAMP_TYPES as readonly string[]).includes(tsType)) {
    throw new PrepareError(
      422,
      'INGEST.INVALID_TIMESTAMP_TYPE',
      `content_timestamp_type must be one of ${TIMESTAMP_TYPES.join(', ')}`,
      ['body', 'content_timestamp_type'],
      'enum',
    );
  }
  const metadata = req.metadata ?? {};
  return {
    idempotency_key: idempotencyKey(req.source_type, req.source_id, textHash, metadata, req.source_account_id),
    source_type: req.source_type,
    source_id: req.source_id,
    content_sha256: textHash,
    text,
    content_timestamp: toUtcIso(req.content_timestamp) ?? now.toISOString(),
    content_timestamp_type: tsType,
    external_id: req.external_id ?? null,
    source_provider: req.source_provider ?? null,
    source_account_id: req.source_account_id ?? null,
    title: req.title ?? null,
    mime_type: (req.content.mime_type ?? 'text/plain').toLowerCase(),
    canonical_uri: req.canonical_uri ?? null,
    metadata,
    people: req.people ?? [],
    thread_id: req.thread_id ?? null,
    thread: req.thread
      ? {
          ...req.thread,
          first_message_at: toUtcIso(req.thread.first_message_at),
          last_message_at: toUtcIso(req.thread.last_message_at),
        }
      : null,
    parent_doc_id: req.parent_doc_id ?? null,
    content_created_at: toUtcIso(req.content_created_at),
    content_modified_at: toUtcIso(req.content_modified_at),
    has_location: req.has_location ?? null,
    has_due_date: req.has_due_date ?? null,
    due_date: toUtcIso(req.due_date),
    is_completed: req.is_completed ?? null,
    completed_at: toUtcIso(req.completed_at),
    intent: req.intent ?? null,
    relevance_score: req.relevance_score ?? null,
  };
}
