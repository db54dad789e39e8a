/**
 * A large PostgreSQL store made fast for a benchmark: the active documents ingested through the API, copied
 * `times - 1` more times in SQL (`documents`, `chunk_documents`, `document_people`). A copy is its original
 * with another doc_id and `external_id` + `#k`; it shares the original's chunks (chunks are content-addressed),
 * thread and people. On a shared machine the API ingests a few hundred documents a second, so 1,000,000 would
 * take over an hour; the copies take minutes. The search index is not told (triggers off): the server that
 * opens the store next must build its index from the database (remove DATA_DIR's index snapshot).
 *
 * What this cannot stand for: ingest itself (chunking, people, threads), and distinct text (the copies of
 * a document have its words; a query matches 10× the documents of the original set, as a 10× larger store
 * of the same person would).
 */
import pg from 'pg';

export async function replicateDocuments(databaseUrl: string, times: number, log: (line: string) => void = console.log): Promise<number> {
  const c = new pg.Client({ connectionString: databaseUrl });
  await c.connect();
  try {
    const cols = (
      await c.query<{ name: string }>(
        `SELECT quote_ident(column_name) AS name FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name = 'documents' AND is_generated = 'NEVER' ORDER BY ordinal_position`,
      )
    ).rows.map((r) => r.name);
    const pick = cols.map((n) => (n === 'doc_id' ? 'm.dst' : n === 'external_id' ? `d.external_id || '#' || m.k` : `d.${n}`)).join(', ');
    // Triggers (the change log, FK checks) off for this session: the index reads the store whole at the next start.
    await c.query(`SET session_replication_role = replica`);
    await c.query(`SET maintenance_work_mem = '256MB'`);
    let n = 0;
    for (let k = 1; k < times; k++) {
      const t0 = performance.now();
      await c.query('BEGIN');
      await c.query(`CREATE TEMP TABLE m ON COMMIT DROP AS
        SELECT doc_id AS src, md5(doc_id::text || ':' || $1::int)::uuid AS dst, $1::int AS k
          FROM documents WHERE is_active_version AND strpos(external_id, '#') = 0`, [k]);
      const docs = await c.query(`INSERT INTO documents (${cols.join(', ')}) SELECT ${pick} FROM documents d JOIN m ON m.src = d.doc_id`);
      await c.query(`INSERT INTO chunk_documents (doc_id, ordinal, chunk_id, weight, start_char, end_char)
        SELECT m.dst, cd.ordinal, cd.chunk_id, cd.weight, cd.start_char, cd.end_char FROM chunk_documents cd JOIN m ON m.src = cd.doc_id`);
      await c.query(`INSERT INTO document_people (doc_id, person_id, role)
        SELECT m.dst, dp.person_id, dp.role FROM document_people dp JOIN m ON m.src = dp.doc_id`);
      await c.query('COMMIT');
      n += docs.rowCount ?? 0;
      log(`  copy ${k} of ${times - 1}: ${docs.rowCount} documents in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
    }
    await c.query('ANALYZE');
    return n;
  } finally {
    await c.end();
  }
}
