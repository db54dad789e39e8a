-- Web UI sessions (src/gateway/sessions.ts): the browser holds a random secret in an HttpOnly cookie;
-- only its SHA-256 is stored here, so neither this table nor a backup of it can be replayed as a cookie.
-- token_fingerprint names the access token the session was opened with: a new token ends every session.
CREATE TABLE web_sessions (
  session_id uuid PRIMARY KEY,
  secret_hash text NOT NULL UNIQUE,
  token_fingerprint text NOT NULL,
  user_agent text,
  created_at timestamptz NOT NULL DEFAULT now(),
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
