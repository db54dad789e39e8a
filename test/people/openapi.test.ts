import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

it('documents the people, contacts and v2 routes in the OpenAPI description', async () => {
  const res = await gw.request('GET', '/openapi.json');
  expect(res.statusCode).toBe(200);
  const paths = Object.keys(res.json().paths);
  for (const p of [
    '/search/people',
    '/v1/people/merges',
    '/v1/people/{person_id}',
    '/catalog/contacts/ingest',
    '/catalog/contacts/export',
    '/catalog/contacts/change-token',
    '/v2/ingest/document',
    '/v2/ingest/person',
    '/v2/ingest:batch',
  ]) {
    expect(paths, p).toContain(p);
  }
});
