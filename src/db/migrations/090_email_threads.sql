-- Email conversations (issue 17): every Message-ID seen, its first known parent and its thread, so the
-- catalog links replies to their conversation whatever the arrival order and merges threads that a later
-- message connects (src/catalog/email-threads.ts).
CREATE TABLE email_thread_messages (
  message_id  text PRIMARY KEY,
  parent_id   text,
  thread_id   uuid NOT NULL
);
CREATE INDEX email_thread_messages_thread ON email_thread_messages (thread_id);

-- Email stored before this migration was threaded per message; the server re-threads it once at start
-- (or `memex rethread`), then removes this marker.
INSERT INTO system_settings (key, value)
SELECT 'email_rethread', '"pending"'::jsonb
 WHERE EXISTS (SELECT 1 FROM documents WHERE source_type IN ('email', 'email_local'))
ON CONFLICT (key) DO NOTHING;
