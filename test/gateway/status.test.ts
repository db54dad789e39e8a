import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createGatewayMetrics } from '../../src/gateway/metrics.ts';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe(`GET /v1/status on ${backend}`, () => {
  it('reports documents per source and status, the queue, failures with reasons, and re-queues failed chunks', async () => {
    const empty = (await gw.request('GET', '/v1/status')).json();
    expect(empty).toMatchObject({
      documents: { total: 0, by_source: [] },
      chunks: { pending: 0, processing: 0, embedded: 0, failed: 0, total: 0 },
      queue: { waiting: 0, age_seconds: 0, eta_seconds: null },
      failures: { chunks: [], documents: [] },
      worker: null,
    });

    const a = (await gw.request('POST', '/v1/ingest', noteBody({ content: { mime_type: 'text/plain', data: 'First note about the harbour.' } }))).json();
    await gw.request('POST', '/v1/ingest', noteBody({ content: { mime_type: 'text/plain', data: 'Second note about the lighthouse.' } }));
    await gw.request('POST', '/v1/ingest', noteBody({ source_type: 'email', content: { mime_type: 'text/plain', data: 'An email about the ferry.' } }));
    // The model rejected one chunk; one document failed extraction.
    await gw.db.query(
      `UPDATE chunks SET embedding_status = 'failed', embedding_error = 'EmbeddingRequestError: input too long'
        WHERE chunk_id IN (SELECT chunk_id FROM chunk_documents WHERE doc_id = $1)`,
      [a.doc_id],
    );
    await gw.db.query(
      `UPDATE documents SET status = 'failed', error_details = '{"code":"EXTRACTION_FAILED","message":"encrypted PDF"}'
        WHERE doc_id = $1`,
      [a.doc_id],
    );

    const res = await gw.request('GET', '/v1/status');
    expect(res.statusCode).toBe(200);
    const s = res.json();
    expect(s.documents.total).toBe(3);
    expect(s.documents.by_source).toEqual([
      { source_type: 'email', status: 'enriched', count: 1 },
      { source_type: 'note', status: 'enriched', count: 1 },
      { source_type: 'note', status: 'failed', count: 1 },
    ]);
    expect(s.chunks).toEqual({ pending: 2, processing: 0, embedded: 0, failed: 1, total: 3 });
    expect(s.queue.waiting).toBe(2);
    expect(s.queue.age_seconds).toBeGreaterThanOrEqual(0);
    expect(s.throughput.documents_ingested.last_15_minutes).toBeCloseTo(3 / 900, 6);
    expect(s.failures.chunks).toEqual([{ reason: 'EmbeddingRequestError: input too long', count: 1 }]);
    expect(s.failures.documents).toEqual([{ source_type: 'note', reason: 'encrypted PDF', count: 1 }]);

    const re = await gw.request('POST', '/v1/admin/embedding/reindex-failed');
    expect(re.statusCode).toBe(200);
    expect(re.json()).toEqual({ queued: 1 });
    const after = (await gw.request('GET', '/v1/status')).json();
    expect(after.chunks).toMatchObject({ pending: 3, failed: 0 });
    expect(after.failures.chunks).toEqual([]);
  });

  it('needs the gateway token and is described in the OpenAPI document', async () => {
    expect((await gw.request('GET', '/v1/status', undefined, { authorization: '' })).statusCode).toBe(401);
    expect((await gw.request('POST', '/v1/admin/embedding/reindex-failed', undefined, { authorization: '' })).statusCode).toBe(401);
    const doc = (await gw.request('GET', '/openapi.json')).json();
    const schema = doc.paths['/v1/status'].get.responses['200'].content['application/json'].schema;
    expect(Object.keys(schema.properties)).toEqual(
      expect.arrayContaining(['documents', 'chunks', 'queue', 'throughput', 'models', 'failures', 'worker']),
    );
  });

  it('GET /metrics: Prometheus text with request latency per route, ingest outcomes, queue gauges and search legs', async () => {
    expect((await gw.request('GET', '/metrics', undefined, { authorization: '' })).statusCode).toBe(401);
    const scrape = async () => {
      const res = await gw.request('GET', '/metrics');
      expect(res.statusCode).toBe(200);
      expect(res.headers['content-type']).toMatch(/^text\/plain/);
      const lines = res.body.split('\n');
      return {
        text: res.body,
        value: (series: string) => Number(lines.find((l) => l.startsWith(series + ' '))?.slice(series.length + 1) ?? 0),
      };
    };
    const before = await scrape();
    const dup = noteBody({ content: { mime_type: 'text/plain', data: 'A note sent twice.' } });
    await gw.request('POST', '/v1/ingest', dup);
    await gw.request('POST', '/v1/ingest', dup);
    await gw.request('POST', '/v1/ingest', { source_type: 'note' });
    await gw.request('GET', '/v1/search?q=harbour');
    const after = await scrape();
    const delta = (series: string) => after.value(series) - before.value(series);
    expect(delta('gateway_http_request_duration_ms_count{method="GET",route="/v1/search"}')).toBe(1);
    expect(delta('gateway_http_requests_total{method="GET",route="/v1/search",status="200"}')).toBe(1);
    expect(delta('gateway_ingest_requests_total{route="/v1/ingest",outcome="stored"}')).toBe(1);
    expect(delta('gateway_ingest_requests_total{route="/v1/ingest",outcome="duplicate"}')).toBe(1);
    expect(delta('gateway_ingest_requests_total{route="/v1/ingest",outcome="rejected"}')).toBe(1);
    expect(delta('search_leg_duration_ms_count{leg="lexical"}')).toBe(1);
    expect(delta('search_vector_skipped_total{reason="no_embedder"}')).toBe(1);
    const status = (await gw.request('GET', '/v1/status')).json();
    expect(after.value('embedding_queue_chunks{status="pending"}')).toBe(status.chunks.pending);
    expect(after.value('catalog_documents{source_type="note",status="enriched"}')).toBe(
      status.documents.by_source.find((r: any) => r.source_type === 'note' && r.status === 'enriched').count,
    );
    // Label values are route templates: no query text, no ids.
    expect(after.text).not.toContain('harbour');
  });

  it('GET /metrics: what the model threads did, per role, from the pool', async () => {
    const work = (texts: number) => ({ jobs: texts / 8, texts, messages: texts / 8, busySeconds: texts / 10, cpuSeconds: texts / 20, cpuWaitSeconds: texts / 40 });
    const metrics = createGatewayMetrics({
      db: gw.db,
      defaultMetrics: false,
      pool: () => ({ waiting: { query: 0, bulk: 3 }, busy: { query: 0, bulk: 2 }, threads: { query: 1, bulk: 2 }, work: { query: work(8), bulk: work(160) } }),
    });
    const text = await metrics.scrape();
    expect(text).toContain('embedding_pool_busy_seconds_total{role="bulk"} 16');
    expect(text).toContain('embedding_pool_cpu_seconds_total{role="bulk"} 8');
    expect(text).toContain('embedding_pool_cpu_wait_seconds_total{role="query"} 0.2');
    expect(text).toContain('embedding_pool_texts_total{role="query"} 8');
    // Read again at the next scrape: totals, not sums of scrapes.
    expect(await metrics.scrape()).toContain('embedding_pool_texts_total{role="bulk"} 160');
  });
});
