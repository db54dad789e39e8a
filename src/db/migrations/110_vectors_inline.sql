-- Vectors stay in their row. A 512-dimension vector (USE-lite) is 2,056 bytes, just over
-- PostgreSQL's TOAST threshold of about 2 KB, and pgvector's type defaults to EXTERNAL storage, so
-- every such vector was written to the TOAST table and every read of one (the similarity of each
-- k-NN row, the exact k-NN over a person's or a thread's chunks) went through the TOAST index.
-- MAIN keeps a vector in its row unless the row would not fit a page. Measured on 100,000 vectors
-- (docs/BENCHMARKS.md): the exact k-NN over one person's ~700 documents 22.3 -> 13.9 CPU-ms.
-- Rows already written keep their storage until the table is rewritten (VACUUM FULL chunk_embeddings).
ALTER TABLE chunk_embeddings ALTER COLUMN embedding SET STORAGE MAIN;
