import { Type, type Static } from '@sinclair/typebox';
import { JsonObject, Nullable, SOURCE_TYPES, StringEnum, Timestamp } from './common.ts';

/** The filters of GET /v1/search without a query: the documents they select, newest first (a timeline drill-down). */
export const DocumentListQuery = Type.Object({
  source_type: Type.Optional(StringEnum(SOURCE_TYPES)),
  has_attachments: Type.Optional(
    Type.Boolean({
      default: false,
      description: 'true: only documents with attachments. false, the default (spec 4.2), does not filter: omitting it is the same',
    }),
  ),
  thread_id: Type.Optional(Type.String({ format: 'uuid' })),
  person_id: Type.Optional(Type.String({ format: 'uuid', description: 'Documents linked to this person (merges followed)' })),
  person: Type.Optional(
    Type.String({ minLength: 1, maxLength: 320, description: "Email, phone, handle, or a person id (as GET /v1/search's person filter)" }),
  ),
  start_date: Type.Optional({ ...Timestamp, description: 'Documents dated at or after this (content time)' }),
  end_date: Type.Optional({ ...Timestamp, description: 'Documents dated at or before this; a bare date includes that whole UTC day' }),
  limit: Type.Integer({ minimum: 1, maximum: 200, default: 50 }),
  offset: Type.Integer({ minimum: 0, default: 0 }),
});
export type DocumentListQueryT = Static<typeof DocumentListQuery>;

export const DocumentListItem = Type.Object({
  doc_id: Type.String(),
  metadata: JsonObject,
  text: Type.String(),
  title: Type.Union([Type.String(), Type.Null()]),
  source_type: Type.String(),
  external_id: Type.String(),
  version_number: Type.Integer(),
  content_timestamp: Type.String(),
  has_attachments: Type.Boolean(),
  status: Type.String(),
  thread_id: Type.Union([Type.String(), Type.Null()]),
});

export type DocumentListItemT = Static<typeof DocumentListItem>;

export const DocumentListResponse = Type.Object(
  {
    documents: Type.Array(DocumentListItem),
    count: Type.Integer({ description: 'documents on this page' }),
    total: Type.Integer({ description: 'documents matching the filters' }),
    limit: Type.Integer(),
    offset: Type.Integer(),
  },
  { title: 'DocumentListResponse' },
);
export type DocumentListResponseT = Static<typeof DocumentListResponse>;

export const DocumentUpdateRequest = Type.Object(
  {
    metadata: JsonObject,
    text: Type.String(),
    requeue_for_embedding: Type.Optional(Type.Boolean({ default: true })),
  },
  { title: 'DocumentUpdateRequest' },
);
export type DocumentUpdateRequestT = Static<typeof DocumentUpdateRequest>;

export const DocumentUpdateResponse = Type.Object(
  {
    doc_id: Type.String(),
    status: Type.String(),
    chunks_requeued: Type.Integer(),
    previous_version_id: Type.Union([Type.String(), Type.Null()]),
    version_number: Type.Integer(),
  },
  { title: 'DocumentUpdateResponse' },
);

/**
 * The stored document record (GET /v1/doc/{doc_id}, and the `document` of its view): the fields clients read are
 * named; the record's other columns pass through.
 */
export const StoredDocument = Type.Object(
  {
    doc_id: Type.String(),
    external_id: Type.String(),
    title: Nullable(Type.String()),
    text: Type.String(),
    source_type: Type.String(),
    source_provider: Nullable(Type.String()),
    source_account_id: Nullable(Type.String()),
    content_timestamp: Type.String(),
    ingested_at: Type.String(),
    version_number: Type.Integer(),
    is_active_version: Type.Boolean(),
    canonical_uri: Nullable(Type.String()),
    thread_id: Nullable(Type.String()),
    people: Type.Array(Type.Unknown()),
    metadata: JsonObject,
    deleted_at: Type.Optional(Nullable(Type.String({ description: 'GET /v1/doc/{doc_id}: when the document was deleted' }))),
  },
  { additionalProperties: true, title: 'StoredDocument' },
);
export type StoredDocumentT = Static<typeof StoredDocument>;

export const DocIdParams = Type.Object({ doc_id: Type.String({ format: 'uuid' }) });

/**
 * One attachment as a document view lists it (GET /v1/doc/{doc_id}/view `attachments`): an entry of the
 * document's own `metadata.attachments`, and for an email every file uploaded with its Message-ID
 * (src/catalog/attachments.ts). Defined once here for the API, the web UI and the MCP tools.
 */
export const DocumentAttachment = Type.Object(
  {
    index: Nullable(Type.Integer({ description: "Position in the message's own list (metadata.attachments); null for an upload the message does not list" })),
    filename: Nullable(Type.String()),
    mime_type: Nullable(Type.String()),
    size_bytes: Nullable(Type.Integer()),
    kind: Nullable(Type.String({ description: 'image, pdf, file or other' })),
    role: Type.String({ description: 'attachment, inline, thumbnail or related' }),
    sha256: Nullable(Type.String({ description: 'SHA-256 of the bytes, when known' })),
    stored: Type.Boolean({ description: 'The bytes are held: GET /v1/files/{sha256} downloads them' }),
    doc_id: Nullable(Type.String({ description: "The attachment's own document (its text, versions): null when it was not uploaded" })),
    caption: Nullable(Type.String()),
    ocr: Nullable(Type.Object({ text: Type.String(), truncated: Type.Boolean() }, { description: 'Text read from the file' })),
  },
  { title: 'DocumentAttachment' },
);
export type DocumentAttachmentT = Static<typeof DocumentAttachment>;

/** The message an attachment document belongs to (by Message-ID). */
export const AttachedTo = Type.Object(
  { doc_id: Type.String(), title: Nullable(Type.String()), content_timestamp: Type.String() },
  { title: 'AttachedTo' },
);
export type AttachedToT = Static<typeof AttachedTo>;

/** A document related to the one viewed: for a note, a note it links to or one that links to it (src/catalog/related-notes.ts). */
export const RelatedDocument = Type.Object(
  {
    doc_id: Type.String(),
    title: Nullable(Type.String()),
    path: Type.String({ description: "The related note's path in its vault" }),
    relation: Type.Union([Type.Literal('links_to'), Type.Literal('linked_from')], {
      description: 'links_to: this note links to it ([[wiki link]] or Markdown link); linked_from: it links to this note',
    }),
  },
  { title: 'RelatedDocument' },
);
export type RelatedDocumentT = Static<typeof RelatedDocument>;

export const DocumentViewResponse = Type.Object(
  {
    document: StoredDocument,
    people: Type.Array(Type.Object({ person_id: Type.String(), display_name: Type.String(), role: Type.String() }), {
      description: 'Linked people, merged ids resolved to the surviving person',
    }),
    versions: Type.Array(
      Type.Object({
        doc_id: Type.String(),
        version_number: Type.Integer(),
        is_active_version: Type.Boolean(),
        ingested_at: Type.String(),
      }),
      { description: 'Every version of this document, newest first' },
    ),
    attachments: Type.Array(DocumentAttachment, {
      description: "The document's attachments: its own list, and for an email the files uploaded with its Message-ID",
    }),
    has_attachments: Type.Boolean({ description: "An entry of attachments has the role attachment (inline images alone do not count, as in the document's has_attachments)" }),
    attached_to: Type.Union([AttachedTo, Type.Null()], {
      description: 'For an email attachment, or a media file imported with a chat message: the message it belongs to (null otherwise, or while the message is not there)',
    }),
    related: Type.Optional(
      Type.Array(RelatedDocument, {
        description: "Related documents: for a note, the notes of its vault it links to (in its links' order) and the notes that link to it (by path); at most 100 of each",
      }),
    ),
    original: Type.Optional(
      Type.Union([Type.Object({ url: Type.String(), sha256: Type.String(), size_bytes: Type.Integer() }), Type.Null()], {
        description: "A message's original as collected (GET /v1/documents/{doc_id}/original); null when none is kept",
      }),
    ),
    cited: Type.Union([Type.Object({ chunk_id: Type.String(), start_char: Type.Integer(), end_char: Type.Integer() }), Type.Null()], {
      description: 'The span of the text the chunk given as chunk_id covers (null without one, or when it is not in this document)',
    }),
    thread: Type.Union([
      Type.Object({
        thread_id: Type.String(),
        title: Nullable(Type.String()),
        total: Type.Integer({ description: 'active documents in the thread' }),
        messages: Type.Array(
          Type.Object({
            doc_id: Type.String(),
            title: Nullable(Type.String()),
            excerpt: Type.String(),
            content_timestamp: Type.String(),
            sender: Nullable(Type.String()),
          }),
          { description: 'The document and its neighbours in content-time order' },
        ),
      }),
      Type.Null(),
    ]),
  },
  { title: 'DocumentViewResponse' },
);
export type DocumentViewResponseT = Static<typeof DocumentViewResponse>;

export const DocumentViewQuery = Type.Object({
  chunk_id: Type.Optional(Type.String({ format: 'uuid', description: 'A cited chunk: its span is returned as `cited`' })),
});
