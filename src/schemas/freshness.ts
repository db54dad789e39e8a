/** The freshness fields of a source (issue 41, docs/sources.md); apart so coverage.ts and sources.ts both use them. */
import { Type } from '@sinclair/typebox';
import { Nullable, StringEnum } from './common.ts';

export const SOURCE_STATES = ['starting', 'watching', 'polling', 'scheduled', 'running', 'backing_off', 'paused', 'failed', 'stopped'] as const;

/** The freshness fields each GET /v1/coverage source entry gains (null for sources no agent runs). */
export const FreshnessFields = {
  state: Nullable(StringEnum(SOURCE_STATES, { description: 'watching, polling, scheduled, running, backing_off, paused, failed …; null: no agent runs this source' })),
  mode: Nullable(Type.String({ description: 'How it runs: "IDLE", "polling every 5m", "every 15m", "cron 0 * * * *"' })),
  paused: Type.Boolean({ description: 'A person paused the source (POST /v1/sources/{source_id}/pause)' }),
  last_success_at: Nullable(Type.String({ description: 'When the source last synced without error (ISO time)' })),
  newest_at_source: Nullable(Type.String({ description: 'Date of the newest item at the source' })),
  newest_stored: Nullable(Type.String({ description: 'Date of the newest item of the source memex stored' })),
  lag_seconds: Nullable(Type.Number({ description: 'newest_at_source minus newest_stored, in seconds (0 when up to date)' })),
  next_run_at: Nullable(Type.String({ description: 'When it runs or tries again next; null while watching' })),
  last_error: Nullable(Type.String({ description: 'The last error in words; null after a success' })),
  status_reported_at: Nullable(Type.String({ description: 'When the agent last reported this status' })),
  agent: Nullable(Type.String()),
};

