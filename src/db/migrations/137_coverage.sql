-- Coverage (docs/coverage.md): what each source holds against what memex stored. The collectors run on the
-- person's machine (host agent, CLI) and only they can see their sources, so each run reports its counts here
-- and the gateway keeps them: one row per source with its latest picture, the history of runs, and the items
-- of the latest run that were not stored, with why. Refs are locations (paths, IMAP UIDs, chat.db ROWIDs) and
-- reasons are short error texts: never message content.
CREATE TABLE coverage_sources (
  -- uuid v5 of collector, source_type, account and source_ref: the same source always has the same id.
  source_id              uuid PRIMARY KEY,
  collector              text NOT NULL,
  source_type            text NOT NULL,
  source_account_id      text,
  source_ref             text NOT NULL,
  -- The latest run's picture (NULL until a run reported).
  last_run_id            uuid,
  last_run_finished_at   timestamptz,
  in_source              integer,
  stored_new             integer,
  stored_unchanged       integer,
  stored_updated         integer,
  skipped                jsonb,
  failed                 integer,
  pending                integer,
  missing_unlisted       integer NOT NULL DEFAULT 0,
  cursor                 jsonb,
  -- The latest recount of the source against the last run (NULL until one reported).
  reconcile              jsonb,
  retry_requested_at     timestamptz,
  reconcile_requested_at timestamptz,
  created_at             timestamptz NOT NULL DEFAULT now(),
  updated_at             timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE coverage_runs (
  run_id           uuid PRIMARY KEY,
  source_id        uuid NOT NULL REFERENCES coverage_sources (source_id) ON DELETE CASCADE,
  started_at       timestamptz NOT NULL,
  finished_at      timestamptz NOT NULL,
  status           text NOT NULL,
  error            text,
  counts           jsonb NOT NULL,
  missing_listed   integer NOT NULL,
  missing_unlisted integer NOT NULL,
  received_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX coverage_runs_source ON coverage_runs (source_id, finished_at DESC);

-- The not-stored items of a source's latest run, in the order the collector listed them (ord pages them).
CREATE TABLE coverage_missing (
  source_id   uuid NOT NULL REFERENCES coverage_sources (source_id) ON DELETE CASCADE,
  ord         integer NOT NULL,
  ref         text NOT NULL,
  state       text NOT NULL,
  reason_code text NOT NULL,
  reason      text NOT NULL,
  PRIMARY KEY (source_id, ord)
);
