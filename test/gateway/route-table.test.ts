/**
 * The route table (src/schemas/operations.ts, routes.ts) is the gateway's: every operation the OpenAPI document
 * lists is an entry of the table with the same method and path, and every entry is registered. So a route added
 * beside the table, or an entry no route uses, fails here.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OPERATIONS } from '../../src/schemas/operations.ts';
import { ROUTES } from '../../src/schemas/routes.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

it('lists every operation of the OpenAPI document, and only those', async () => {
  const doc = (await gw.request('GET', '/openapi.json')).json();
  const documented: string[] = [];
  for (const [path, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    for (const method of Object.keys(item)) documented.push(`${method.toUpperCase()} ${path}`);
  }
  // Fastify's `::` is a literal colon (/v1/ingest:batch), `:name` a parameter.
  const openApiPath = (url: string) => url.replace(/::/g, '\0').replace(/:(\w+)/g, '{$1}').replace(/\0/g, ':');
  const table = Object.values(OPERATIONS).map((op) => `${op.method} ${openApiPath(op.url)}`);
  expect(new Set(table).size).toBe(table.length);
  expect([...table].sort()).toEqual([...documented].sort());
});

it('gives every operation its schemas under the same method and path', () => {
  expect(Object.keys(ROUTES).sort()).toEqual(Object.keys(OPERATIONS).sort());
  for (const [name, op] of Object.entries(OPERATIONS)) {
    const route = ROUTES[name as keyof typeof ROUTES];
    expect({ method: route.method, url: route.url }, name).toEqual(op);
  }
});
