/** GET /v1/status: what the server is doing (documents, the embedding queue, failures). */
import { Type, type Static } from '@sinclair/typebox';
import { Nullable } from './common.ts';

const PerSecond = Type.Object({
  last_minute: Type.Number({ description: 'Per second, averaged over the last minute' }),
  last_15_minutes: Type.Number({ description: 'Per second, averaged over the last 15 minutes' }),
});

const RecentShare = Type.Object({
  documents: Type.Integer({ description: 'Active documents whose time falls in the period (up to now)' }),
  searchable: Type.Integer({ description: 'Of those, documents whose every chunk is embedded (status indexed)' }),
  share: Nullable(Type.Number({ minimum: 0, maximum: 1, description: 'searchable / documents; null without documents' })),
});

export const StatusResponse = Type.Object(
  {
    generated_at: Type.String({ description: 'When this report was read (UTC ISO)' }),
    documents: Type.Object({
      total: Type.Integer({ description: 'Active document versions' }),
      by_source: Type.Array(
        Type.Object({ source_type: Type.String(), status: Type.String(), count: Type.Integer() }),
        { description: 'Active versions per source_type and status (indexed = searchable by both legs)' },
      ),
    }),
    chunks: Type.Object({
      pending: Type.Integer(),
      processing: Type.Integer(),
      embedded: Type.Integer(),
      failed: Type.Integer(),
      total: Type.Integer(),
    }),
    queue: Type.Object({
      waiting: Type.Integer({ description: 'Chunks pending or processing' }),
      age_seconds: Type.Number({ description: 'Age of the oldest pending chunk; 0 when the queue is empty' }),
      expired_leases: Type.Integer({ description: 'Processing chunks whose worker lease expired (returned to pending by the next sweep)' }),
      eta_seconds: Nullable(Type.Number({ description: 'Time to drain the queue at the last-15-minutes rate; null when idle' })),
    }),
    meaning_searchable: Type.Object(
      { last_30_days: RecentShare, last_365_days: RecentShare },
      { description: 'How much of the recent past search finds by meaning already (the queue is embedded newest first)' },
    ),
    throughput: Type.Object({
      chunks_embedded: PerSecond,
      documents_ingested: PerSecond,
    }),
    models: Type.Array(
      Type.Object({
        model: Type.String(),
        dimensions: Nullable(Type.Integer()),
        state: Type.String({ description: 'active | building | retired' }),
        vectors: Type.Integer(),
      }),
    ),
    failures: Type.Object({
      chunks: Type.Array(Type.Object({ reason: Type.String(), count: Type.Integer() }), {
        description: 'Failed chunks grouped by the embedding error (most frequent first, at most 20 reasons)',
      }),
      documents: Type.Array(
        Type.Object({ source_type: Type.String(), reason: Type.String(), count: Type.Integer() }),
        { description: 'Failed documents or failed extractions by source and reason (most frequent first, at most 20)' },
      ),
    }),
    stored_redaction: Type.Object(
      {
        documents: Type.Integer({ description: 'Active documents whose stored text holds [EMAIL_REDACTED], [PHONE_REDACTED], [ACCOUNT_REDACTED] or [SSN_REDACTED]' }),
        by_source: Type.Array(Type.Object({ source_type: Type.String(), count: Type.Integer() })),
      },
      {
        description:
          'Text stored redacted (mail imported before memex kept the original by default): importing the same mail again replaces each with its original, a new version (docs/email-collectors.md)',
      },
    ),
    disk: Type.Optional(
      Type.Object(
        {
          data_dir_free_bytes: Nullable(Type.Integer({ description: 'Free bytes on the disk holding DATA_DIR' })),
          data_dir_total_bytes: Nullable(Type.Integer()),
          full: Type.Boolean({ description: 'A write met a full disk and there is no room again yet: ingest answers 507 STORAGE.DISK_FULL' }),
          last_full_at: Nullable(Type.String({ description: 'When a write last failed for want of space (since this server started)' })),
          last_full_disk: Nullable(Type.Union([Type.Literal('data_dir'), Type.Literal('database')])),
          message: Nullable(Type.String()),
        },
        { description: 'The disk holding DATA_DIR (src/util/disk-full.ts); absent when the report is read from the database directly' },
      ),
    ),
    worker: Nullable(
      Type.Object(
        {
          running: Type.Boolean(),
          started_at: Type.String(),
          batches: Type.Integer(),
          embedded: Type.Integer({ description: 'Chunks given a vector by the model in this process' }),
          reused: Type.Integer(),
          skipped: Type.Integer({ description: 'Chunks with nothing worth a vector (only quotes of stored messages, a signature, encoded leftovers)' }),
          failed: Type.Integer(),
          released: Type.Integer(),
          last_error: Nullable(Type.String()),
        },
        { description: 'The embedding worker inside this server process; null when it runs elsewhere (role gateway)' },
      ),
    ),
  },
  { title: 'ServerStatus' },
);
export type StatusResponseT = Static<typeof StatusResponse>;

/** GET /v1/readyz, while `memex serve` starts and after (src/gateway/app.ts, early-listener.ts). */
export const Readiness = Type.Object(
  {
    ready: Type.Boolean({ description: 'Searches are answered from a complete index' }),
    phase: Type.Union(
      ['starting', 'database', 'migrations', 'index', 'ready'].map((p) => Type.Literal(p)),
      { description: 'What the server is doing: starting, database (opening it), migrations, index (reading it), ready' },
    ),
    progress: Type.Number({ minimum: 0, maximum: 1, description: 'Share of the phase done (index: documents read of the documents)' }),
    model: Type.Union(
      ['none', 'starting', 'ready', 'failed'].map((p) => Type.Literal(p)),
      { description: "The query embedding model's threads: until ready, searches answer from the words alone" },
    ),
  },
  { title: 'Readiness' },
);
export type ReadinessT = Static<typeof Readiness>;

export const ReindexFailedResponse = Type.Object({
  queued: Type.Integer({ description: 'Failed chunks put back in the embedding queue' }),
});
export type ReindexFailedResponseT = Static<typeof ReindexFailedResponse>;

/** GET /v1/healthz (spec 4.3: an object mapping string to string). */
export const Health = Type.Object(
  {
    status: Type.Union([Type.Literal('ok'), Type.Literal('error')]),
    version: Type.String(),
    database: Type.String({ description: 'pglite or postgres' }),
  },
  { title: 'Health' },
);
