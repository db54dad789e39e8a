-- Active documents whose stored text holds a redaction marker ([EMAIL_REDACTED], [PHONE_REDACTED],
-- [ACCOUNT_REDACTED], [SSN_REDACTED]): mail the collectors redacted before storing it, the default before
-- issue 30. GET /v1/status counts them (src/privacy/stored-redaction.ts) so a store that holds such text
-- says so; the partial index makes that count read only those rows, not every text, and costs nothing
-- once the mail is imported again (the originals supersede the redacted versions).
CREATE INDEX IF NOT EXISTS documents_redacted_text_idx ON documents (source_type)
  WHERE is_active_version AND strpos(text, '_REDACTED]') > 0;
