-- Organize (issue 44): tags on documents and conversations, tagging rules, saved searches (docs/organize.md).
--
-- A tag is its name, normalised by src/organize/tag-names.ts (NFC, lower case, `/` for hierarchy, bounded
-- length): no table of its own, a tag exists while something carries it or a rule gives it. `origin` says
-- who gave it: 'manual' (the API, the CLI, the web UI, MCP), 'import' (upload tags, metadata.tags of an
-- importer, mail flags) or 'rule:<rule_id>' (a rule; removing the rule may remove the tags it gave).
-- A document's tags move to its new version when one is ingested (src/catalog/ingest.ts) and go with it when
-- it is forgotten (ON DELETE CASCADE); a thread's tags apply to its messages for search.
CREATE TABLE document_tags (
  doc_id      uuid NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
  tag         text NOT NULL CHECK (length(tag) BETWEEN 1 AND 200),
  origin      text NOT NULL DEFAULT 'manual',
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (doc_id, tag)
);
CREATE INDEX document_tags_tag ON document_tags (tag);

CREATE TABLE thread_tags (
  thread_id   uuid NOT NULL REFERENCES threads (thread_id) ON DELETE CASCADE,
  tag         text NOT NULL CHECK (length(tag) BETWEEN 1 AND 200),
  origin      text NOT NULL DEFAULT 'manual',
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (thread_id, tag)
);
CREATE INDEX thread_tags_tag ON thread_tags (tag);

-- The lexical index holds a document's tags (and its thread's): their changes go into the change log
-- like the document's own (migration 060, 105), once per document per transaction.
CREATE TRIGGER document_tags_search_insert AFTER INSERT ON document_tags
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_inserted();
CREATE TRIGGER document_tags_search_delete AFTER DELETE ON document_tags
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_deleted();
CREATE TRIGGER document_tags_search_update AFTER UPDATE ON document_tags
  REFERENCING NEW TABLE AS new_rows OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_updated();

-- A thread's tag changes every active message of the thread.
CREATE FUNCTION search_log_thread_tags() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  x xid8 := pg_current_xact_id();
BEGIN
  IF TG_OP = 'INSERT' THEN
    INSERT INTO search_changes (doc_id)
    SELECT DISTINCT d.doc_id FROM documents d
     WHERE d.is_active_version AND d.thread_id IN (SELECT thread_id FROM new_rows)
       AND NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = d.doc_id);
  ELSE
    INSERT INTO search_changes (doc_id)
    SELECT DISTINCT d.doc_id FROM documents d
     WHERE d.is_active_version AND d.thread_id IN (SELECT thread_id FROM old_rows)
       AND NOT EXISTS (SELECT 1 FROM search_changes s WHERE s.xid = x AND s.doc_id = d.doc_id);
  END IF;
  RETURN NULL;
END $$;
CREATE TRIGGER thread_tags_search_insert AFTER INSERT ON thread_tags
  REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_thread_tags();
CREATE TRIGGER thread_tags_search_delete AFTER DELETE ON thread_tags
  REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION search_log_thread_tags();

-- Rules: every document the query matches gets the tag, now and at ingest (src/organize/rules.ts).
CREATE TABLE tag_rules (
  rule_id     uuid PRIMARY KEY,
  tag         text NOT NULL CHECK (length(tag) BETWEEN 1 AND 200),
  query       text NOT NULL CHECK (length(query) BETWEEN 1 AND 2000),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

-- Documents ingested while rules exist, waiting for the rules to be evaluated against them (after their
-- commit, in batches). Written in the ingest transaction, so a crash loses none.
CREATE TABLE tag_rule_pending (
  doc_id      uuid PRIMARY KEY REFERENCES documents (doc_id) ON DELETE CASCADE
);

-- Saved searches: a named query with its filters; `seen_at` is when its owner last looked at it
-- ("new since you last looked": matching documents ingested after it).
CREATE TABLE saved_searches (
  name        text PRIMARY KEY CHECK (length(name) BETWEEN 1 AND 100),
  query       text NOT NULL CHECK (length(query) BETWEEN 1 AND 10000),
  filters     jsonb NOT NULL DEFAULT '{}'::jsonb,
  seen_at     timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
