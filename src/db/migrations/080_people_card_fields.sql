-- Each source record keeps the person fields its card said (display name, names, organisation,
-- nicknames, notes, photo hash), so that a person built from several cards is the union of them
-- and a later version of one card changes only what that card contributed (src/identity/card-fields.ts).
-- NULL for records written before this migration: their card is taken to be the person's fields.
ALTER TABLE people_source_map ADD COLUMN fields jsonb;
