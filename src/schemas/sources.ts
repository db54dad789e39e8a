/**
 * Sources the host agent runs by itself (docs/sources.md): their freshness as the agent reports it
 * (PUT /v1/sources/status), pause and resume (POST /v1/sources/{source_id}/pause|resume), and what changed at
 * the source for stored documents (POST /v1/documents/source-state: folder, flags, deleted_at_source).
 */
import { Type, type Static } from '@sinclair/typebox';
import { Identifier, NO_NUL_PATTERN, Nullable, SOURCE_TYPES, StringEnum, Timestamp } from './common.ts';
import { COLLECTORS, MAX_REASON_CHARS, MAX_REF_CHARS } from './coverage.ts';
import { SOURCE_STATES } from './freshness.ts';

export { FreshnessFields, SOURCE_STATES } from './freshness.ts';


const Scalar = Type.Union([Type.String({ maxLength: MAX_REASON_CHARS, pattern: NO_NUL_PATTERN }), Type.Number(), Type.Boolean(), Type.Null()]);

export const SourceStatusReport = Type.Object(
  {
    collector: StringEnum(COLLECTORS),
    source_type: StringEnum(SOURCE_TYPES),
    source_account_id: Nullable(Identifier(500)),
    source_ref: Identifier(MAX_REF_CHARS),
    label: Type.String({ maxLength: 200, pattern: NO_NUL_PATTERN }),
    state: StringEnum(SOURCE_STATES),
    mode: Type.String({ maxLength: 200, pattern: NO_NUL_PATTERN }),
    last_success_at: Nullable(Timestamp),
    newest_at_source: Nullable(Timestamp),
    newest_stored: Nullable(Timestamp),
    next_run_at: Nullable(Timestamp),
    last_error: Nullable(Type.String({ maxLength: MAX_REASON_CHARS, pattern: NO_NUL_PATTERN })),
    detail: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Scalar, { maxProperties: 30 })),
  },
  { additionalProperties: false, title: 'SourceStatusReport' },
);
export type SourceStatusReportT = Static<typeof SourceStatusReport>;

export const SourceStatusBatch = Type.Object(
  {
    agent: Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL_PATTERN, description: 'The reporting agent (its host name)' }),
    sources: Type.Array(SourceStatusReport, { maxItems: 1000 }),
  },
  { additionalProperties: false, title: 'SourceStatusBatch' },
);

export const SourceStatusAnswer = Type.Object(
  { sources: Type.Array(Type.Object({ source_id: Type.String(), paused: Type.Boolean() })) },
  { title: 'SourceStatusAnswer', description: 'Which of the reported sources a person paused: the agent stops those until resumed' },
);

export const PauseAnswer = Type.Object(
  { source_id: Type.String(), paused: Type.Boolean(), note: Type.String() },
  { title: 'SourcePauseAnswer' },
);

export const SourceStateUpdate = Type.Object(
  {
    source_type: StringEnum(SOURCE_TYPES),
    source_id: Identifier(1000, { description: "The document's external_id (the source_id it was ingested with when it has none)" }),
    source_account_id: Type.Optional(Identifier(500, { description: 'Only the document of this account (two calendars may hold the same UID)' })),
    folder: Type.Optional(Type.String({ minLength: 1, maxLength: 500, pattern: NO_NUL_PATTERN })),
    flags: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 64, pattern: NO_NUL_PATTERN }), { maxItems: 20 })),
    labels: Type.Optional(
      Type.Array(Type.String({ minLength: 1, maxLength: 200, pattern: NO_NUL_PATTERN }), {
        maxItems: 100,
        description: "The message's labels at its source (Gmail's X-Gmail-Labels): tags with origin source; a later list replaces it",
      }),
    ),
    deleted_at_source: Type.Optional(Nullable(Timestamp)),
    delete: Type.Optional(Type.Boolean({ description: 'With deleted_at_source: delete the document too (mirror_deletions)' })),
  },
  { additionalProperties: false },
);
export type SourceStateUpdateT = Static<typeof SourceStateUpdate>;

/** The document metadata keys a source-state update writes (src/coverage/freshness.ts); new versions keep them. */
export const SOURCE_STATE_KEYS = ['folder', 'flags', 'deleted_at_source', 'source_labels'] as const;

export const SourceStateRequest = Type.Object(
  { updates: Type.Array(SourceStateUpdate, { minItems: 1, maxItems: 1000 }) },
  { additionalProperties: false, title: 'SourceStateRequest' },
);
export const SourceStateAnswer = Type.Object(
  { updated: Type.Integer(), deleted: Type.Integer(), not_found: Type.Integer() },
  { title: 'SourceStateAnswer' },
);
