-- A chunk shared by several documents (a quoted reply, a list footer) kept the time of the first one stored,
-- so the newest-first embedding queue (migration 143) reached this month's mail that shares it last (issue 48).
-- Ingest now gives such a chunk the newest time of the documents it serves (src/catalog/ingest.ts); this puts
-- the chunks still in the queue right. Only queued chunks used by more than one document are rewritten.
UPDATE chunks c SET newest_at = x.at
  FROM (SELECT cd.chunk_id, max(least(d.content_timestamp, d.ingested_at)) AS at
          FROM chunk_documents cd JOIN documents d ON d.doc_id = cd.doc_id
          JOIN chunks q ON q.chunk_id = cd.chunk_id AND q.embedding_status IN ('pending', 'processing')
         GROUP BY cd.chunk_id
        HAVING count(*) > 1) x
 WHERE c.chunk_id = x.chunk_id AND (c.newest_at IS NULL OR c.newest_at < x.at);
