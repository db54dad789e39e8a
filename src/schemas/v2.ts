/** v2 envelopes (gateway spec 2.8, spec-notes A2.8) and their responses (spec-notes A2.9). */
import { Type, type Static } from '@sinclair/typebox';
import { DocumentMetadata, ErrorEnvelope, Identifier, JsonObject, Nullable, PERSON_ROLES, StringEnum, Timestamp, TIMESTAMP_TYPES } from './common.ts';
import { MIME_MAX_CHARS, SHORT_MAX_CHARS, TITLE_MAX_CHARS, URI_MAX_CHARS } from './bounds.ts';
import { IngestSubmissionResponse } from './ingest.ts';

/** "2.0", "2.1", "2.0.3": any 2.x. */
export const SchemaVersion = Type.String({ pattern: '^2\\.\\d+(\\.\\d+)?$', description: 'semantic version 2.x', examples: ['2.0'] });

export const EnvelopeSource = Type.Object({
  source_type: { ...Identifier(100), examples: ['note'] },
  source_provider: Type.Optional(Nullable(Identifier(200, { minLength: 0 }))),
  source_account_id: Type.Optional(Nullable(Identifier(500, { minLength: 0 }))),
});
export type EnvelopeSourceT = Static<typeof EnvelopeSource>;

/** In v2 identifier_type is required (unlike v1 DocumentPerson). */
export const PersonReference = Type.Object({
  identifier: Identifier(500),
  identifier_type: Identifier(50),
  role: Type.Optional(Nullable(StringEnum(PERSON_ROLES))),
  display_name: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  label: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  metadata: Type.Optional(Nullable(JsonObject)),
});

export const ThreadHint = Type.Object({
  external_id: Type.Optional(Nullable(Identifier(500))),
  thread_type: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  is_group: Type.Optional(Nullable(Type.Boolean())),
  title: Type.Optional(Nullable(Type.String({ description: `Stored cut at ${TITLE_MAX_CHARS} characters (with …)` }))),
  participants: Type.Optional(Nullable(Type.Array(PersonReference, { maxItems: 1000 }))),
  metadata: Type.Optional(Nullable(JsonObject)),
});

export const DocumentPayload = Type.Object(
  {
    external_id: Identifier(1000),
    version_number: Type.Optional(Type.Integer({ minimum: 1, default: 1 })),
    title: Type.Optional(Nullable(Type.String({ description: `Stored cut at ${TITLE_MAX_CHARS} characters (with …)` }))),
    text: Type.String(),
    text_sha256: Type.Optional(Nullable(Type.String({ pattern: '^[0-9a-fA-F]{64}$' }))),
    mime_type: Type.Optional(Nullable(Type.String({ maxLength: MIME_MAX_CHARS }))),
    canonical_uri: Type.Optional(Nullable(Type.String({ maxLength: URI_MAX_CHARS }))),
    content_timestamp: Timestamp,
    content_timestamp_type: StringEnum(TIMESTAMP_TYPES),
    content_created_at: Type.Optional(Nullable(Timestamp)),
    content_modified_at: Type.Optional(Nullable(Timestamp)),
    people: Type.Optional(Nullable(Type.Array(PersonReference, { maxItems: 1000 }))),
    thread: Type.Optional(Nullable(ThreadHint)),
    relationships: Type.Optional(
      Nullable(
        Type.Object({
          thread_id: Type.Optional(Nullable(Type.String())),
          parent_doc_id: Type.Optional(Nullable(Type.String())),
          source_doc_ids: Type.Optional(Nullable(Type.Array(Type.String()))),
          related_doc_ids: Type.Optional(Nullable(Type.Array(Type.String()))),
        }),
      ),
    ),
    facets: Type.Optional(
      Nullable(
        Type.Object({
          has_attachments: Type.Optional(Nullable(Type.Boolean())),
          attachment_count: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
          has_location: Type.Optional(Nullable(Type.Boolean())),
          has_due_date: Type.Optional(Nullable(Type.Boolean())),
          due_date: Type.Optional(Nullable(Timestamp)),
          is_completed: Type.Optional(Nullable(Type.Boolean())),
          completed_at: Type.Optional(Nullable(Timestamp)),
        }),
      ),
    ),
    metadata: Type.Optional(Nullable(DocumentMetadata)),
    intent: Type.Optional(Nullable(JsonObject)),
  },
  { title: 'DocumentPayload' },
);
export type DocumentPayloadT = Static<typeof DocumentPayload>;

export const PersonIdentifierPayload = Type.Object({
  kind: Identifier(50),
  value_raw: Identifier(500),
  value_canonical: Type.Optional(Nullable(Identifier(500, { minLength: 0 }))),
  label: Type.Optional(Nullable(Type.String({ maxLength: 100 }))),
  priority: Type.Optional(Nullable(Type.Integer())),
  verified: Type.Optional(Nullable(Type.Boolean())),
  metadata: Type.Optional(Nullable(JsonObject)),
});

export const PersonEnvelopePayload = Type.Object(
  {
    external_id: Identifier(500),
    display_name: Type.String({ minLength: 1, maxLength: 500 }),
    given_name: Type.Optional(Nullable(Type.String({ maxLength: 300 }))),
    family_name: Type.Optional(Nullable(Type.String({ maxLength: 300 }))),
    organization: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
    nicknames: Type.Optional(Nullable(Type.Array(Type.String({ maxLength: 200 }), { maxItems: 50 }))),
    notes: Type.Optional(Nullable(Type.String({ maxLength: 20000 }))),
    photo_hash: Type.Optional(Nullable(Type.String({ maxLength: 200 }))),
    change_token: Type.Optional(Nullable(Type.String({ maxLength: 4000 }))),
    version: Type.Optional(Type.Integer({ minimum: 0, default: 1 })),
    deleted: Type.Optional(Type.Boolean({ default: false })),
    identifiers: Type.Optional(Nullable(Type.Array(PersonIdentifierPayload, { maxItems: 200 }))),
  },
  { title: 'PersonPayload' },
);
export type PersonEnvelopePayloadT = Static<typeof PersonEnvelopePayload>;

const envelope = <K extends string, P extends typeof DocumentPayload | typeof PersonEnvelopePayload>(kind: K, payload: P, title: string) =>
  Type.Object(
    {
      schema_version: SchemaVersion,
      kind: Type.Literal(kind),
      source: EnvelopeSource,
      payload,
    },
    { title },
  );

export const DocumentEnvelope = envelope('document', DocumentPayload, 'DocumentEnvelope');
export type DocumentEnvelopeT = Static<typeof DocumentEnvelope>;
export const PersonEnvelope = envelope('person', PersonEnvelopePayload, 'PersonEnvelope');
export type PersonEnvelopeT = Static<typeof PersonEnvelope>;

export const PersonIngestResponse = Type.Object(
  {
    person_id: Nullable(Type.String({ description: 'null when the person was skipped' })),
    external_id: Type.String(),
    version: Type.Integer(),
    status: StringEnum(['upserted', 'deleted', 'skipped'] as const),
    deleted: Type.Boolean(),
    skipped: Type.Optional(
      Type.String({ description: 'blocked_source or blocked_identifier: a forget with block: true keeps this person out; nothing was stored' }),
    ),
  },
  { title: 'PersonIngestResponse' },
);
export type PersonIngestResponseT = Static<typeof PersonIngestResponse>;

export const V2BatchRequest = Type.Array(Type.Unknown(), { minItems: 1, maxItems: 1000, title: 'V2BatchRequest' });

export const V2BatchItem = Type.Object({
  index: Type.Integer(),
  kind: Nullable(Type.String()),
  status_code: Type.Integer(),
  document: Nullable(IngestSubmissionResponse),
  person: Nullable(PersonIngestResponse),
  error: Nullable(ErrorEnvelope),
});
export type V2BatchItemT = Static<typeof V2BatchItem>;

export const V2BatchResponse = Type.Object(
  {
    total_count: Type.Integer(),
    success_count: Type.Integer(),
    failure_count: Type.Integer(),
    results: Type.Array(V2BatchItem),
  },
  { title: 'V2BatchResponse' },
);
