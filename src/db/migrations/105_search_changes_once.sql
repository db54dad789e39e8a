-- One change-log row per document per transaction is enough: a transaction's rows become visible
-- together at its commit, and the index reloads the document's whole state for any row naming it.
-- An ingested document was logged three times (its documents, chunk_documents and document_people
-- inserts); now the triggers skip a document this transaction has already logged. The (xid, doc_id)
-- index answers that and still serves the readers' `xid >= horizon` and the cleanup's `xid < horizon`.
CREATE INDEX search_changes_xid_doc ON search_changes (xid, doc_id);
DROP INDEX search_changes_xid;

CREATE OR REPLACE FUNCTION search_log_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT DISTINCT n.doc_id FROM new_rows n
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = n.doc_id);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_log_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT DISTINCT o.doc_id FROM old_rows o
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = o.doc_id);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT c.doc_id FROM (SELECT doc_id FROM new_rows UNION SELECT doc_id FROM old_rows) c
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = c.doc_id);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT NEW.doc_id
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = pg_current_xact_id() AND s.doc_id = NEW.doc_id);
  RETURN NULL;
END $$;
