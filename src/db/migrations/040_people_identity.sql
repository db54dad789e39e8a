-- People identity (issue 5): one owner per identifier, per-source contact versions, search and
-- export indexes.

-- An identifier (kind, canonical value) belongs to exactly one person. Merges move identifiers to
-- the survivor and deleted contacts drop theirs, so every row here belongs to a live person; the
-- unique index makes two transactions that create the same identifier at once collide instead of
-- silently creating two people (the loser finds the owner and links to it, or merges).
-- Rows that already share a value (written before this index) keep the oldest owner's copy.
DELETE FROM person_identifiers pi
 USING person_identifiers other, people p_pi, people p_other
 WHERE pi.kind = other.kind AND pi.value_canonical = other.value_canonical
   AND pi.person_id <> other.person_id
   AND p_pi.person_id = pi.person_id AND p_other.person_id = other.person_id
   AND (p_other.created_at, p_other.person_id) < (p_pi.created_at, p_pi.person_id);
DROP INDEX IF EXISTS person_identifiers_lookup;
CREATE UNIQUE INDEX person_identifiers_owner ON person_identifiers (kind, value_canonical);
CREATE INDEX person_identifiers_person ON person_identifiers (person_id);

-- What a contact source last told us about a record: version, content hash and deletion, so a
-- re-sync of unchanged contacts changes nothing and an older version never overwrites a newer one.
ALTER TABLE people_source_map
  ADD COLUMN version integer NOT NULL DEFAULT 1,
  ADD COLUMN content_sha256 text,
  ADD COLUMN deleted boolean NOT NULL DEFAULT false,
  ADD COLUMN created_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX people_source_map_person ON people_source_map (person_id);

-- Reads follow merged ids; merges are listed per person.
CREATE INDEX people_merged_into ON people (merged_into) WHERE merged_into IS NOT NULL;
CREATE INDEX person_merges_target ON person_merges (target_person_id, created_at);
CREATE INDEX person_merges_source ON person_merges (source_person_id);

-- Incremental export walks people by (updated_at, person_id).
CREATE INDEX people_updated ON people (updated_at, person_id);

-- Merges move edges whose other end is the merged person.
CREATE INDEX relationship_edges_person ON relationship_edges (person_id);
