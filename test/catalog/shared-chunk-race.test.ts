/**
 * A document that shares a chunk still waiting for a vector must reach `indexed` even when a
 * worker embeds that chunk while the document is being stored: the worker's status refresh runs
 * before the new links are committed and cannot see them. PostgreSQL only: PGlite has one
 * connection, so the worker cannot act inside another transaction there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Catalog } from '../../src/catalog/catalog.ts';
import type { Database } from '../../src/db/types.ts';
import { storeEmbeddings } from '../../src/embedding/store.ts';
import { prepareIngest } from '../../src/catalog/prepare.ts';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { noteBody } from '../helpers/gateway.ts';

let t: TestDatabase;
beforeAll(async () => {
  if (backend === 'postgres') t = await createTestDatabase();
});
afterAll(async () => {
  await t?.drop();
});

describe.skipIf(backend !== 'postgres')('shared chunk embedded during ingestion (PostgreSQL; skipped on PGlite: one connection)', () => {
  it('the second document still becomes indexed', async () => {
    const text = 'Quarterly budget review moved to Thursday at ten in the small meeting room.';
    const plain = new Catalog(t.db);
    const first = await plain.ingest(prepareIngest(noteBody({ source_id: 'race-a', content: { data: text } }) as any));
    const chunk = (
      await t.db.query<{ chunk_id: string }>('SELECT chunk_id FROM chunk_documents WHERE doc_id = $1', [first.doc_id])
    ).rows[0].chunk_id;

    // The worker embeds the shared chunk on another connection after the catalog read its status
    // (pending) and before the catalog commits.
    let raced = false;
    const racing: Database = {
      ...t.db,
      query: t.db.query.bind(t.db),
      exec: t.db.exec.bind(t.db),
      close: t.db.close.bind(t.db),
      kind: t.db.kind,
      async transaction(fn) {
        return t.db.transaction(async (tx) => {
          const out = await fn(tx);
          if (!raced) {
            raced = true;
            await storeEmbeddings(t.db, [{ chunk_id: chunk, model: 'hash-test', vector: [1, 0, 0, 0] }]);
          }
          return out;
        });
      },
    };
    const second = await new Catalog(racing).ingest(
      prepareIngest(noteBody({ source_id: 'race-b', content: { data: text } }) as any),
    );
    expect(raced).toBe(true);
    expect(second.document_status).toBe('enriched'); // what the catalog saw inside its transaction
    const status = await t.db.query<{ doc_id: string; status: string }>(
      'SELECT doc_id, status FROM documents WHERE doc_id = ANY($1::uuid[]) ORDER BY external_id',
      [[first.doc_id, second.doc_id]],
    );
    expect(status.rows.map((r) => r.status)).toEqual(['indexed', 'indexed']);
    const sub = await t.db.query<{ status: string }>('SELECT status FROM ingest_submissions WHERE result_doc_id = $1', [
      second.doc_id,
    ]);
    expect(sub.rows[0].status).toBe('completed');
  });
});
