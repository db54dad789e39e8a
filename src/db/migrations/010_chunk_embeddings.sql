-- Embedding storage at each model's native dimension (see docs/embeddings.md for the measurements).
-- chunks.embedding_status stays the queue; vectors live here, one row per (model, chunk), so a
-- re-index with a new model writes next to the old vectors and search keeps using the active model
-- until the new one is complete. chunks.embedding_vector (the spec's padded vector(1024)) is not
-- written: padding halved the HNSW insert rate on PGlite.

-- One row per model ever used. state: active = the model search uses; building = a re-index in
-- progress (at most one); retired = replaced. dimensions is learned from the first stored vector.
CREATE TABLE embedding_models (
  model         text PRIMARY KEY,
  dimensions    integer CHECK (dimensions IS NULL OR dimensions BETWEEN 1 AND 4096),
  state         text NOT NULL CHECK (state IN ('active', 'building', 'retired')),
  index_name    text,
  created_at    timestamptz NOT NULL DEFAULT now(),
  activated_at  timestamptz
);
CREATE UNIQUE INDEX embedding_models_one_active ON embedding_models ((true)) WHERE state = 'active';
CREATE UNIQUE INDEX embedding_models_one_building ON embedding_models ((true)) WHERE state = 'building';

-- The column has no fixed dimension; each model gets a partial HNSW index on
-- (embedding::vector(N)) WHERE model = '<name>', created when its first vector is stored.
CREATE TABLE chunk_embeddings (
  model       text NOT NULL REFERENCES embedding_models (model),
  chunk_id    uuid NOT NULL REFERENCES chunks (chunk_id) ON DELETE CASCADE,
  embedding   vector NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (model, chunk_id)
);
CREATE INDEX chunk_embeddings_chunk ON chunk_embeddings (chunk_id);

-- Expired leases are swept back to pending; this keeps the sweep an index scan.
CREATE INDEX chunks_leases ON chunks (lease_expires_at) WHERE embedding_status = 'processing';
-- Throughput over the last minutes for `memex status`.
CREATE INDEX chunks_embedded_at ON chunks (embedded_at) WHERE embedded_at IS NOT NULL;

-- Nothing writes chunks.embedding_vector any more; an index over NULLs only costs inserts.
DROP INDEX IF EXISTS chunks_embedding_hnsw;
