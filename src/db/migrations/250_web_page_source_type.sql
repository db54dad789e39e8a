-- Browser history and bookmarks (issue 43, item 4) are documents of their own source type, `web_page`: one per
-- page (its URL is its identity), with its visits and bookmark folders in metadata. The CHECK of
-- documents.source_type is rebuilt from the values it allows now plus `web_page`, so a migration of another
-- branch that added source types before this one keeps them.
DO $$
DECLARE
  con record;
  allowed text[];
BEGIN
  SELECT c.conname, pg_get_constraintdef(c.oid) AS def INTO con
    FROM pg_constraint c
   WHERE c.conrelid = 'documents'::regclass AND c.contype = 'c' AND pg_get_constraintdef(c.oid) LIKE '%source_type%'
   LIMIT 1;
  IF con.conname IS NULL THEN
    RETURN;
  END IF;
  SELECT array_agg(DISTINCT m[1]) INTO allowed FROM regexp_matches(con.def, '''([a-z_]+)''', 'g') AS m;
  IF 'web_page' = ANY (allowed) THEN
    RETURN;
  END IF;
  allowed := allowed || ARRAY['web_page'];
  EXECUTE format('ALTER TABLE documents DROP CONSTRAINT %I', con.conname);
  EXECUTE format('ALTER TABLE documents ADD CONSTRAINT %I CHECK (source_type = ANY (%L::text[]))', con.conname, allowed);
END
$$;
