-- The lexical search leg moved to an in-memory inverted index derived from the catalog
-- (src/search/lexical-index.ts, index-sync.ts, docs/search.md). It is built from the stored
-- tsvectors at start and then follows this change log, so every gateway process sees every write,
-- whoever made it.
--
-- A row names a document whose searchable state may have changed. `xid` is the writing
-- transaction: a reader polls `xid >= pg_snapshot_xmin(<its previous snapshot>)`, which cannot miss
-- a transaction that commits late with a smaller sequence number (a plain `seq > last` could).
CREATE TABLE search_changes (
  seq     bigserial PRIMARY KEY,
  xid     xid8 NOT NULL DEFAULT pg_current_xact_id(),
  doc_id  uuid NOT NULL
);
CREATE INDEX search_changes_xid ON search_changes (xid);

-- Statement-level triggers with transition tables: one INSERT ... SELECT per statement, so the
-- catalog's set-based ingest adds one statement per table per batch, not one per row.
CREATE FUNCTION search_log_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (doc_id) SELECT DISTINCT doc_id FROM new_rows;
  RETURN NULL;
END $$;

CREATE FUNCTION search_log_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (doc_id) SELECT DISTINCT doc_id FROM old_rows;
  RETURN NULL;
END $$;

CREATE FUNCTION search_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (doc_id) SELECT doc_id FROM new_rows UNION SELECT doc_id FROM old_rows;
  RETURN NULL;
END $$;

CREATE FUNCTION search_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (doc_id) VALUES (NEW.doc_id);
  RETURN NULL;
END $$;

CREATE TRIGGER documents_search_insert AFTER INSERT ON documents
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_inserted();
CREATE TRIGGER documents_search_delete AFTER DELETE ON documents
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_deleted();
-- Row level with a WHEN clause: status updates (the embedding worker's) are frequent and change
-- nothing the index holds, so they log nothing.
CREATE TRIGGER documents_search_update AFTER UPDATE ON documents FOR EACH ROW
  WHEN (OLD.is_active_version IS DISTINCT FROM NEW.is_active_version
        OR OLD.title IS DISTINCT FROM NEW.title
        OR OLD.source_type IS DISTINCT FROM NEW.source_type
        OR OLD.has_attachments IS DISTINCT FROM NEW.has_attachments
        OR OLD.content_timestamp IS DISTINCT FROM NEW.content_timestamp
        OR OLD.thread_id IS DISTINCT FROM NEW.thread_id
        OR OLD.people IS DISTINCT FROM NEW.people)
  EXECUTE FUNCTION search_log_row();

CREATE TRIGGER chunk_documents_search_insert AFTER INSERT ON chunk_documents
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_inserted();
CREATE TRIGGER chunk_documents_search_delete AFTER DELETE ON chunk_documents
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_deleted();
CREATE TRIGGER chunk_documents_search_update AFTER UPDATE ON chunk_documents
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_updated();

-- Person merges re-point document_people; the person filter and facet follow them.
CREATE TRIGGER document_people_search_insert AFTER INSERT ON document_people
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_inserted();
CREATE TRIGGER document_people_search_delete AFTER DELETE ON document_people
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_deleted();
CREATE TRIGGER document_people_search_update AFTER UPDATE ON document_people
  REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_updated();

-- What the SQL BM25 leg needed and nothing reads any more: its GIN indexes (their upkeep was most
-- of the search cost on the insert path) and the periodically rebuilt term statistics.
-- The tsvector columns stay: they are what the index is built from.
DROP INDEX chunks_tsv;
DROP INDEX documents_title_tsv;
DROP TABLE search_term_stats;
DROP TABLE search_stats;
