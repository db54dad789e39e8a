import { Type } from '@sinclair/typebox';
import { Identifier, JsonObject, Nullable, SOURCE_TYPES, StringEnum, TIMESTAMP_TYPES, Timestamp, Uuid } from './common.ts';
import { MIME_MAX_CHARS, SHORT_MAX_CHARS, TITLE_MAX_CHARS, URI_MAX_CHARS } from './bounds.ts';
import { DocumentPerson, ThreadPayload } from './ingest.ts';

/** Body of the internal POST /v1/catalog/documents (gateway spec 4.6). */
export const CatalogDocument = Type.Object(
  {
    idempotency_key: Identifier(200),
    source_type: StringEnum(SOURCE_TYPES),
    source_id: Identifier(1000),
    content_sha256: Identifier(200),
    text: Type.String({ minLength: 1 }),
    content_timestamp: Timestamp,
    content_timestamp_type: StringEnum(TIMESTAMP_TYPES),
    source_provider: Type.Optional(Nullable(Identifier(200, { minLength: 0 }))),
    source_account_id: Type.Optional(Nullable(Identifier(500, { minLength: 0 }))),
    external_id: Type.Optional(Nullable(Identifier(1000))),
    title: Type.Optional(Nullable(Type.String({ description: `Stored cut at ${TITLE_MAX_CHARS} characters (with …)` }))),
    mime_type: Type.Optional(Nullable(Type.String({ maxLength: MIME_MAX_CHARS }))),
    canonical_uri: Type.Optional(Nullable(Type.String({ maxLength: URI_MAX_CHARS }))),
    metadata: Type.Optional(Nullable(JsonObject)),
    people: Type.Optional(Nullable(Type.Array(DocumentPerson, { maxItems: 1000 }))),
    thread_id: Type.Optional(Nullable(Uuid)),
    thread: Type.Optional(Nullable(ThreadPayload)),
    parent_doc_id: Type.Optional(Nullable(Type.String())),
    source_doc_ids: Type.Optional(Nullable(Type.Array(Type.String()))),
    related_doc_ids: Type.Optional(Nullable(Type.Array(Type.String()))),
    has_location: Type.Optional(Nullable(Type.Boolean())),
    has_due_date: Type.Optional(Nullable(Type.Boolean())),
    due_date: Type.Optional(Nullable(Timestamp)),
    is_completed: Type.Optional(Nullable(Type.Boolean())),
    completed_at: Type.Optional(Nullable(Timestamp)),
    attachments: Type.Optional(Nullable(Type.Array(JsonObject))),
    facet_overrides: Type.Optional(Nullable(JsonObject)),
    intent: Type.Optional(Nullable(JsonObject)),
    relevance_score: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  },
  { title: 'CatalogDocumentRequest' },
);

export const CatalogBatch = Type.Object({
  documents: Type.Array(CatalogDocument, { minItems: 1, maxItems: 1000 }),
  batch_idempotency_key: Type.Optional(Identifier(200)),
});

export const CatalogVersionRequest = Type.Object({
  text: Type.Optional(Type.String()),
  title: Type.Optional(Nullable(Type.String({ description: `Stored cut at ${TITLE_MAX_CHARS} characters (with …)` }))),
  metadata: Type.Optional(JsonObject),
  content_timestamp: Type.Optional(Timestamp),
  attachments: Type.Optional(Type.Array(JsonObject)),
});

export const CatalogDocParams = Type.Object({ doc_id: Uuid });
export const CatalogSubmissionParams = Type.Object({ submission_id: Uuid });

const EmbeddingItem = Type.Object({
  chunk_id: Uuid,
  model: Type.String({ minLength: 1 }),
  vector: Type.Array(Type.Number(), { minItems: 1, maxItems: 8192 }),
  dimensions: Type.Optional(Type.Integer({ minimum: 1 })),
});
/** One embedding (spec-notes A4.6) or several at once. */
export const CatalogEmbeddingsRequest = Type.Union([
  EmbeddingItem,
  Type.Object({ embeddings: Type.Array(EmbeddingItem, { minItems: 1, maxItems: 1000 }) }),
]);
export const CatalogEmbeddingsResponse = Type.Object({
  stored: Type.Integer(),
  indexed_doc_ids: Type.Array(Type.String()),
  chunk_id: Type.Optional(Type.String({ description: 'The chunk, when one embedding was sent' })),
  status: Type.Literal('embedded'),
});

/** Answer of POST /v1/catalog/documents (202 new, 200 duplicate) and one item of a catalog batch. */
export const CatalogIngestResponse = Type.Object(
  {
    submission_id: Type.String(),
    doc_id: Type.String(),
    external_id: Type.String(),
    version_number: Type.Integer(),
    status: Type.String({ description: 'Submission status' }),
    document_status: Type.String(),
    thread_id: Nullable(Type.String()),
    file_ids: Type.Array(Type.String()),
    duplicate: Type.Boolean(),
    skipped: Type.Optional(Type.String()),
    total_chunks: Type.Integer(),
  },
  { title: 'CatalogIngestResponse' },
);

export const CatalogBatchResponse = Type.Object(
  {
    batch_id: Type.String(),
    batch_status: Type.String(),
    total_count: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
    items: Type.Array(
      Type.Object({
        index: Type.Integer(),
        ok: Type.Boolean(),
        result: Type.Optional(CatalogIngestResponse),
        error: Type.Optional(Type.Object({ code: Type.String(), message: Type.String(), status: Type.Integer() })),
      }),
    ),
  },
  { title: 'CatalogBatchResponse' },
);

export const CatalogVersionResponse = Type.Object({
  doc_id: Type.String(),
  previous_version_id: Type.String(),
  external_id: Type.String(),
  version_number: Type.Integer(),
  thread_id: Nullable(Type.String()),
  status: Type.String(),
  file_ids: Type.Array(Type.String()),
  chunks_queued: Type.Integer(),
});

export const CatalogDocumentStatus = Type.Object({
  doc_id: Type.String(),
  status: Type.String(),
  total_chunks: Type.Integer(),
  embedded_chunks: Type.Integer(),
  pending_chunks: Type.Integer(),
  failed_chunks: Type.Integer(),
  embedding_error: Nullable(Type.String()),
});

export const CatalogDeleteResponse = Type.Object({ doc_id: Type.String(), status: Type.Literal('deleted') });
