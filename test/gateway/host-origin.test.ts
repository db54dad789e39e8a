/**
 * Issue 47 item 2 on the gateway, over a real socket (the Host header is the point; inject picks its own):
 * - a request naming another host (DNS rebinding: `Host: evil.example`) is refused with 421 on every route of
 *   /openapi.json, on /mcp, on the web UI and on unknown URLs, before the token is read: no backup streamed,
 *   no search answered;
 * - a page of another origin is refused with 403 on state-changing and data routes and on /mcp;
 * - the gateway's own names and origin, requests without Origin and the names of ALLOWED_HOSTS are answered;
 * - the early listener of `memex serve` applies the same rule;
 * - a placeholder AUTH_TOKEN is refused at start.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError, loadServerConfig } from '../../src/config/server.ts';
import { listenEarly } from '../../src/gateway/early-listener.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { rawRequest } from '../helpers/raw-http.ts';

const bearer = { authorization: `Bearer ${TEST_TOKEN}` };
const json = { 'content-type': 'application/json' };
const mcpHeaders = { ...bearer, ...json, accept: 'application/json, text/event-stream' };
const searchCall = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'search', arguments: { query: 'Lisbon' } } });

let gw: TestGateway;
let url: string;
let port: string;
let paths: Array<[string, string]>;
beforeAll(async () => {
  gw = await startTestGateway({ files: {}, config: { allowedHosts: ['memex.example.com', '*.tail.example'] } });
  const ingest = await gw.request('POST', '/v1/ingest', noteBody({ title: 'Lisbon trip', content: { mime_type: 'text/plain', data: 'The train to Lisbon leaves at nine.' } }));
  expect(ingest.statusCode).toBeLessThan(300);
  url = await gw.app.listen({ host: '127.0.0.1', port: 0 });
  port = new URL(url).port;
  const doc = (await gw.request('GET', '/openapi.json')).json();
  paths = [];
  for (const [p, item] of Object.entries<Record<string, unknown>>(doc.paths)) {
    for (const method of Object.keys(item)) paths.push([method.toUpperCase(), p.replace(/\{[^}]+\}/g, 'x')]);
  }
}, 60_000);
afterAll(() => gw?.close());

describe('the gateway answers only to its own names', () => {
  it('refuses Host: evil.example with 421 on every route, /mcp, the web UI and unknown URLs, before the token', async () => {
    expect(paths.length).toBeGreaterThan(50);
    const all = [...paths, ['POST', '/mcp'], ['GET', '/mcp'], ['GET', '/'], ['GET', '/search'], ['GET', '/no-such-page'], ['GET', '/openapi.json']];
    for (const [method, path] of all) {
      for (const headers of [{ host: `evil.example:${port}` }, { host: `evil.example:${port}`, ...bearer, origin: `http://evil.example:${port}` }]) {
        const res = await rawRequest(url, { method, path, headers: { ...headers, ...(method === 'GET' ? {} : json) }, body: method === 'GET' ? undefined : '{}' });
        expect(res.status, `${method} ${path} ${JSON.stringify(headers)}`).toBe(421);
        const body = res.json();
        const message = path === '/mcp' ? body.error.message : body.detail;
        expect(message, `${method} ${path}`).toMatch(/does not answer to the host name "evil\.example:\d+".*ALLOWED_HOSTS/);
        if (path !== '/mcp') expect(body.error).toMatchObject({ error_code: 'REQUEST.HOST_NOT_ALLOWED', retryable: false });
      }
    }
  }, 120_000);

  it('streams no backup and answers no MCP search for a rebinding page', async () => {
    const backup = await rawRequest(url, { method: 'POST', path: '/v1/admin/backup', headers: { host: `evil.example:${port}`, ...bearer } });
    expect(backup.status).toBe(421);
    expect(backup.headers['content-type']).toMatch(/application\/json/);
    const mcp = await rawRequest(url, { method: 'POST', path: '/mcp', headers: { host: `evil.example:${port}`, ...mcpHeaders }, body: searchCall });
    expect(mcp.status).toBe(421);
    expect(mcp.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    expect(mcp.body).not.toContain('leaves at nine');
  });

  it('answers its own names (127.0.0.1, localhost, *.localhost, IP addresses) and the names of ALLOWED_HOSTS', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `memex.localhost:${port}`, `localhost.:${port}`, `[::1]:${port}`, `10.1.2.3:${port}`, 'memex.example.com', 'MEMEX.example.com:443', 'box.tail.example']) {
      const res = await rawRequest(url, { path: '/v1/search?q=Lisbon', headers: { host, ...bearer } });
      expect(res.status, host).toBe(200);
      expect(res.body, host).toContain('Lisbon');
    }
    for (const host of ['tail.example', 'memex.example.com.evil.example', 'evil.example@127.0.0.1', `127.0.0.1:${port}/x`]) {
      expect((await rawRequest(url, { path: '/v1/search?q=Lisbon', headers: { host, ...bearer } })).status, host).toBe(421);
    }
  });

  it('refuses a page of another origin with 403 on POST and data routes and on /mcp; its own origin and no Origin work', async () => {
    const own = `http://127.0.0.1:${port}`;
    const foreign = ['http://evil.example', `http://localhost:${port}`, `http://127.0.0.1:${Number(port) + 1}`, 'null', 'https://tail.example'];
    for (const origin of foreign) {
      const ingest = await rawRequest(url, { method: 'POST', path: '/v1/ingest', headers: { host: `127.0.0.1:${port}`, origin, ...bearer, ...json }, body: JSON.stringify(noteBody()) });
      expect(ingest.status, origin).toBe(403);
      expect(ingest.json().error.error_code).toBe('REQUEST.ORIGIN_NOT_ALLOWED');
      const search = await rawRequest(url, { path: '/v1/search?q=Lisbon', headers: { host: `127.0.0.1:${port}`, origin, ...bearer } });
      expect(search.status, origin).toBe(403);
      expect(search.body).not.toContain('leaves at nine');
      const backup = await rawRequest(url, { method: 'POST', path: '/v1/admin/backup', headers: { host: `127.0.0.1:${port}`, origin, ...bearer } });
      expect(backup.status, origin).toBe(403);
      const mcp = await rawRequest(url, { method: 'POST', path: '/mcp', headers: { host: `127.0.0.1:${port}`, origin, ...mcpHeaders }, body: searchCall });
      expect(mcp.status, origin).toBe(403);
      expect(mcp.json().error.message).toMatch(/Requests from the page origin/);
      expect(mcp.body).not.toContain('leaves at nine');
    }
    for (const origin of [own, undefined, 'https://memex.example.com']) {
      const headers = { host: `127.0.0.1:${port}`, ...(origin ? { origin } : {}), ...bearer };
      const ingest = await rawRequest(url, { method: 'POST', path: '/v1/ingest', headers: { ...headers, ...json }, body: JSON.stringify(noteBody()) });
      expect(ingest.status, String(origin)).toBeLessThan(300);
      const mcp = await rawRequest(url, { method: 'POST', path: '/mcp', headers: { ...headers, ...mcpHeaders }, body: searchCall });
      expect(mcp.status, String(origin)).toBe(200);
      expect(mcp.body).toContain('leaves at nine');
    }
    // A reverse proxy that keeps the name: Host and Origin both memex.example.com, the scheme https.
    const proxied = await rawRequest(url, { method: 'POST', path: '/v1/ingest', headers: { host: 'memex.example.com', origin: 'https://memex.example.com', ...bearer, ...json }, body: JSON.stringify(noteBody()) });
    expect(proxied.status).toBeLessThan(300);
  });
});

describe('the early listener of memex serve', () => {
  it('refuses Host: evil.example with 421 while the server starts, and answers its own names', async () => {
    const early = await listenEarly({ host: '127.0.0.1', port: 0, database: 'pglite', version: 'test', allowedHosts: ['memex.example.com'] });
    try {
      const evil = await rawRequest(early.url, { path: '/v1/healthz', headers: { host: 'evil.example' } });
      expect(evil.status).toBe(421);
      expect(evil.json().detail).toMatch(/does not answer to the host name "evil\.example"/);
      const foreign = await rawRequest(early.url, { path: '/v1/readyz', headers: { origin: 'http://evil.example' } });
      expect(foreign.status).toBe(403);
      expect((await rawRequest(early.url, { path: '/v1/healthz' })).status).toBe(200);
      expect((await rawRequest(early.url, { path: '/v1/healthz', headers: { host: 'memex.example.com' } })).status).toBe(200);
    } finally {
      await early.close();
    }
  });
});

describe('settings', () => {
  it('refuses a placeholder AUTH_TOKEN or CATALOG_TOKEN, on loopback too, in one line', () => {
    for (const env of [{ AUTH_TOKEN: 'changeme' }, { AUTH_TOKEN: 'ChangeMe' }, { AUTH_TOKEN: 'secret' }, { CATALOG_TOKEN: 'changeme', AUTH_TOKEN: 'a-real-token-123' }]) {
      expect(() => loadServerConfig(env), JSON.stringify(env)).toThrow(ConfigError);
      expect(() => loadServerConfig(env)).toThrow(/^(AUTH|CATALOG)_TOKEN is a placeholder \("\w+"\), not a secret/);
    }
    expect(loadServerConfig({ AUTH_TOKEN: 'a-real-token-123' }).authToken).toBe('a-real-token-123');
  });

  it('reads ALLOWED_HOSTS and refuses an entry that is not a name', () => {
    expect(loadServerConfig({ ALLOWED_HOSTS: 'Memex.Example.com, *.tail.example,box:8443' }).allowedHosts).toEqual(['memex.example.com', '*.tail.example', 'box:8443']);
    expect(() => loadServerConfig({ ALLOWED_HOSTS: 'https://memex.example.com' })).toThrow(/ALLOWED_HOSTS: "https:\/\/memex\.example\.com" is not a host name/);
  });
});
