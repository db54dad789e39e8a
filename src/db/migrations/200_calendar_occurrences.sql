-- Calendar occurrences (issue 42, item 1): one row per occurrence of a recurring calendar_event series inside the
-- importer's window (two years back to one year ahead by default), and one for an event that lasts longer than a
-- day, so the date filters (`on:`, `before:`, `after:`, start_date/end_date) and the timeline find an event on
-- every day it happens, not only on its first start (content_timestamp). Rows belong to one document version:
-- a new version brings its own rows and the old version's go with it (or with the document, ON DELETE CASCADE);
-- the readers join active versions only. All-day occurrences start at 00:00 UTC of their date, as
-- content_timestamp does for an all-day event.
CREATE TABLE calendar_occurrences (
  doc_id uuid NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
  starts_at timestamptz NOT NULL,
  ends_at timestamptz NOT NULL,
  PRIMARY KEY (doc_id, starts_at)
);
CREATE INDEX calendar_occurrences_starts ON calendar_occurrences (starts_at, ends_at);
