import { Type, type Static } from '@sinclair/typebox';
import { JsonObject, SOURCE_TYPES, StringEnum } from './common.ts';

export const DocumentListQuery = Type.Object({
  source_type: Type.Optional(StringEnum(SOURCE_TYPES)),
  has_attachments: Type.Optional(Type.Boolean()),
  thread_id: Type.Optional(Type.String({ format: 'uuid' })),
  person_id: Type.Optional(Type.String({ format: 'uuid', description: 'Documents linked to this person (merges followed)' })),
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
});

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

export const DocIdParams = Type.Object({ doc_id: Type.String({ format: 'uuid' }) });
