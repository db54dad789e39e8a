/**
 * GET /v1/ingest/{id} reports chunks whose embedding failed (spec §7: processing errors are
 * recorded in IngestStatusResponse.error). The failure is injected in the embedder: a model that
 * rejects one input is a fault that cannot be caused on demand with a real model.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHashEmbedder } from '../../src/embedding/providers/hash.ts';
import type { Embedder } from '../../src/embedding/types.ts';
import { startEmbeddingWorker, type EmbeddingWorker } from '../../src/embedding/worker.ts';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../embedding/fixtures.ts';

let gw: TestGateway;
let worker: EmbeddingWorker | undefined;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await worker?.stop();
  await gw?.close();
});

const inner = createHashEmbedder(64);
const rejecting: Embedder = {
  name: inner.name,
  dimensions: 64,
  async embed(texts, kind) {
    if (texts.some((t) => t.includes('POISON'))) throw new Error('model rejected input: POISON token');
    return inner.embed(texts, kind);
  },
};

describe(`ingest status with failed embeddings on ${backend}`, () => {
  it('counts failed chunks and carries the error, for a submission and for its batch', async () => {
    const bad = noteBody({ source_id: 'status-bad', content: { data: 'This note carries a POISON word.' } });
    const good = noteBody({ source_id: 'status-good', content: { data: 'A perfectly ordinary note.' } });
    const batch = (await gw.request('POST', '/v1/ingest:batch', { documents: [bad, good] })).json();
    const [badSub, goodSub] = batch.results.map((r: any) => r.submission.submission_id);

    worker = startEmbeddingWorker({ db: gw.db, embedder: rejecting, pollMs: 20 });
    const status = async (id: string) => (await gw.request('GET', `/v1/ingest/${id}`)).json();
    await waitFor(async () => (await status(badSub)).pending_chunks === 0 && (await status(goodSub)).pending_chunks === 0);

    const s = await status(badSub);
    expect(s).toMatchObject({ total_chunks: 1, embedded_chunks: 0, pending_chunks: 0, failed_chunks: 1 });
    expect(s.error).toMatchObject({ error_code: 'EMBEDDING.FAILED', failed_chunks: 1 });
    expect(s.error.message).toContain('POISON token');
    expect(await status(goodSub)).toMatchObject({ embedded_chunks: 1, failed_chunks: 0, error: null });

    const b = await status(batch.batch_id);
    expect(b).toMatchObject({ total_chunks: 2, embedded_chunks: 1, failed_chunks: 1, error: { error_code: 'EMBEDDING.FAILED' } });
    expect(b.batch.submissions.map((x: any) => x.failed_chunks).sort()).toEqual([0, 1]);
  });
});
