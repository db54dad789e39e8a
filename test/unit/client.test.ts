/**
 * The one rule every client verb uses to find the server and its token (src/client/target.ts), and the
 * messages a user sees when the server is absent or refuses the token.
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { text } from 'node:stream/consumers';
import { ClientError as ServerError } from '../../src/client/errors.ts';
import { createServerClient, runningServer, serverOrDatabase } from '../../src/client/server.ts';
import { resolveServerTarget } from '../../src/client/target.ts';
import type { Database } from '../../src/db/types.ts';

describe('resolveServerTarget', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-client-'));
    fs.writeFileSync(path.join(dataDir, 'auth-token'), 'from-file\n');
  });
  afterAll(() => fs.rmSync(dataDir, { recursive: true, force: true }));

  it('takes flags, then MEMEX_URL / AUTH_TOKEN, then DATA_DIR/auth-token, then the default port', () => {
    const notes: string[] = [];
    const warn = (m: string) => notes.push(m);
    const env = { MEMEX_URL: 'http://env.example:1/', AUTH_TOKEN: 'env-token', DATA_DIR: dataDir, PORT: '9999' };
    expect(resolveServerTarget({ url: 'http://flag:2', token: 'flag-token' }, env, warn)).toMatchObject({ url: 'http://flag:2', token: 'flag-token', tokenSource: '--token' });
    expect(resolveServerTarget({}, env, warn)).toMatchObject({ url: 'http://env.example:1', token: 'env-token', tokenSource: 'AUTH_TOKEN' });
    expect(resolveServerTarget({}, { DATA_DIR: dataDir, PORT: '9999' }, warn)).toMatchObject({
      url: 'http://127.0.0.1:9999',
      token: 'from-file',
      tokenSource: path.join(dataDir, 'auth-token'),
    });
    expect(resolveServerTarget({}, { DATA_DIR: path.join(dataDir, 'none') }, warn)).toMatchObject({ url: 'http://127.0.0.1:8085', token: undefined, tokenSource: 'none' });
    expect(notes).toEqual([]);
  });

  it('still reads the old names, with a deprecation note, and the new names win', () => {
    const notes: string[] = [];
    const warn = (m: string) => notes.push(m);
    expect(resolveServerTarget({ gateway: 'http://old-flag:1' }, {}, warn).url).toBe('http://old-flag:1');
    expect(resolveServerTarget({}, { MEMEX_GATEWAY_URL: 'http://old-a:1' }, warn).url).toBe('http://old-a:1');
    expect(resolveServerTarget({}, { SVC_GATEWAY_URL: 'http://old-b:1', SVC_GATEWAY_TOKEN: 'old-t' }, warn)).toMatchObject({ url: 'http://old-b:1', token: 'old-t' });
    expect(notes.join('\n')).toMatch(/--gateway is deprecated; use --url/);
    expect(notes.join('\n')).toMatch(/MEMEX_GATEWAY_URL is deprecated; set MEMEX_URL/);
    expect(notes.join('\n')).toMatch(/SVC_GATEWAY_URL is deprecated/);
    expect(notes.join('\n')).toMatch(/SVC_GATEWAY_TOKEN is deprecated for memex client commands; set AUTH_TOKEN/);
    notes.length = 0;
    expect(resolveServerTarget({}, { MEMEX_URL: 'http://new:1', SVC_GATEWAY_URL: 'http://old:1', AUTH_TOKEN: 'new', SVC_GATEWAY_TOKEN: 'old' }, warn)).toMatchObject({ url: 'http://new:1', token: 'new' });
    expect(notes).toEqual([]);
  });

  it('refuses a URL that is not http(s)', () => {
    expect(() => resolveServerTarget({ url: 'ftp://x' }, {}, () => {})).toThrow(/must be http/);
    expect(() => resolveServerTarget({ url: 'not a url' }, {}, () => {})).toThrow(/must be http/);
  });
});

/** A loopback URL where nothing listens (a port just freed). */
async function deadUrl(): Promise<string> {
  const closed = http.createServer();
  await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
  const port = (closed.address() as AddressInfo).port;
  await new Promise<void>((r) => closed.close(() => r()));
  return `http://127.0.0.1:${port}`;
}

describe('createServerClient', () => {
  let server: http.Server;
  let url: string;
  beforeAll(async () => {
    server = http.createServer((req, res) => {
      if (req.url === '/v1/healthz') {
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      } else if (req.headers.authorization !== 'Bearer right') {
        res.writeHead(401, { 'content-type': 'application/json' }).end('{"detail":"Missing or invalid token"}');
      } else if (req.url === '/v1/lines') {
        res.writeHead(200, { 'content-type': 'application/x-ndjson' }).end('{"a":1}\n{"b":2}\n');
      } else if (req.url?.startsWith('/v1/echo')) {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ url: req.url }));
      } else {
        res.writeHead(422, { 'content-type': 'application/json' }).end(JSON.stringify({ detail: [{ loc: ['query', 'q'], msg: 'too long', type: 'value_error' }] }));
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  it('sends the bearer token and the query, and returns the JSON body', async () => {
    const client = createServerClient({ url, token: 'right', tokenSource: 'AUTH_TOKEN' });
    expect(await client.request('GET', '/v1/echo', { query: { q: 'a b', type: ['email', 'file'], skip: undefined } })).toEqual({
      url: '/v1/echo?q=a+b&type=email&type=file',
    });
  });

  it('explains a refused token, a validation error and an absent server', async () => {
    const wrong = createServerClient({ url, token: 'wrong', tokenSource: 'AUTH_TOKEN' });
    await expect(wrong.request('GET', '/v1/echo')).rejects.toThrow(/refused the request \(401\): the token from AUTH_TOKEN; pass --token/);
    const right = createServerClient({ url, token: 'right', tokenSource: '--token' });
    const err = await right.request('GET', '/v1/other').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ServerError);
    expect((err as ServerError).status).toBe(422);
    expect((err as Error).message).toMatch(/answered 422: query\.q: too long/);
    const absent = createServerClient({ url: await deadUrl(), token: undefined, tokenSource: 'none' });
    await expect(absent.request('GET', '/v1/echo')).rejects.toThrow(/no memex server answers at .*ECONNREFUSED.*memex serve/);
  });

  it('streams a 2xx body, and explains a refusal the same way as request', async () => {
    const client = createServerClient({ url, token: 'right', tokenSource: '--token' });
    expect(await text(await client.stream('GET', '/v1/lines'))).toBe('{"a":1}\n{"b":2}\n');
    await expect(client.stream('GET', '/v1/other')).rejects.toThrow(/answered 422: query\.q: too long/);
    const wrong = createServerClient({ url, token: 'wrong', tokenSource: 'AUTH_TOKEN' });
    await expect(wrong.stream('GET', '/v1/lines')).rejects.toThrow(/refused the request \(401\)/);
  });

  it('serverOrDatabase asks a running server and opens the database only when nothing listens', async () => {
    let opened = 0;
    let closed = 0;
    const openDatabase = async () => {
      opened++;
      return { close: async () => void closed++ } as unknown as Database;
    };
    const where = (target: string) => ({ flags: { url: target, token: 'right' }, env: {}, openDatabase });
    const via = (target: string) => serverOrDatabase(where(target), async (s) => `server ${s.target.url}`, async () => 'database');
    expect(await via(url)).toBe(`server ${url}`);
    expect(opened).toBe(0);
    expect(await runningServer({ url: await deadUrl() }, {})).toBeUndefined();
    expect(await via(await deadUrl())).toBe('database');
    expect({ opened, closed }).toEqual({ opened: 1, closed: 1 });
    // The database is closed when the work on it fails too.
    await expect(serverOrDatabase(where(await deadUrl()), async () => 0, async () => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect({ opened, closed }).toEqual({ opened: 2, closed: 2 });
  });
});
