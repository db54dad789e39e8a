/**
 * Watched-folder deletions go through the gateway's catalog API, which takes CATALOG_TOKEN. When that differs from
 * the agent's gateway token and modules.fswatch.catalog_token is unset, every deletion is refused and retried for
 * ever (issue 46): the agent says so at start, and a refused deletion says so once, naming the setting to fix.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogAccessProblem, catalogDeleter } from '../../src/agent/collectors/fswatch/module.ts';
import { testConfig } from '../agent/helpers.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const CATALOG_TOKEN = 'catalog-secret-differs-from-auth';
let gw: TestGateway;
let baseUrl: string;

beforeAll(async () => {
  gw = await startTestGateway({ config: { catalogToken: CATALOG_TOKEN } });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await gw?.close();
});

const config = (catalogToken?: string) =>
  testConfig({
    gateway: { base_url: baseUrl, auth_token: TEST_TOKEN, timeout: 30 },
    modules: { ocr: { enabled: false }, fswatch: { enabled: true, ...(catalogToken ? { catalog_token: catalogToken } : {}) } },
  });

describe('the catalog token of watched-folder deletions', () => {
  it('is checked at start: a refused token is named with the setting that fixes it', async () => {
    const problem = await catalogAccessProblem(config());
    expect(problem).toMatch(/refused this agent's token \(403\)/);
    expect(problem).toMatch(/set modules\.fswatch\.catalog_token to the gateway's CATALOG_TOKEN/);
    expect(problem).not.toContain(TEST_TOKEN);
    expect(await catalogAccessProblem(config(CATALOG_TOKEN))).toBeNull();
  });

  it('a refused deletion warns once, however often it is retried', async () => {
    const warnings: string[] = [];
    const del = catalogDeleter(config(), fetch, (w) => warnings.push(w));
    for (let i = 0; i < 3; i++) await expect(del('00000000-0000-4000-8000-000000000001')).rejects.toMatchObject({ status: 403 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/deleted files in watched folders cannot remove their documents/);
    const ok = catalogDeleter(config(CATALOG_TOKEN), fetch, (w) => warnings.push(w));
    expect(await ok('00000000-0000-4000-8000-000000000001')).toBe('gone');
    expect(warnings).toHaveLength(1);
  });
});
