-- Forgetting (docs/forget.md). POST /v1/forget with block: true keeps a forgotten source or
-- identifier from coming back through a collector: later documents from it are skipped and counted
-- as skipped. An identifier is kept only as the SHA-256 of its canonical form, never in clear: the
-- block list must not itself be a record of the person.
CREATE TABLE forget_blocks (
  block_id           uuid PRIMARY KEY,
  kind               text NOT NULL CHECK (kind IN ('source', 'identifier')),
  source_type        text,
  source_account_id  text,
  identifier_sha256  text,
  created_at         timestamptz NOT NULL DEFAULT now(),
  CHECK ((kind = 'source') = (source_type IS NOT NULL)),
  CHECK ((kind = 'identifier') = (identifier_sha256 IS NOT NULL))
);
CREATE UNIQUE INDEX forget_blocks_identity ON forget_blocks
  (kind, coalesce(source_type, ''), coalesce(source_account_id, ''), coalesce(identifier_sha256, ''));
