-- Search answers keep people's display names (the person facet) and documents' rows (hits,
-- thread context) in memory beside the lexical index (src/search/hit-cache.ts), so a query
-- normally reads nothing from the catalog but the change log. Document rows are already logged
-- (060); a person's display name can change without any document changing (contact sync, merges),
-- so those changes are logged too, as rows naming the person instead of a document.
ALTER TABLE search_changes ALTER COLUMN doc_id DROP NOT NULL;
ALTER TABLE search_changes ADD COLUMN person_id uuid;
ALTER TABLE search_changes ADD CONSTRAINT search_changes_names_one
  CHECK ((doc_id IS NULL) <> (person_id IS NULL));

CREATE FUNCTION search_log_person() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO search_changes (person_id) VALUES (OLD.person_id);
  RETURN NULL;
END $$;

-- Row level with a WHEN clause: people rows are updated often (sync versions, timestamps) and only
-- the display name is cached.
CREATE TRIGGER people_search_update AFTER UPDATE ON people FOR EACH ROW
  WHEN (OLD.display_name IS DISTINCT FROM NEW.display_name)
  EXECUTE FUNCTION search_log_person();
CREATE TRIGGER people_search_delete AFTER DELETE ON people FOR EACH ROW
  EXECUTE FUNCTION search_log_person();
