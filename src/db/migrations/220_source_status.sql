-- Freshness of the sources the host agent keeps up to date by itself (issue 41, docs/sources.md): the agent
-- reports each source's state (watching, polling, backing off, paused, failed …), when it last synced, the
-- newest item at the source and stored, its next run and its last error in words (PUT /v1/sources/status);
-- GET /v1/coverage, `memex status` and /metrics show them. `paused` is what a person asked for (the agent reads
-- it in the answer to its report): kept here, because the gateway cannot reach the agent.
CREATE TABLE source_status (
  source_id        uuid PRIMARY KEY REFERENCES coverage_sources (source_id) ON DELETE CASCADE,
  agent            text,
  label            text,
  state            text NOT NULL,
  mode             text,
  last_success_at  timestamptz,
  newest_at_source timestamptz,
  newest_stored    timestamptz,
  next_run_at      timestamptz,
  last_error       text,
  detail           jsonb,
  paused           boolean NOT NULL DEFAULT false,
  paused_at        timestamptz,
  reported_at      timestamptz
);
