-- Relationship ranking (docs/relationships.md): lookups the scorer and the top route make.
-- Persons merged into a survivor (identifiers of merged identities are listed with the survivor).
CREATE INDEX IF NOT EXISTS relationships_people_merged_into ON people (merged_into) WHERE merged_into IS NOT NULL;
-- The top route filters a self person's edges by last contact (the window) before ranking.
CREATE INDEX IF NOT EXISTS relationship_edges_recent ON relationship_edges (self_person_id, last_contact_at DESC);
