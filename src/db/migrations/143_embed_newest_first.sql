-- Newest first: a person searches this month's mail, not 2009's, so the embedding queue is taken in
-- order of the documents' time, newest first, instead of the order the import stored them in.
-- chunks.newest_at is the latest time (content_timestamp, not later than when the document was
-- stored: a calendar entry for next year is not "newer" than today's mail) of the documents that
-- use the chunk, set when the chunk is stored (src/catalog/ingest.ts) and when chunks are queued
-- again (src/embedding/ops.ts). Only the queue's rows are filled here: a chunk that is embedded
-- already needs no position in it, and rewriting every row of a large store would make this
-- migration take minutes.
ALTER TABLE chunks ADD COLUMN newest_at timestamptz;

UPDATE chunks c SET newest_at = x.at
  FROM (SELECT cd.chunk_id, max(least(d.content_timestamp, d.ingested_at)) AS at
          FROM chunk_documents cd JOIN documents d ON d.doc_id = cd.doc_id
          JOIN chunks q ON q.chunk_id = cd.chunk_id AND q.embedding_status IN ('pending', 'processing')
         GROUP BY cd.chunk_id) x
 WHERE c.chunk_id = x.chunk_id;

-- The claim (src/embedding/worker.ts) walks this index: newest first, then in the order stored.
DROP INDEX chunks_queue;
CREATE INDEX chunks_queue_newest ON chunks (newest_at DESC NULLS LAST, created_at) WHERE embedding_status = 'pending';
