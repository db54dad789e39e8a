import { Type, type Static, type TSchema } from '@sinclair/typebox';
import { SIZE_MAX } from './bounds.ts';

/** Values of Document.source_type (gateway spec 2.1). */
export const SOURCE_TYPES = [
  'chatapp', 'sms', 'email', 'email_local', 'localfs', 'cloud_drive', 'note', 'reminder', 'host_reminders',
  'calendar_event', 'contact', 'web_page',
] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];
/** Values of Thread.source_type (gateway spec 2.2). A thread sent without one takes its document's. */
export const THREAD_SOURCE_TYPES = ['chatapp', 'sms', 'email', 'slack', 'whatsapp', 'signal'] as const;

export const TIMESTAMP_TYPES = [
  'sent', 'received', 'modified', 'created', 'event_start', 'event_end', 'due', 'completed',
] as const;

export const DOCUMENT_STATUSES = ['submitted', 'extracting', 'extracted', 'enriching', 'enriched', 'indexed', 'failed'] as const;
export const SUBMISSION_STATUSES = ['submitted', 'processing', 'cataloged', 'completed', 'failed'] as const;
export const BATCH_STATUSES = ['submitted', 'processing', 'completed', 'partial', 'failed'] as const;
export const PERSON_ROLES = ['sender', 'recipient', 'participant', 'mentioned', 'contact'] as const;

export const Nullable = <T extends TSchema>(s: T) => Type.Union([s, Type.Null()]);
export const StringEnum = <T extends readonly string[]>(values: T, opts: Record<string, unknown> = {}) =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...opts });

export const Uuid = Type.String({ format: 'uuid' });

/** JSON Schema pattern of a string without NUL characters (PostgreSQL text cannot hold U+0000). */
export const NO_NUL_PATTERN = '^[^\\u0000]*$';
/**
 * An identifier (source ids, external ids, people identifiers, provider and account names): at most `maxLength`
 * characters, no NUL. Identifiers sit in btree indexes, whose rows hold at most ~2.7 kB, so every one is bounded;
 * a NUL is refused (422) rather than removed, so two different ids never become one.
 */
export const Identifier = (maxLength: number, opts: { minLength?: number; description?: string } = {}) =>
  Type.String({ minLength: opts.minLength ?? 1, maxLength, pattern: NO_NUL_PATTERN, ...(opts.description ? { description: opts.description } : {}) });
/** ISO 8601 date or date-time; without an offset it is read as UTC. Validated by the `timestamp` format. */
export const Timestamp = Type.String({ format: 'timestamp', description: 'ISO 8601 date-time (UTC when no offset)' });
export const JsonObject = Type.Record(Type.String(), Type.Unknown());

export const ValidationErrorItem = Type.Object({
  loc: Type.Array(Type.Union([Type.String(), Type.Integer()])),
  msg: Type.String(),
  type: Type.String(),
});
export const ValidationErrorBody = Type.Object({ detail: Type.Array(ValidationErrorItem) }, { title: 'HTTPValidationError' });
export type ValidationErrorItemT = Static<typeof ValidationErrorItem>;

export const ErrorEnvelope = Type.Object({
  error_code: Type.String(),
  message: Type.String(),
  retryable: Type.Boolean(),
  correlation_id: Type.String(),
  details: JsonObject,
});
export type ErrorEnvelopeT = Static<typeof ErrorEnvelope>;

export const DetailError = Type.Object({ detail: Type.Unknown() });

/** A refusal whose `detail` says why (404 of a document, file, source or submission that is not there). */
export const DetailMessage = Type.Object({ detail: Type.String() });

/**
 * A refusal other than a validation error (404, 409, 415 …): `detail` says why; `error_code` (catalog errors) or
 * `error` (the envelope of ingest refusals) say it for programs.
 */
export const ErrorMessage = Type.Object(
  { detail: Type.String(), error_code: Type.Optional(Type.String()), error: Type.Optional(ErrorEnvelope) },
  { title: 'ErrorMessage' },
);

/** 507 Insufficient Storage: a write met a full disk (src/util/disk-full.ts); nothing was stored, send again once there is room. */
export const DiskFullBody = { ...ErrorMessage, description: 'The disk holding DATA_DIR (or the database) is full: nothing was stored; send again once there is room (STORAGE.DISK_FULL)' };

/**
 * One entry of metadata.attachments (gateway spec 2.1): `index` and `mime_type` required, `kind`
 * and `role` from their sets, `size_bytes` an integer; other keys (filename, source_ref, ocr,
 * caption, vision, exif, sha256…) pass through.
 */
export const ATTACHMENT_KINDS = ['image', 'pdf', 'file', 'other'] as const;
export const ATTACHMENT_ROLES = ['attachment', 'inline', 'thumbnail', 'related'] as const;
export const AttachmentEntry = Type.Object(
  {
    index: Type.Integer({ minimum: 0 }),
    kind: Type.Optional(StringEnum(ATTACHMENT_KINDS)),
    role: Type.Optional(StringEnum(ATTACHMENT_ROLES)),
    mime_type: Type.String({ minLength: 1, maxLength: 255 }),
    size_bytes: Type.Optional(Type.Union([Type.Integer({ minimum: 0, maximum: SIZE_MAX }), Type.Null()])),
    source_ref: Type.Optional(Type.Union([JsonObject, Type.Null()])),
  },
  { additionalProperties: true, title: 'AttachmentEntry' },
);

/** The kinds of part of an e-mail body recorded in metadata.body_parts (src/mail/body-parts.ts finds them). */
export const BODY_PART_KINDS = ['quote', 'attribution', 'forward', 'patch', 'signature', 'footer'] as const;
export type BodyPartKind = (typeof BODY_PART_KINDS)[number];
/** At most this many parts are recorded (a pathological body of alternating lines is merged past it). */
export const MAX_BODY_PARTS = 2000;

/**
 * One entry of metadata.body_parts (issue 40): a span of the document text (UTF-16 offsets, end exclusive) that is
 * a quote, attribution, forwarded header, patch, signature or list footer of an e-mail body; never removed from it.
 */
export const BodyPartEntry = Type.Object(
  {
    kind: StringEnum(BODY_PART_KINDS),
    start: Type.Integer({ minimum: 0 }),
    end: Type.Integer({ minimum: 0 }),
  },
  { title: 'BodyPartEntry' },
);

/**
 * A document's metadata (spec 2.1): any keys; `attachments`, when present, a list of AttachmentEntry; `body_parts`
 * a list of BodyPartEntry. The schema
 * says so, so the OpenAPI document refuses what the route refuses (a bad entry is a 422 whose `loc` names it).
 */
export const DocumentMetadata = Type.Object(
  {
    attachments: Type.Optional(Type.Union([Type.Array(AttachmentEntry, { maxItems: 10_000 }), Type.Null()])),
    body_parts: Type.Optional(Type.Array(BodyPartEntry, { maxItems: MAX_BODY_PARTS })),
  },
  { additionalProperties: true, title: 'DocumentMetadata' },
);

/**
 * A response that is not JSON (newline-delimited JSON, a tar file, a file's bytes, Prometheus text), for a route's
 * `response` map: the OpenAPI document shows its media type; the route streams it unserialised.
 */
export const MediaResponse = (mediaType: string, description: string) => ({
  description,
  content: { [mediaType]: { schema: Type.String({ format: 'binary', description }) } },
});
