-- BM25 for the lexical search leg (src/search/lexical.ts, docs/search.md).
-- BM25 needs, per passage, its length in tokens and, per term, its document frequency. Lengths are
-- stored columns computed by PostgreSQL at insert (no trigger, no extra statement in the catalog's
-- insert path); document frequencies live in search_term_stats, rebuilt by the search service from
-- ts_stat() when the collection has changed (periodic refresh, not per insert: a per-insert df
-- upsert would make every ingest transaction lock the rows of common terms).

-- Tokens in a tsvector (a lexeme without positions counts once).
CREATE FUNCTION memex_tsv_token_count(t tsvector) RETURNS integer
  LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
  AS $$ SELECT coalesce(sum(coalesce(array_length(positions, 1), 1)), 0)::integer FROM unnest(t) $$;

-- A generated column cannot read another generated column, so the tsvector is computed again here.
ALTER TABLE chunks ADD COLUMN lex_len integer
  GENERATED ALWAYS AS (memex_tsv_token_count(to_tsvector('english', text))) STORED;

-- Titles are a second lexical field (email subjects, note and paper titles): its own tsvector and
-- index so a document whose title alone matches is still a candidate.
ALTER TABLE documents ADD COLUMN title_tsv tsvector
  GENERATED ALWAYS AS (to_tsvector('english', coalesce(title, ''))) STORED;
ALTER TABLE documents ADD COLUMN title_lex_len integer
  GENERATED ALWAYS AS (memex_tsv_token_count(to_tsvector('english', coalesce(title, '')))) STORED;
CREATE INDEX documents_title_tsv ON documents USING gin (title_tsv) WHERE is_active_version;

-- Document frequency per lexeme over active passages (chunk text + document title).
CREATE TABLE search_term_stats (
  term  text PRIMARY KEY,
  df    integer NOT NULL CHECK (df >= 0)
);

-- One row: collection size and average field lengths at the last refresh.
CREATE TABLE search_stats (
  id              boolean PRIMARY KEY DEFAULT true CHECK (id),
  passages        integer NOT NULL,
  avg_text_len    double precision NOT NULL,
  avg_title_len   double precision NOT NULL,
  refreshed_at    timestamptz NOT NULL DEFAULT now()
);
