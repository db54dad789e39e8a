import { Type } from '@sinclair/typebox';
import { Identifier, JsonObject, Nullable, SOURCE_TYPES, StringEnum, TIMESTAMP_TYPES, Timestamp, Uuid } from './common.ts';
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
    title: Type.Optional(Nullable(Type.String())),
    mime_type: Type.Optional(Nullable(Type.String())),
    canonical_uri: Type.Optional(Nullable(Type.String())),
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
  title: Type.Optional(Nullable(Type.String())),
  metadata: Type.Optional(JsonObject),
  content_timestamp: Type.Optional(Timestamp),
  attachments: Type.Optional(Type.Array(JsonObject)),
});
