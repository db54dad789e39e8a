/** Relationship ranking (spec 4.5) and the self-person admin routes: requests and answers. */
import { Type, type Static } from '@sinclair/typebox';
import { JsonObject, Nullable } from './common.ts';

/** The longest window of GET /v1/crm/relationships/top, in days, and its default (spec 4.5). */
export const MAX_WINDOW_DAYS = 3650;
export const DEFAULT_WINDOW = '90d';

export const TopQuery = Type.Object(
  {
    self_person_id: Type.Optional(Type.String({ format: 'uuid', description: 'Defaults to the stored or detected self person' })),
    window: Type.Optional(
      Type.String({
        maxLength: 16,
        default: DEFAULT_WINDOW,
        description: `<days>d, 1..${MAX_WINDOW_DAYS} days, or all (all time); edges last contacted inside it`,
      }),
    ),
    as_of: Type.Optional(
      Type.String({
        maxLength: 40,
        description:
          'Count the window back from this moment instead of now: `latest` (the newest message in the store) or an ISO 8601 date or date-time. The ranking is computed as it stood then (not stored)',
      }),
    ),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
    offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000, default: 0 })),
    person_id: Type.Optional(Type.String({ format: 'uuid', description: 'Only the edge to this person (its surviving id)' })),
    gone_quiet: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Only people the self person wrote to at least 5 times and not for 60 days or more, most written to first',
      }),
    ),
    include_automated: Type.Optional(
      Type.Boolean({
        default: false,
        description: 'Also rank automated senders (features.automated: machine headers, or one-way traffic never answered)',
      }),
    ),
  },
);

export const Relationship = Type.Object({
  self_person_id: Type.String({ description: 'Whose edge: the self person (any self when none is known)' }),
  person_id: Type.String(),
  score: Type.Number(),
  last_contact_at: Nullable(Type.String()),
  display_name: Type.String(),
  organization: Nullable(Type.String()),
  emails: Type.Array(Type.String()),
  phones: Type.Array(Type.String()),
  features: JsonObject,
  decay_bucket: Type.Integer(),
  updated_at: Type.String(),
});
export type RelationshipT = Static<typeof Relationship>;

export const TopResponse = Type.Object({
  self_person_id: Nullable(Type.String({ description: 'null: no self person is known; the edges of every self are ranked' })),
  relationships: Type.Array(Relationship),
  window: Type.String(),
  window_start: Nullable(Type.String({ description: 'null: all time' })),
  window_end: Type.String(),
  limit: Type.Integer(),
  offset: Type.Integer(),
  total_count: Type.Integer(),
});
export type TopResponseT = Static<typeof TopResponse>;

export const SelfState = Type.Object({
  self_person_id: Nullable(Type.String()),
  source: Nullable(Type.String()),
  display_name: Nullable(Type.String()),
  override: Nullable(
    Type.Object({
      stored_person_id: Type.String(),
      resolved_person_id: Nullable(Type.String()),
      source: Type.String(),
      updated_at: Nullable(Type.String()),
    }),
  ),
  detected: Nullable(Type.Object({ person_id: Type.String(), source: Type.String(), evidence: JsonObject })),
  warning: Nullable(Type.String()),
});

export const SelfPut = Type.Object(
  {
    person_id: Type.Optional(Type.String({ format: 'uuid' })),
    identifier: Type.Optional(Type.String({ minLength: 1, maxLength: 320, description: 'email, phone or chat handle' })),
    identifier_type: Type.Optional(Type.String({ maxLength: 32, description: 'email | phone | chatapp | social' })),
  },
  { additionalProperties: false, description: 'Exactly one of person_id or identifier', examples: [{ identifier: 'jane.doe@example.org', identifier_type: 'email' }] },
);

export const RecomputeResponse = Type.Object({
  self_person_id: Nullable(Type.String()),
  self_source: Nullable(Type.String()),
  mode: Type.String(),
  edges_upserted: Type.Integer(),
  edges_removed: Type.Integer(),
  duration_ms: Type.Integer(),
});
