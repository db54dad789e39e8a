import { Type, type Static } from '@sinclair/typebox';
import { Nullable, SOURCE_TYPES, StringEnum, Uuid } from './common.ts';

/** POST /v1/forget: exactly one target (person, document, source or identifier). */
export const ForgetRequest = Type.Object(
  {
    person_id: Type.Optional(Uuid),
    doc_id: Type.Optional(Uuid),
    source_type: Type.Optional(StringEnum(SOURCE_TYPES)),
    source_account_id: Type.Optional(Nullable(Type.String({ minLength: 1, maxLength: 1024 }))),
    identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 1024 })),
    identifier_type: Type.Optional(Nullable(Type.String({ maxLength: 32 }))),
    dry_run: Type.Optional(Type.Boolean({ default: false, description: 'Count what would be removed; remove nothing' })),
    block: Type.Optional(
      Type.Boolean({
        default: false,
        description:
          'Keep the source or identifier out from now on, and the Message-IDs of erased email: later ingestion of it is skipped and counted as skipped',
      }),
    ),
  },
  {
    additionalProperties: false,
    title: 'ForgetRequest',
    description: 'Exactly one of person_id, doc_id, source_type or identifier',
    examples: [{ identifier: 'offers@junk.example', dry_run: true }],
  },
);
export type ForgetRequestT = Static<typeof ForgetRequest>;

const Count = Type.Integer({ minimum: 0 });

export const ForgetResponse = Type.Object(
  {
    dry_run: Type.Boolean(),
    target: Type.Record(Type.String(), Type.Unknown()),
    removed: Type.Object({
      documents: Count,
      versions: Count,
      chunks: Count,
      vectors: Count,
      files: Count,
      threads: Count,
      people: Count,
      identifiers: Count,
      document_people: Count,
      relationship_edges: Count,
      submissions: Count,
      contact_sync_state: Count,
      documents_unlinked: Type.Integer({ minimum: 0, description: 'Group documents kept, with the person taken out of their people' }),
    }),
    blocked: Type.Integer({ minimum: 0, description: 'Block-list entries added (block: true)' }),
  },
  { title: 'ForgetResponse' },
);
export type ForgetResponseT = Static<typeof ForgetResponse>;
