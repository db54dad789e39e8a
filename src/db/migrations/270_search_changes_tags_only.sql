-- A tag change (document_tags, thread_tags) changes only a document's tags in the lexical index, not its words,
-- people or passages. The index reloaded the whole document for it (every passage's tsvector read and parsed
-- again): a rule tagging 100,000 documents of 1,000,000 took minutes to reach tag: search (issue 44). A
-- change-log row now says when it is only about tags, and the index then reads just the document's tags
-- (src/search/index-sync.ts).
--
-- Once per document per transaction still holds, with one exception: a content change after a tag change in
-- the same transaction is logged as well (the content triggers skip only a full row), so a document whose
-- rows in a poll are all tags_only had nothing but its tags changed.
ALTER TABLE search_changes ADD COLUMN tags_only boolean NOT NULL DEFAULT false;

CREATE OR REPLACE FUNCTION search_log_inserted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT DISTINCT n.doc_id FROM new_rows n
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = n.doc_id AND NOT s.tags_only);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_log_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT DISTINCT o.doc_id FROM old_rows o
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = o.doc_id AND NOT s.tags_only);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_log_updated() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT c.doc_id FROM (SELECT doc_id FROM new_rows UNION SELECT doc_id FROM old_rows) c
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = c.doc_id AND NOT s.tags_only);
  RETURN NULL;
END $$;

CREATE OR REPLACE FUNCTION search_log_row() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (doc_id)
  SELECT NEW.doc_id
   WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = pg_current_xact_id() AND s.doc_id = NEW.doc_id AND NOT s.tags_only);
  RETURN NULL;
END $$;

-- document_tags: a tags_only row, unless this transaction logged the document already (either kind).
CREATE FUNCTION search_log_document_tags() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO search_changes (doc_id, tags_only)
    SELECT DISTINCT n.doc_id, true FROM new_rows n
     WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = n.doc_id);
  ELSIF TG_OP = 'DELETE' THEN
    INSERT INTO search_changes (doc_id, tags_only)
    SELECT DISTINCT o.doc_id, true FROM old_rows o
     WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = o.doc_id);
  ELSE
    INSERT INTO search_changes (doc_id, tags_only)
    SELECT c.doc_id, true FROM (SELECT doc_id FROM new_rows UNION SELECT doc_id FROM old_rows) c
     WHERE NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = c.doc_id);
  END IF;
  RETURN NULL;
END $$;
DROP TRIGGER document_tags_search_insert ON document_tags;
DROP TRIGGER document_tags_search_delete ON document_tags;
DROP TRIGGER document_tags_search_update ON document_tags;
CREATE TRIGGER document_tags_search_insert AFTER INSERT ON document_tags
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_document_tags();
CREATE TRIGGER document_tags_search_delete AFTER DELETE ON document_tags
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_document_tags();
CREATE TRIGGER document_tags_search_update AFTER UPDATE ON document_tags
  REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_document_tags();

-- A thread's tag changes the tags of every active message of the thread, nothing else.
CREATE OR REPLACE FUNCTION search_log_thread_tags() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO search_changes (doc_id, tags_only)
    SELECT DISTINCT d.doc_id, true FROM documents d
     WHERE d.is_active_version AND d.thread_id IN (SELECT thread_id FROM new_rows)
       AND NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = d.doc_id);
  ELSE
    INSERT INTO search_changes (doc_id, tags_only)
    SELECT DISTINCT d.doc_id, true FROM documents d
     WHERE d.is_active_version AND d.thread_id IN (SELECT thread_id FROM old_rows)
       AND NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = d.doc_id);
  END IF;
  RETURN NULL;
END $$;
