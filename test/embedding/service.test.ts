/** startEmbeddingService as the server wires it: env config, worker, notify(), chunk counts. */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { documentChunkCounts, startEmbeddingService, type EmbeddingService } from '../../src/embedding/index.ts';
import { docStatus, insertDocument, waitFor, watchClaims } from './fixtures.ts';

let t: TestDatabase;
let svc: EmbeddingService | undefined;
beforeAll(async () => {
  t = await createTestDatabase();
});
afterAll(async () => {
  await svc?.close();
  await t?.drop();
});

it('starts from env, logs the hash warning, and notify() wakes an idle worker at once', async () => {
  const warnings: string[] = [];
  const logger = { info() {}, warn: (m: any) => warnings.push(String(m)), error() {} };
  // A poll interval of 10 minutes: only notify() can get this document embedded within the test.
  const watched = watchClaims(t.db);
  svc = await startEmbeddingService({ db: watched.db, env: { EMBEDDING_PROVIDER: 'hash', EMBEDDING_POLL_MS: '600000' }, logger });
  expect(warnings.some((w) => /TESTS ONLY/.test(w))).toBe(true);
  expect(svc.embedder.name).toBe('hash-256');
  // The worker's first claim found the queue empty: from then on it sleeps unless notified.
  await waitFor(async () => watched.emptyClaims() >= 1);
  const d = await insertDocument(t.db, ['first chunk', 'second chunk', '']);
  expect(await documentChunkCounts(t.db, d.docId)).toEqual({ total_chunks: 3, embedded_chunks: 0, pending_chunks: 3, failed_chunks: 0 });
  // One notify() is enough, even when it lands between the empty claim and the sleep (the worker counts them).
  svc.worker!.notify();
  await waitFor(async () => (await docStatus(t.db, d.docId)).doc === 'indexed', 20_000);
  expect(await documentChunkCounts(t.db, d.docId)).toEqual({ total_chunks: 3, embedded_chunks: 3, pending_chunks: 0, failed_chunks: 0 });
  expect(await docStatus(t.db, d.docId)).toEqual({ doc: 'indexed', submission: 'completed' });
  expect(svc.worker!.stats).toMatchObject({ embedded: 2, empty: 1, failed: 0 });
});

it('startWorker: false (gateway role) builds the embedder for queries without a worker', async () => {
  const s = await startEmbeddingService({ db: t.db, env: { EMBEDDING_PROVIDER: 'hash' }, startWorker: false });
  expect(s.worker).toBeUndefined();
  const [v] = await s.embedder.embed(['query text'], 'query');
  expect(v).toHaveLength(256);
  await s.close();
});
