/**
 * The OpenAPI document is complete enough for a generated client: an operationId (unique) and a summary on every
 * operation, 401/403 on every operation behind the token, the real status of the catalog delete (202), and the
 * multipart bodies of POST /v1/ingest/file and POST /v1/ingest/file:batch.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
});
afterAll(async () => {
  await gw?.close();
});

it('names, summarises and documents the auth errors of every operation', async () => {
  const doc = (await gw.request('GET', '/openapi.json')).json();
  const ids = new Set<string>();
  let operations = 0;
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      operations++;
      expect(op.operationId, `${method} ${path}`).toMatch(/^[a-z]+[A-Za-z0-9]*$/);
      expect(ids.has(op.operationId), `duplicate ${op.operationId}`).toBe(false);
      ids.add(op.operationId);
      expect(op.summary, `${method} ${path}`).toBeTruthy();
      const open = Array.isArray(op.security) && op.security.length === 0;
      if (!open) expect(Object.keys(op.responses), `${method} ${path}`).toEqual(expect.arrayContaining(['401', '403']));
    }
  }
  expect(operations).toBeGreaterThan(30);
  expect(doc.paths['/v1/healthz'].get.responses['401']).toBeUndefined();
  expect(doc.paths['/v1/search'].get.operationId).toBe('getV1Search');
  expect(Object.keys(doc.paths['/v1/catalog/documents/{doc_id}'].delete.responses)).toContain('202');
  expect(Object.keys(doc.paths['/v1/catalog/documents/{doc_id}'].delete.responses)).not.toContain('200');
  const upload = doc.paths['/v1/ingest/file'].post.requestBody.content['multipart/form-data'].schema;
  expect(upload.required).toEqual(['meta', 'upload']);
  expect(upload.properties.upload).toMatchObject({ type: 'string', format: 'binary' });
  const batch = doc.paths['/v1/ingest/file:batch'].post.requestBody.content['multipart/form-data'].schema;
  expect(batch.properties.upload).toMatchObject({ type: 'array', items: { type: 'string', format: 'binary' } });
});
