-- The whole data model of the gateway spec, section 2. One file per schema change after this one.
CREATE EXTENSION IF NOT EXISTS vector;

-- 2.2 Threads. Identity is NULL-safe: a missing provider/account counts as the empty string.
CREATE TABLE threads (
  thread_id          uuid PRIMARY KEY,
  external_id        text NOT NULL,
  source_type        text NOT NULL,
  source_provider    text,
  source_account_id  text,
  title              text,
  participants       jsonb NOT NULL DEFAULT '[]'::jsonb,
  thread_type        text,
  is_group           boolean,
  participant_count  integer,
  metadata           jsonb NOT NULL DEFAULT '{}'::jsonb,
  first_message_at   timestamptz,
  last_message_at    timestamptz,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX threads_identity ON threads
  (source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id);

-- 2.1 Documents with version history.
CREATE TABLE documents (
  doc_id               uuid PRIMARY KEY,
  external_id          text NOT NULL,
  source_type          text NOT NULL CHECK (source_type IN ('chatapp', 'sms', 'email', 'email_local', 'localfs',
                         'cloud_drive', 'note', 'reminder', 'host_reminders', 'calendar_event', 'contact')),
  source_provider      text,
  source_account_id    text,
  version_number       integer NOT NULL DEFAULT 1 CHECK (version_number >= 1),
  previous_version_id  uuid REFERENCES documents (doc_id),
  is_active_version    boolean NOT NULL DEFAULT true,
  superseded_at        timestamptz,
  superseded_by_id     uuid,
  deleted_at           timestamptz,
  title                text,
  text                 text NOT NULL,
  text_sha256          text NOT NULL,
  mime_type            text,
  canonical_uri        text,
  content_timestamp    timestamptz NOT NULL,
  content_timestamp_type text NOT NULL CHECK (content_timestamp_type IN ('sent', 'received', 'modified', 'created',
                         'event_start', 'event_end', 'due', 'completed')),
  content_created_at   timestamptz,
  content_modified_at  timestamptz,
  people               jsonb NOT NULL DEFAULT '[]'::jsonb,
  thread_id            uuid REFERENCES threads (thread_id),
  parent_doc_id        uuid,
  source_doc_ids       uuid[] NOT NULL DEFAULT '{}',
  related_doc_ids      uuid[] NOT NULL DEFAULT '{}',
  has_attachments      boolean NOT NULL DEFAULT false,
  attachment_count     integer NOT NULL DEFAULT 0 CHECK (attachment_count >= 0),
  has_location         boolean NOT NULL DEFAULT false,
  has_due_date         boolean NOT NULL DEFAULT false,
  due_date             timestamptz,
  is_completed         boolean,
  completed_at         timestamptz,
  metadata             jsonb NOT NULL DEFAULT '{}'::jsonb,
  status               text NOT NULL DEFAULT 'submitted' CHECK (status IN ('submitted', 'extracting', 'extracted',
                         'enriching', 'enriched', 'indexed', 'failed')),
  extraction_failed    boolean NOT NULL DEFAULT false,
  enrichment_failed    boolean NOT NULL DEFAULT false,
  error_details        jsonb,
  intent               jsonb,
  relevance_score      double precision CHECK (relevance_score IS NULL OR (relevance_score >= 0 AND relevance_score <= 1)),
  intent_status        text NOT NULL DEFAULT 'pending' CHECK (intent_status IN ('pending', 'processing', 'processed',
                         'failed', 'skipped')),
  intent_processing_started_at   timestamptz,
  intent_processing_completed_at timestamptz,
  intent_processing_error        text,
  ingested_at          timestamptz NOT NULL DEFAULT now(),
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX documents_version_identity ON documents
  (source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id, version_number);
-- At most one active version per source identity; reads go through this index.
CREATE UNIQUE INDEX documents_active_identity ON documents
  (source_type, coalesce(source_provider, ''), coalesce(source_account_id, ''), external_id)
  WHERE is_active_version;
CREATE INDEX documents_active_timeline ON documents (content_timestamp DESC) WHERE is_active_version;
CREATE INDEX documents_active_source ON documents (source_type, content_timestamp DESC) WHERE is_active_version;
CREATE INDEX documents_thread ON documents (thread_id, content_timestamp) WHERE is_active_version;
CREATE INDEX documents_status ON documents (status) WHERE is_active_version;

-- Files, deduplicated by content hash (2.1 "Files").
CREATE TABLE files (
  file_sha256        text PRIMARY KEY,
  object_key         text NOT NULL,
  storage_backend    text NOT NULL,
  filename           text,
  mime_type          text,
  size_bytes         bigint NOT NULL CHECK (size_bytes >= 0),
  enrichment_status  text NOT NULL DEFAULT 'pending' CHECK (enrichment_status IN ('pending', 'processing',
                       'enriched', 'failed', 'skipped')),
  enrichment         jsonb,
  created_at         timestamptz NOT NULL DEFAULT now(),
  updated_at         timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE document_files (
  doc_id       uuid NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
  file_sha256  text NOT NULL REFERENCES files (file_sha256),
  role         text NOT NULL DEFAULT 'attachment',
  PRIMARY KEY (doc_id, file_sha256)
);

-- 2.3 Chunks: deduplicated by text hash and shared between documents. The chunks table is also
-- the embedding queue (status + lease); see src/embedding.
CREATE TABLE chunks (
  chunk_id          uuid PRIMARY KEY,
  text              text NOT NULL,
  text_sha256       text NOT NULL,
  ordinal           integer NOT NULL DEFAULT 0,
  source_ref        jsonb,
  embedding_status  text NOT NULL DEFAULT 'pending' CHECK (embedding_status IN ('pending', 'processing',
                      'embedded', 'failed')),
  embedding_model   text,
  embedding_vector  vector(1024),
  embedding_error   text,
  lease_expires_at  timestamptz,
  embedded_at       timestamptz,
  tsv               tsvector GENERATED ALWAYS AS (to_tsvector('english', text)) STORED,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX chunks_text_sha256 ON chunks (text_sha256);
CREATE INDEX chunks_queue ON chunks (created_at) WHERE embedding_status = 'pending';
CREATE INDEX chunks_tsv ON chunks USING gin (tsv);
CREATE INDEX chunks_embedding_hnsw ON chunks USING hnsw (embedding_vector vector_cosine_ops);

CREATE TABLE chunk_documents (
  doc_id      uuid NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
  ordinal     integer NOT NULL,
  chunk_id    uuid NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
  weight      numeric(4, 3) NOT NULL DEFAULT 1.0 CHECK (weight >= 0 AND weight <= 1),
  start_char  integer NOT NULL DEFAULT 0,
  end_char    integer NOT NULL DEFAULT 0,
  PRIMARY KEY (doc_id, ordinal)
);
CREATE INDEX chunk_documents_chunk ON chunk_documents (chunk_id);

-- 2.4 Submissions and batches.
CREATE TABLE ingest_batches (
  batch_id         uuid PRIMARY KEY,
  idempotency_key  text NOT NULL UNIQUE,
  status           text NOT NULL DEFAULT 'submitted' CHECK (status IN ('submitted', 'processing', 'completed',
                     'partial', 'failed')),
  total_count      integer NOT NULL DEFAULT 0,
  success_count    integer NOT NULL DEFAULT 0,
  failure_count    integer NOT NULL DEFAULT 0,
  error_details    jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE ingest_submissions (
  submission_id    uuid PRIMARY KEY,
  idempotency_key  text NOT NULL UNIQUE,
  source_type      text NOT NULL,
  source_id        text NOT NULL,
  content_sha256   text NOT NULL,
  status           text NOT NULL DEFAULT 'submitted' CHECK (status IN ('submitted', 'processing', 'cataloged',
                     'completed', 'failed')),
  result_doc_id    uuid REFERENCES documents (doc_id),
  batch_id         uuid REFERENCES ingest_batches (batch_id),
  error_details    jsonb,
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX ingest_submissions_batch ON ingest_submissions (batch_id);
CREATE INDEX ingest_submissions_doc ON ingest_submissions (result_doc_id);

-- 2.5 People, identifiers, the (source, external_id) map, document links, merges.
CREATE TABLE people (
  person_id     uuid PRIMARY KEY,
  display_name  text NOT NULL,
  given_name    text,
  family_name   text,
  organization  text,
  nicknames     text[] NOT NULL DEFAULT '{}',
  notes         text,
  photo_hash    text,
  source        text NOT NULL,
  version       integer NOT NULL DEFAULT 1,
  deleted       boolean NOT NULL DEFAULT false,
  merged_into   uuid REFERENCES people (person_id),
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX people_live ON people (display_name) WHERE merged_into IS NULL AND NOT deleted;

CREATE TABLE person_identifiers (
  person_id        uuid NOT NULL REFERENCES people (person_id),
  kind             text NOT NULL CHECK (kind IN ('phone', 'email', 'chatapp', 'shortcode', 'social')),
  value_raw        text NOT NULL,
  value_canonical  text NOT NULL,
  label            text,
  priority         integer NOT NULL DEFAULT 100,
  verified         boolean NOT NULL DEFAULT true,
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (person_id, kind, value_canonical)
);
CREATE INDEX person_identifiers_lookup ON person_identifiers (kind, value_canonical);

CREATE TABLE people_source_map (
  source       text NOT NULL,
  external_id  text NOT NULL,
  person_id    uuid NOT NULL REFERENCES people (person_id),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, external_id)
);

CREATE TABLE person_addresses (
  person_id    uuid NOT NULL REFERENCES people (person_id),
  label        text NOT NULL DEFAULT 'other',
  street       text,
  city         text,
  region       text,
  postal_code  text,
  country      text,
  PRIMARY KEY (person_id, label)
);

CREATE TABLE person_urls (
  person_id  uuid NOT NULL REFERENCES people (person_id),
  label      text NOT NULL DEFAULT 'other',
  url        text NOT NULL,
  PRIMARY KEY (person_id, label)
);

CREATE TABLE person_merges (
  merge_id          uuid PRIMARY KEY,
  target_person_id  uuid NOT NULL REFERENCES people (person_id),
  source_person_id  uuid NOT NULL REFERENCES people (person_id),
  reason            text NOT NULL,
  details           jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at        timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE document_people (
  doc_id     uuid NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
  person_id  uuid NOT NULL REFERENCES people (person_id),
  role       text NOT NULL CHECK (role IN ('sender', 'recipient', 'participant', 'mentioned', 'contact')),
  PRIMARY KEY (doc_id, person_id, role)
);
CREATE INDEX document_people_person ON document_people (person_id);

-- Incremental contact sync: (source, device) -> last change token.
CREATE TABLE source_change_tokens (
  source            text NOT NULL,
  device_id         text NOT NULL,
  change_token_b64  text,
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (source, device_id)
);

-- 2.6 Relationship edges self -> person.
CREATE TABLE relationship_edges (
  self_person_id  uuid NOT NULL REFERENCES people (person_id),
  person_id       uuid NOT NULL REFERENCES people (person_id),
  score           double precision NOT NULL CHECK (score >= 0),
  last_contact_at timestamptz,
  decay_bucket    integer NOT NULL CHECK (decay_bucket BETWEEN 0 AND 5),
  edge_features   jsonb NOT NULL DEFAULT '{}'::jsonb,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (self_person_id, person_id)
);
CREATE INDEX relationship_edges_rank ON relationship_edges (self_person_id, score DESC, last_contact_at DESC);

-- 2.7 Intent signals.
CREATE TABLE intent_signals (
  signal_id           uuid PRIMARY KEY,
  artifact_id         uuid NOT NULL REFERENCES documents (doc_id) ON DELETE CASCADE,
  taxonomy_version    text NOT NULL,
  parent_thread_id    uuid,
  signal_data         jsonb NOT NULL DEFAULT '{}'::jsonb,
  status              text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'confirmed', 'edited', 'rejected',
                        'snoozed')),
  user_feedback       jsonb,
  conflict            boolean NOT NULL DEFAULT false,
  conflicting_fields  text[] NOT NULL DEFAULT '{}',
  created_at          timestamptz NOT NULL DEFAULT now(),
  updated_at          timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX intent_signals_artifact ON intent_signals (artifact_id);

-- Key/value settings (self person override and the like).
CREATE TABLE system_settings (
  key         text PRIMARY KEY,
  value       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now()
);
