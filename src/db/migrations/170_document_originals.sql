-- The original of every collected message (issue 40 item 1): its raw RFC 5322 bytes, stored once by
-- SHA-256 in the object store like an attachment (a `files` row names the object, so backup, gc and the
-- download route find it), linked to the document version that was built from it. Versions are rows of
-- `documents`, so `doc_id` names the version and through its identity the document; erasing the
-- document (forget) erases its links, and the object goes once no link names it (src/catalog/originals.ts).
-- kind: 'rfc822' (the message as sent; an .emlx file's message part, without Apple's wrapper).
-- One message may have several originals (the same message fetched with other headers): one row each.
CREATE TABLE document_originals (
  doc_id       uuid NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
  file_sha256  text NOT NULL REFERENCES files (file_sha256),
  kind         text NOT NULL CHECK (kind IN ('rfc822')),
  size_bytes   bigint NOT NULL CHECK (size_bytes >= 0),
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (doc_id, file_sha256)
);
-- gc and forget ask "does anything still name this file?".
CREATE INDEX document_originals_file ON document_originals (file_sha256);
