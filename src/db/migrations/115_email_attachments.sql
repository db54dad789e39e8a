-- Email attachments meet their message by Message-ID (src/catalog/attachments.ts, issue 33). The
-- collectors send a message as one document (metadata.message_id) and upload each attachment as a
-- file document of its own (metadata.email.message_id), in either order. Both sides are looked up by
-- the Message-ID without surrounding blanks and angle brackets, hashed: metadata is unbounded and a
-- btree row holds at most 2704 bytes, so the index holds 32 hex digits whatever the header's length.
CREATE INDEX documents_email_message_key ON documents
  (md5(btrim(metadata->>'message_id', E' \t\r\n<>'))) WHERE source_type IN ('email', 'email_local');
CREATE INDEX documents_email_attachment_key ON documents
  (md5(btrim(metadata->'email'->>'message_id', E' \t\r\n<>'))) WHERE source_type IN ('email', 'email_local');

-- A forget with block: true also keeps the Message-IDs of the erased email out (an attachment
-- uploaded later with one of them is skipped), and so does a message the block list keeps out.
-- Kept as SHA-256 like identifiers; looked up by hash (there can be many).
ALTER TABLE forget_blocks DROP CONSTRAINT forget_blocks_kind_check;
ALTER TABLE forget_blocks ADD CONSTRAINT forget_blocks_kind_check CHECK (kind IN ('source', 'identifier', 'message'));
ALTER TABLE forget_blocks DROP CONSTRAINT forget_blocks_check1;
ALTER TABLE forget_blocks ADD CONSTRAINT forget_blocks_hash_check CHECK ((kind IN ('identifier', 'message')) = (identifier_sha256 IS NOT NULL));
CREATE INDEX forget_blocks_message ON forget_blocks (identifier_sha256) WHERE kind = 'message';
