/**
 * Coverage (docs/coverage.md): what each source holds against what memex stored, with every difference
 * explained. Collectors and importers report each run's counts (POST /v1/coverage/runs) and each recount
 * of their source (POST /v1/coverage/reconcile); GET /v1/coverage answers per source.
 */
import { Type, type Static } from '@sinclair/typebox';
import { Identifier, NO_NUL_PATTERN, Nullable, SOURCE_TYPES, StringEnum, Timestamp, Uuid } from './common.ts';
import { FreshnessFields } from './freshness.ts';

/** Who reads a source: the host agent's collectors and the CLI's importers. */
export const COLLECTORS = ['email_local', 'email_imap', 'chatapp', 'fswatch', 'import_mail', 'ingest', 'contacts', 'import_notes', 'import_browser', 'import_chat', 'calendar', 'reminders'] as const;
export type Collector = (typeof COLLECTORS)[number];

/**
 * Why an item of a source was not stored although nothing failed. The first five are deliberate (a copy of a
 * stored item, the block list, nothing to store, a tapback folded into its message, outside what the collector
 * was told to read); `unsupported` and `too_large` are losses the person may want to act on, so those items are
 * listed in `missing` like failed and pending ones.
 */
export const SKIP_REASONS = ['duplicate', 'blocked', 'empty', 'folded', 'excluded', 'unsupported', 'too_large'] as const;
export type SkipReason = (typeof SKIP_REASONS)[number];
/** Skip reasons whose items are listed in `missing`. */
export const MISSING_SKIP_REASONS: readonly SkipReason[] = ['unsupported', 'too_large'];

export const MISSING_STATES = ['skipped', 'failed', 'pending'] as const;
export type MissingState = (typeof MISSING_STATES)[number];

/** Not-stored items listed per report; the others are counted in `missing_unlisted`. */
export const MAX_MISSING_PER_REPORT = 5000;
export const MAX_REF_CHARS = 1000;
export const MAX_REASON_CHARS = 500;
/** A collector's cursor (where it stands in the source) is small: JSON of at most this many bytes. */
export const MAX_CURSOR_BYTES = 16 * 1024;

const Count = Type.Integer({ minimum: 0, maximum: 1_000_000_000 });
const Scalar = Type.Union([Type.String({ maxLength: MAX_REASON_CHARS, pattern: NO_NUL_PATTERN }), Type.Number(), Type.Boolean(), Type.Null()]);

const SourceIdentity = {
  collector: StringEnum(COLLECTORS, { description: 'The collector or importer that reads the source' }),
  source_type: StringEnum(SOURCE_TYPES, { description: 'source_type of the documents it stores' }),
  source_account_id: Nullable(Identifier(500)),
  source_ref: Identifier(MAX_REF_CHARS, {
    description: 'Which source: a folder or file path, an IMAP account folder, a chat.db path, a watched folder',
  }),
};

export const MissingItem = Type.Object(
  {
    ref: Identifier(MAX_REF_CHARS, { description: 'The item in its source: a path, `INBOX;UIDVALIDITY=…;UID=…`, a chat.db ROWID' }),
    state: StringEnum(MISSING_STATES),
    reason_code: Type.String({ minLength: 1, maxLength: 64, pattern: '^[a-z0-9_]+$' }),
    reason: Type.String({ maxLength: MAX_REASON_CHARS, pattern: NO_NUL_PATTERN }),
  },
  { additionalProperties: false, title: 'CoverageMissingItem' },
);
export type MissingItemT = Static<typeof MissingItem>;

export const StoredCounts = Type.Object(
  {
    new: Count,
    unchanged: Count,
    updated: Count,
  },
  { additionalProperties: false, description: 'Stored items: new in this run, already stored and unchanged, stored again as a new version' },
);

export const SkippedCounts = Type.Object(
  {
    duplicate: Type.Optional(Count),
    blocked: Type.Optional(Count),
    empty: Type.Optional(Count),
    folded: Type.Optional(Count),
    excluded: Type.Optional(Count),
    unsupported: Type.Optional(Count),
    too_large: Type.Optional(Count),
  } satisfies Record<SkipReason, unknown>,
  { additionalProperties: false, description: 'Skipped items by reason' },
);
export type SkippedCountsT = Partial<Record<SkipReason, number>>;

export const RunCounts = Type.Object(
  {
    in_source: Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'Items in the source when the run read it' }),
    stored: StoredCounts,
    skipped: SkippedCounts,
    failed: Count,
    pending: Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'Seen but not yet stored: the next run tries again' }),
  },
  { additionalProperties: false, description: 'in_source = stored.new + stored.unchanged + stored.updated + all skipped + failed + pending' },
);
export type RunCountsT = Static<typeof RunCounts>;

export const RUN_STATUSES = ['completed', 'partial', 'failed'] as const;

export const CoverageRunReport = Type.Object(
  {
    run_id: Uuid,
    ...SourceIdentity,
    started_at: Timestamp,
    finished_at: Timestamp,
    status: StringEnum(RUN_STATUSES, { description: 'partial: some items failed or wait; failed: the run stopped early' }),
    error: Type.Optional(Nullable(Type.String({ maxLength: MAX_REASON_CHARS, pattern: NO_NUL_PATTERN }))),
    counts: RunCounts,
    missing: Type.Array(MissingItem, {
      maxItems: MAX_MISSING_PER_REPORT,
      description: 'Items not stored that someone may want to act on: failed, pending, skipped as unsupported or too large',
    }),
    missing_unlisted: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000_000, description: 'Such items beyond the list' })),
    cursor: Type.Optional(Nullable(Type.Record(Type.String({ maxLength: 100 }), Scalar, { description: 'Where the collector stands in the source' }))),
  },
  {
    additionalProperties: false,
    title: 'CoverageRunReport',
    examples: [
      {
        run_id: '0b6f3c1e-3f5a-4d0e-9a51-2f1c7d9e8a10',
        collector: 'import_mail',
        source_type: 'email_local',
        source_account_id: null,
        source_ref: '/home/jane/Mail/archive',
        started_at: '2026-03-01T10:00:00Z',
        finished_at: '2026-03-01T10:02:30Z',
        status: 'partial',
        counts: { in_source: 120, stored: { new: 100, unchanged: 15, updated: 2 }, skipped: { duplicate: 1 }, failed: 1, pending: 1 },
        missing: [
          { ref: 'cur/1700000001.M1.host:2,S', state: 'failed', reason_code: 'unreadable', reason: 'the file could not be read' },
          { ref: 'cur/1700000002.M2.host:2,S', state: 'pending', reason_code: 'retry', reason: 'the server was busy; the next run tries again' },
        ],
      },
    ],
  },
);
export type CoverageRunReportT = Static<typeof CoverageRunReport>;

export const CoverageRunAccepted = Type.Object(
  {
    source_id: Uuid,
    run_id: Uuid,
    applied: Type.Boolean({ description: 'false when a later run of this source was recorded first (kept in the history only) or the run was already recorded' }),
  },
  { title: 'CoverageRunAccepted' },
);

export const ReconcileReport = Type.Object(
  {
    ...SourceIdentity,
    counted_at: Timestamp,
    in_source: Count,
    recorded_in_source: Type.Optional(Nullable(Count)),
    added: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: 'Items in the source the last run did not see' }))),
    removed: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: 'Items the last run saw that are gone from the source' }))),
    changed: Type.Optional(Nullable(Type.Integer({ minimum: 0, description: 'Items changed in the source since the last run' }))),
    facts: Type.Optional(Type.Record(Type.String({ maxLength: 100 }), Scalar, { description: 'What the recount found, by kind' })),
    notes: Type.Optional(Type.Array(Type.String({ maxLength: MAX_REASON_CHARS, pattern: NO_NUL_PATTERN }), { maxItems: 20 })),
  },
  { additionalProperties: false, title: 'CoverageReconcileReport' },
);
export type ReconcileReportT = Static<typeof ReconcileReport>;

export const ReconcileResult = Type.Object(
  {
    counted_at: Type.String(),
    in_source: Count,
    recorded_in_source: Nullable(Count),
    drift: Type.Integer({ description: 'in_source now minus in_source at the last run' }),
    added: Nullable(Type.Integer()),
    removed: Nullable(Type.Integer()),
    changed: Nullable(Type.Integer()),
    in_sync: Type.Boolean({ description: 'Nothing added, removed or changed since the last run' }),
    facts: Type.Record(Type.String(), Type.Unknown()),
    notes: Type.Array(Type.String()),
  },
  { title: 'CoverageReconcile' },
);
export type ReconcileResultT = Static<typeof ReconcileResult>;

export const LastRun = Type.Object(
  {
    run_id: Type.String(),
    started_at: Type.String(),
    finished_at: Type.String(),
    status: Type.String(),
    error: Nullable(Type.String()),
    counts: RunCounts,
  },
  { title: 'CoverageRun' },
);

export const SourceCoverage = Type.Object(
  {
    source_id: Type.String(),
    collector: Type.String(),
    source_type: Type.String(),
    source_account_id: Nullable(Type.String()),
    source_ref: Type.String(),
    ...FreshnessFields,
    in_source: Nullable(Type.Integer({ description: 'null until a run or a recount reported the source' })),
    stored: Nullable(Type.Integer()),
    skipped: Nullable(Type.Integer()),
    failed: Nullable(Type.Integer()),
    pending: Nullable(Type.Integer()),
    stored_detail: Nullable(StoredCounts),
    skipped_by_reason: Nullable(Type.Record(Type.String(), Type.Integer())),
    missing: Type.Array(MissingItem),
    missing_total: Type.Integer({ description: 'Items listed as missing, all pages' }),
    missing_unlisted: Type.Integer({ description: 'Missing items the collector counted but did not list' }),
    missing_next: Nullable(Type.String({ description: 'Cursor for GET /v1/coverage/sources/{source_id}/missing?after=' })),
    last_run: Nullable(LastRun),
    cursor: Nullable(Type.Record(Type.String(), Type.Unknown())),
    reconcile: Nullable(ReconcileResult),
    retry_requested_at: Nullable(Type.String({ description: 'A retry of the failed items asked for and not yet done by a run' })),
    reconcile_requested_at: Nullable(Type.String()),
  },
  { title: 'SourceCoverage' },
);
export type SourceCoverageT = Static<typeof SourceCoverage>;

export const CoverageQuery = Type.Object({
  source: Type.Optional(
    Type.String({ minLength: 1, maxLength: MAX_REF_CHARS, description: 'A source_id, collector, source_type, or a part of source_ref' }),
  ),
  missing_limit: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, default: 20, description: 'Missing items listed per source' })),
});

export const CoverageResponse = Type.Object({ sources: Type.Array(SourceCoverage) }, { title: 'CoverageResponse' });
export type CoverageResponseT = Static<typeof CoverageResponse>;

export const SourceIdParams = Type.Object({ source_id: Uuid });

/** POST /v1/coverage/reconcile's answer: the source the recount was recorded for, and what it found. */
export const ReconcileAccepted = Type.Object({ source_id: Type.String(), reconcile: ReconcileResult });

export const MissingQuery = Type.Object({
  after: Type.Optional(Type.String({ maxLength: 20, pattern: '^[0-9]+$', description: 'missing_next of the previous page' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 100 })),
});

export const MissingPage = Type.Object(
  { source_id: Type.String(), total: Type.Integer(), items: Type.Array(MissingItem), next: Nullable(Type.String()) },
  { title: 'CoverageMissingPage' },
);
export type MissingPageT = Static<typeof MissingPage>;

export const RunsQuery = Type.Object({ limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 20 })) });
export const RunsPage = Type.Object({ source_id: Type.String(), runs: Type.Array(LastRun) }, { title: 'CoverageRuns' });

export const RequestAccepted = Type.Object(
  { source_id: Type.String(), requested_at: Type.String(), note: Type.String() },
  { title: 'CoverageRequestAccepted' },
);
