/** People, contact-sync and people-search models (gateway spec 2.5, 2.9, 4.3, 4.4; spec-notes A2.9). */
import { Type, type Static } from '@sinclair/typebox';
import { Identifier, JsonObject, NO_NUL_PATTERN, Nullable, Uuid } from './common.ts';

const Str = (max = 1000) => Type.String({ maxLength: max });
const OptStr = (max = 1000) => Type.Optional(Nullable(Str(max)));

export const ContactValue = Type.Object(
  {
    value: Identifier(500),
    value_raw: OptStr(500),
    label: OptStr(100),
    priority: Type.Optional(Nullable(Type.Integer({ default: 100 }))),
    verified: Type.Optional(Nullable(Type.Boolean({ default: true }))),
  },
  { title: 'ContactValueModel' },
);
export type ContactValueT = Static<typeof ContactValue>;

export const ContactAddress = Type.Object(
  {
    label: OptStr(100),
    street: OptStr(),
    city: OptStr(200),
    region: OptStr(200),
    postal_code: OptStr(50),
    country: OptStr(200),
  },
  { title: 'ContactAddressModel' },
);
export type ContactAddressT = Static<typeof ContactAddress>;

export const ContactAddressSummary = Type.Object(
  { label: Nullable(Type.String()), city: Nullable(Type.String()), region: Nullable(Type.String()), country: Nullable(Type.String()) },
  { title: 'ContactAddressSummary' },
);

/** `value` is accepted as an alias of `url` (spec-notes A2.9). */
export const ContactUrl = Type.Object(
  { label: OptStr(100), url: OptStr(2000), value: OptStr(2000) },
  { title: 'ContactUrlModel' },
);
export type ContactUrlT = Static<typeof ContactUrl>;

export const PersonPayload = Type.Object(
  {
    external_id: Identifier(500),
    display_name: Str(500),
    given_name: OptStr(300),
    family_name: OptStr(300),
    organization: OptStr(500),
    nicknames: Type.Optional(Nullable(Type.Array(Str(200), { maxItems: 50 }))),
    notes: OptStr(20000),
    photo_hash: OptStr(200),
    emails: Type.Optional(Nullable(Type.Array(ContactValue, { maxItems: 100 }))),
    phones: Type.Optional(Nullable(Type.Array(ContactValue, { maxItems: 100 }))),
    addresses: Type.Optional(Nullable(Type.Array(ContactAddress, { maxItems: 50 }))),
    urls: Type.Optional(Nullable(Type.Array(ContactUrl, { maxItems: 50 }))),
    change_token: OptStr(4000),
    version: Type.Optional(Type.Integer({ minimum: 0, default: 1 })),
    deleted: Type.Optional(Type.Boolean({ default: false })),
  },
  { title: 'PersonPayloadModel' },
);
export type PersonPayloadT = Static<typeof PersonPayload>;

export const ContactIngestRequest = Type.Object(
  {
    // source and external_id together key people_source_map: bounded so the index row fits (~2.7 kB).
    source: Type.Optional(Type.String({ minLength: 1, maxLength: 100, pattern: NO_NUL_PATTERN, default: 'host_contacts' })),
    device_id: Identifier(200),
    since_token: OptStr(4000),
    batch_id: Identifier(200),
    people: Type.Array(PersonPayload, { maxItems: 5000 }),
    self_identifier: OptStr(500),
  },
  { title: 'ContactIngestRequest' },
);
export type ContactIngestRequestT = Static<typeof ContactIngestRequest>;

export const ContactIngestResponse = Type.Object(
  {
    accepted: Type.Integer(),
    upserts: Type.Integer(),
    deletes: Type.Integer(),
    conflicts: Type.Integer(),
    skipped: Type.Integer(),
    blocked: Type.Array(
      Type.Object({
        index: Type.Integer({ description: 'Position of the card in people[]' }),
        external_id: Type.String(),
        skipped: Type.String({ description: 'blocked_source or blocked_identifier: a forget with block: true keeps this person out' }),
      }),
      { description: 'Cards the block list kept out (counted in skipped): nothing of them was stored' },
    ),
    since_token_next: Nullable(Type.String()),
  },
  { title: 'ContactIngestResponse' },
);
export type ContactIngestResponseT = Static<typeof ContactIngestResponse>;

export const ContactExportQuery = Type.Object({
  since_token: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  full: Type.Optional(Type.Boolean({ default: false })),
});

export const PeopleSearchQuery = Type.Object({
  q: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 20 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
  sort: Type.Optional(
    Type.Union([Type.Literal('relevance'), Type.Literal('name'), Type.Literal('messages'), Type.Literal('last_contact')], {
      description: 'relevance (the default with q), name (the default without), messages (most first), last_contact (newest first)',
    }),
  ),
  include_self: Type.Optional(
    Type.Boolean({ default: false, description: 'Also list the owner (the self person and SELF_IDENTIFIERS), who is no contact' }),
  ),
});

export const PeopleSearchHit = Type.Object(
  {
    person_id: Type.String(),
    display_name: Type.String(),
    given_name: Nullable(Type.String()),
    family_name: Nullable(Type.String()),
    organization: Nullable(Type.String()),
    nicknames: Type.Array(Type.String()),
    emails: Type.Array(Type.String()),
    phones: Type.Array(Type.String()),
    addresses: Type.Array(ContactAddressSummary),
    message_count: Type.Integer({ description: 'Messages (email, chat, SMS) naming the person, merged ids included' }),
    last_contact_at: Nullable(Type.String({ description: 'Date of the newest of those messages' })),
  },
  { title: 'PeopleSearchHit' },
);
export type PeopleSearchHitT = Static<typeof PeopleSearchHit>;

export const PeopleSearchResponse = Type.Object(
  {
    query: Nullable(Type.String()),
    limit: Type.Integer(),
    offset: Type.Integer(),
    total: Type.Integer(),
    results: Type.Array(PeopleSearchHit),
  },
  { title: 'PeopleSearchResponse' },
);
export type PeopleSearchResponseT = Static<typeof PeopleSearchResponse>;

export const PersonIdentifier = Type.Object({
  kind: Type.String(),
  value_raw: Type.String(),
  value_canonical: Type.String(),
  label: Nullable(Type.String()),
  priority: Type.Integer(),
  verified: Type.Boolean(),
});

/** A person as GET /v1/people/{id} and the export return it. */
export const PersonRecord = Type.Object(
  {
    person_id: Type.String(),
    display_name: Type.String(),
    given_name: Nullable(Type.String()),
    family_name: Nullable(Type.String()),
    organization: Nullable(Type.String()),
    nicknames: Type.Array(Type.String()),
    notes: Nullable(Type.String()),
    photo_hash: Nullable(Type.String()),
    source: Type.String(),
    version: Type.Integer(),
    deleted: Type.Boolean(),
    merged_into: Nullable(Type.String()),
    created_at: Type.String(),
    updated_at: Type.String(),
    identifiers: Type.Array(PersonIdentifier),
    emails: Type.Array(Type.String()),
    phones: Type.Array(Type.String()),
    addresses: Type.Array(ContactAddress),
    urls: Type.Array(Type.Object({ label: Type.String(), url: Type.String() })),
    sources: Type.Array(Type.Object({ source: Type.String(), external_id: Type.String(), deleted: Type.Boolean() })),
  },
  { title: 'PersonRecord' },
);
export type PersonRecordT = Static<typeof PersonRecord>;

export const PersonDetailResponse = Type.Intersect(
  [PersonRecord, Type.Object({ requested_id: Type.String(), merged_from: Type.Array(Type.String()) })],
  { title: 'PersonDetailResponse' },
);
export type PersonDetailResponseT = Static<typeof PersonDetailResponse>;

export const MergeRecord = Type.Object({
  merge_id: Type.String(),
  target_person_id: Type.String(),
  source_person_id: Type.String(),
  reason: Type.String(),
  details: JsonObject,
  created_at: Type.String(),
});

export const MergeListResponse = Type.Object(
  { merges: Type.Array(MergeRecord), total: Type.Integer(), limit: Type.Integer(), offset: Type.Integer() },
  { title: 'PersonMergeList' },
);
export type MergeListResponseT = Static<typeof MergeListResponse>;

/** GET /v1/people/merges. */
export const MergeListQuery = Type.Object({
  person_id: Type.Optional(Uuid),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 50 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, default: 0 })),
});

/** GET /v1/people/merge-candidates: people with one name under several addresses (issue 40). */
export const MergeCandidatesQuery = Type.Object({
  person_id: Type.Optional(Type.String({ format: 'uuid', description: 'Only the group this person is in (the owner: their other addresses)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
});
export const MergeCandidatesResponse = Type.Object(
  {
    groups: Type.Array(
      Type.Object({
        display_name: Type.String(),
        people: Type.Array(
          Type.Object({
            person_id: Type.String(),
            display_name: Type.String(),
            emails: Type.Array(Type.String()),
            phones: Type.Array(Type.String()),
            message_count: Type.Integer(),
          }),
        ),
      }),
    ),
  },
  { title: 'MergeCandidates' },
);
export type MergeCandidatesResponseT = Static<typeof MergeCandidatesResponse>;

/** POST /v1/people/merge: the owner says two persons are one. */
export const MergeRequest = Type.Object(
  {
    target: Type.String({ minLength: 1, maxLength: 320, description: 'The person that stays: an id, or an address, phone or handle it owns' }),
    source: Type.String({ minLength: 1, maxLength: 320, description: 'The person merged into it (an id or an identifier)' }),
  },
  { additionalProperties: false },
);

/** GET /v1/people/{person_id}. */
export const PersonParams = Type.Object({ person_id: Uuid });

/** GET /catalog/contacts/change-token: the token last stored for (source, device_id). */
export const ChangeTokenQuery = Type.Object({
  source: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  device_id: Type.String({ minLength: 1, maxLength: 200 }),
});
export const ChangeTokenResponse = Type.Object({
  source: Type.String(),
  device_id: Type.String(),
  change_token: Nullable(Type.String()),
  updated_at: Nullable(Type.String()),
});
