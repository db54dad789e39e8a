-- BM25 for the lexical search leg (src/search/lexical.ts, docs/search.md).
-- BM25 needs, per passage, its length and, per term, its document frequency. Lengths are read from
-- the stored tsvectors (length() = distinct lexemes, no extra column, nothing added to the chunk
-- insert path). Document frequencies live in search_term_stats, rebuilt by the search service from
-- ts_stat() when the collection has changed (periodic refresh, not per insert: a per-insert df
-- upsert would make every ingest transaction lock the rows of common terms).

-- Titles are a second lexical field (email subjects, note and paper titles): their own tsvector and
-- index so a document whose title alone matches is still a candidate.
ALTER TABLE documents ADD COLUMN title_tsv tsvector
  GENERATED ALWAYS AS (to_tsvector('english', coalesce(title, ''))) STORED;
CREATE INDEX documents_title_tsv ON documents USING gin (title_tsv) WHERE is_active_version;

-- Document frequency per lexeme over active passages (chunk text + document title).
CREATE TABLE search_term_stats (
  term  text PRIMARY KEY,
  df    integer NOT NULL CHECK (df >= 0)
);

-- One row: collection size and average field lengths (distinct lexemes) at the last refresh.
CREATE TABLE search_stats (
  id              boolean PRIMARY KEY DEFAULT true CHECK (id),
  passages        integer NOT NULL,
  avg_text_len    double precision NOT NULL,
  avg_title_len   double precision NOT NULL,
  refreshed_at    timestamptz NOT NULL DEFAULT now()
);
