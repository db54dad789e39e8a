import { Type, type Static } from '@sinclair/typebox';
import {
  BATCH_STATUSES, THREAD_SOURCE_TYPES, DocumentMetadata, ErrorEnvelope, Identifier, JsonObject, Nullable, PERSON_ROLES, SOURCE_TYPES, StringEnum, Timestamp, Uuid,
} from './common.ts';
import { MIME_MAX_CHARS, SHORT_MAX_CHARS, TITLE_MAX_CHARS, URI_MAX_CHARS } from './bounds.ts';

export const DocumentPerson = Type.Object({
  identifier: Identifier(500),
  identifier_type: Type.Optional(Nullable(Identifier(50, { minLength: 0 }))),
  role: Type.Optional(Nullable(StringEnum(PERSON_ROLES))),
  display_name: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  label: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  metadata: Type.Optional(Nullable(JsonObject)),
});
export type DocumentPersonT = Static<typeof DocumentPerson>;

export const ThreadPayload = Type.Object({
  external_id: Identifier(500),
  source_type: Type.Optional(Nullable(StringEnum(THREAD_SOURCE_TYPES))),
  source_provider: Type.Optional(Nullable(Identifier(200, { minLength: 0 }))),
  source_account_id: Type.Optional(Nullable(Identifier(500, { minLength: 0 }))),
  title: Type.Optional(Nullable(Type.String({ description: `Stored cut at ${TITLE_MAX_CHARS} characters (with …)` }))),
  participants: Type.Optional(Nullable(Type.Array(DocumentPerson, { maxItems: 1000 }))),
  thread_type: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  is_group: Type.Optional(Nullable(Type.Boolean())),
  participant_count: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  metadata: Type.Optional(Nullable(JsonObject)),
  first_message_at: Type.Optional(Nullable(Timestamp)),
  last_message_at: Type.Optional(Nullable(Timestamp)),
});
export type ThreadPayloadT = Static<typeof ThreadPayload>;

export const IngestContent = Type.Object({
  mime_type: Type.Optional(Type.String({ default: 'text/plain', maxLength: MIME_MAX_CHARS })),
  data: Type.String(),
  encoding: Type.Optional(Nullable(Type.String({ maxLength: SHORT_MAX_CHARS }))),
});

export const IngestRequest = Type.Object(
  {
    source_type: StringEnum(SOURCE_TYPES),
    source_id: Identifier(1000),
    source_provider: Type.Optional(Nullable(Identifier(200, { minLength: 0 }))),
    source_account_id: Type.Optional(Nullable(Identifier(500, { minLength: 0 }))),
    external_id: Type.Optional(Nullable(Identifier(1000))),
    title: Type.Optional(Nullable(Type.String({ description: `Stored cut at ${TITLE_MAX_CHARS} characters (with …)` }))),
    canonical_uri: Type.Optional(Nullable(Type.String({ maxLength: URI_MAX_CHARS }))),
    content: IngestContent,
    metadata: Type.Optional(Nullable(DocumentMetadata)),
    content_timestamp: Type.Optional(Nullable(Timestamp)),
    content_timestamp_type: Type.Optional(Nullable(Type.String({ maxLength: SHORT_MAX_CHARS }))),
    content_created_at: Type.Optional(Nullable(Timestamp)),
    content_modified_at: Type.Optional(Nullable(Timestamp)),
    people: Type.Optional(Nullable(Type.Array(DocumentPerson, { maxItems: 1000 }))),
    thread_id: Type.Optional(Nullable(Uuid)),
    thread: Type.Optional(Nullable(ThreadPayload)),
    parent_doc_id: Type.Optional(Nullable(Uuid)),
    has_location: Type.Optional(Nullable(Type.Boolean())),
    has_due_date: Type.Optional(Nullable(Type.Boolean())),
    due_date: Type.Optional(Nullable(Timestamp)),
    is_completed: Type.Optional(Nullable(Type.Boolean())),
    completed_at: Type.Optional(Nullable(Timestamp)),
    relevance_score: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
    intent: Type.Optional(Nullable(JsonObject)),
  },
  {
    title: 'IngestRequestModel',
    examples: [
      {
        source_type: 'note',
        source_id: 'note-2026-03-01-trip',
        title: 'Trip planning',
        content: { mime_type: 'text/plain', data: 'Book the train to Lisbon for the conference on the 12th.' },
        metadata: { folder: 'travel' },
        content_timestamp: '2026-03-01T10:15:00+02:00',
      },
    ],
  },
);
export type IngestRequestT = Static<typeof IngestRequest>;

export const IngestSubmissionResponse = Type.Object(
  {
    submission_id: Type.String(),
    doc_id: Type.String(),
    external_id: Type.String(),
    version_number: Type.Integer(),
    status: Type.String(),
    thread_id: Nullable(Type.String()),
    file_ids: Type.Array(Type.String()),
    duplicate: Type.Boolean(),
    skipped: Type.Optional(
      Type.String({
        description:
          'blocked_source, blocked_identifier or blocked_message (the Message-ID of erased email): a forget with block: true kept it out; email_signature: the upload is the signature part of signed mail (signature.asc, smime.p7s), never a document. Nothing was stored',
      }),
    ),
    total_chunks: Type.Integer(),
  },
  { title: 'IngestSubmissionResponse' },
);
export type IngestSubmissionResponseT = Static<typeof IngestSubmissionResponse>;

export const BatchIngestRequest = Type.Object({
  documents: Type.Array(IngestRequest, { minItems: 1, maxItems: 1000 }),
});

export const BatchItemResult = Type.Object({
  index: Type.Integer(),
  status_code: Type.Integer(),
  content_sha256: Nullable(Type.String()),
  submission: Nullable(IngestSubmissionResponse),
  error: Nullable(ErrorEnvelope),
});
export type BatchItemResultT = Static<typeof BatchItemResult>;

export const BatchIngestResponse = Type.Object(
  {
    batch_id: Nullable(Type.String()),
    batch_status: StringEnum(BATCH_STATUSES),
    total_count: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
    results: Type.Array(BatchItemResult),
  },
  { title: 'BatchIngestResponse' },
);
export type BatchIngestResponseT = Static<typeof BatchIngestResponse>;

export const IngestStatusResponse = Type.Object(
  {
    submission_id: Type.String(),
    status: Type.String(),
    document_status: Nullable(Type.String()),
    doc_id: Nullable(Type.String()),
    total_chunks: Type.Integer(),
    embedded_chunks: Type.Integer(),
    pending_chunks: Type.Integer(),
    failed_chunks: Type.Integer({ description: 'Chunks whose embedding failed (see error)' }),
    error: Nullable(JsonObject),
    batch: Type.Optional(
      Type.Object({
        batch_id: Type.String(),
        status: Type.String(),
        total_count: Type.Integer(),
        success_count: Type.Integer(),
        failure_count: Type.Integer(),
        submissions: Type.Array(
          Type.Object({
            submission_id: Type.String(),
            status: Type.String(),
            doc_id: Nullable(Type.String()),
            document_status: Nullable(Type.String()),
            total_chunks: Type.Integer(),
            embedded_chunks: Type.Integer(),
            pending_chunks: Type.Integer(),
            failed_chunks: Type.Integer(),
            error: Nullable(JsonObject),
          }),
        ),
      }),
    ),
  },
  { title: 'IngestStatusResponse' },
);
export type IngestStatusResponseT = Static<typeof IngestStatusResponse>;

/** GET /v1/ingest/{submission_id}. */
export const SubmissionParams = Type.Object({ submission_id: Type.String({ format: 'uuid' }) });
