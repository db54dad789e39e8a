import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, secretsEqual, type AgentServer } from '../../src/agent/server.ts';
import { AgentBindError, startAgent } from '../../src/app/agent.ts';
import type { AgentModule } from '../../src/agent/modules.ts';
import { auth, SECRET, testConfig } from './helpers.ts';

const ROUTES: Array<[string, string]> = [
  ['GET', '/v1/health'],
  ['GET', '/v1/capabilities'],
  ['GET', '/v1/metrics'],
  ['POST', '/v1/ocr'],
  ['POST', '/v1/email/parse'],
  ['POST', '/v1/email/metadata'],
  ['POST', '/v1/email/classify-intent'],
  ['POST', '/v1/email/is-noise'],
  ['POST', '/v1/email/redact-pii'],
  ['GET', '/v1/no-such-route'],
];

describe('host agent server', () => {
  let app: AgentServer;
  beforeAll(async () => {
    app = await createAgentServer(testConfig({ modules: { mail: { enabled: true } } }), { logger: false });
  });
  afterAll(() => app.close());

  it('answers 401 {"error":"Unauthorized"} on every route without the secret, with a wrong one, and with a prefix of it', async () => {
    for (const [method, url] of ROUTES) {
      for (const headers of [{}, { 'x-auth': 'wrong' }, { 'x-auth': SECRET.slice(0, -1) }, { authorization: `Bearer ${SECRET}` }]) {
        const res = await app.inject({ method: method as 'GET', url, headers, payload: method === 'POST' ? {} : undefined });
        expect(res.statusCode, `${method} ${url} ${JSON.stringify(headers)}`).toBe(401);
        expect(res.json()).toEqual({ error: 'Unauthorized' });
      }
      const ok = await app.inject({ method: method as 'GET', url, headers: auth, payload: method === 'POST' ? {} : undefined });
      expect(ok.statusCode, `${method} ${url} with the secret`).not.toBe(401);
    }
  });

  it('compares secrets by digest (equal, unequal, different lengths)', () => {
    expect(secretsEqual(SECRET, SECRET)).toBe(true);
    expect(secretsEqual('a', SECRET)).toBe(false);
    expect(secretsEqual('', '')).toBe(true);
  });

  it('answers 404 {"error":"Not Found"} for unknown routes', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nope', headers: auth });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'Not Found' });
  });

  it('reports health with module summaries', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/health', headers: auth });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.status).toBe('healthy');
    expect(new Date(body.started_at).toString()).not.toBe('Invalid Date');
    expect(body.version).toMatch(/^\d+\.\d+\.\d+/);
    const byName = Object.fromEntries(body.module_summaries.map((m: { name: string }) => [m.name, m]));
    expect(byName.ocr).toMatchObject({ enabled: true, status: 'ready' });
    expect(byName.mail).toMatchObject({ enabled: true, status: 'ready' });
    expect(byName.chatapp).toMatchObject({ enabled: false, status: 'disabled' });
    expect(Object.keys(byName)).toEqual(
      expect.arrayContaining(['ocr', 'mail', 'chatapp', 'fswatch', 'contacts', 'calendar', 'reminders', 'notes', 'faces']),
    );
  });

  it('reports capabilities: enabled and permissions per module', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/capabilities', headers: auth });
    const { modules } = res.json();
    for (const name of ['ocr', 'mail', 'chatapp', 'fswatch', 'contacts', 'calendar', 'reminders', 'notes', 'faces']) {
      expect(typeof modules[name].enabled, name).toBe('boolean');
      expect(typeof modules[name].permissions, name).toBe('object');
    }
    expect(modules.chatapp.permissions).toHaveProperty('fda');
    expect(modules.ocr.config).toMatchObject({ languages: ['en'] });
  });

  it('returns 400 with the agent error shape for malformed JSON and 413 for an oversized body', async () => {
    const bad = await app.inject({
      method: 'POST',
      url: '/v1/email/redact-pii',
      headers: { ...auth, 'content-type': 'application/json' },
      payload: '{"text": ',
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json()).toEqual({ error: 'Request body must be valid JSON' });
    const small = await createAgentServer(testConfig({ body_limit_bytes: 2048 }), { logger: false });
    try {
      const big = await small.inject({
        method: 'POST',
        url: '/v1/email/redact-pii',
        headers: { ...auth, 'content-type': 'application/json' },
        payload: JSON.stringify({ text: 'x'.repeat(5000) }),
      });
      expect(big.statusCode).toBe(413);
      expect(big.json().error).toMatch(/larger than the limit/);
    } finally {
      await small.close();
    }
  });
});

describe('binding', () => {
  it('refuses non-loopback addresses before opening a socket', async () => {
    const config = testConfig();
    for (const host of ['0.0.0.0', '::', '192.168.1.10', '10.0.0.1', 'example.com', 'localhost']) {
      await expect(startAgent({ config, host, port: 0, logger: false }), host).rejects.toBeInstanceOf(AgentBindError);
    }
    await expect(startAgent({ config, host: '0.0.0.0', port: 0, logger: false })).rejects.toThrow(/loopback address only/);
  });

  it('listens on 127.0.0.1 and serves real HTTP', async () => {
    const { app, url } = await startAgent({ config: testConfig(), port: 0, logger: false });
    try {
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      const res = await fetch(`${url}/v1/health`, { headers: auth });
      expect(res.status).toBe(200);
      const unauth = await fetch(`${url}/v1/health`);
      expect(unauth.status).toBe(401);
    } finally {
      await app.close();
    }
  });
});

describe('modules and shutdown', () => {
  it('lets a collector module plug in, replace a stub, and finishes in-flight requests on close', async () => {
    let finished = false;
    // The handler says when it has started and finishes only once close() was called: conditions, not times.
    let started!: () => void;
    const handlerStarted = new Promise<void>((r) => (started = r));
    let release!: () => void;
    const closeCalled = new Promise<void>((r) => (release = r));
    const slowChat = (): AgentModule => ({
      name: 'chatapp',
      enabled: true,
      permissions: () => ({ fda: true }),
      status: () => 'ready',
      registerRoutes(app) {
        app.post('/v1/collectors/chatapp:run', async () => {
          started();
          await closeCalled;
          finished = true;
          return { status: 'completed' };
        });
      },
    });
    const { app, url } = await startAgent({ config: testConfig(), port: 0, logger: false, modules: [slowChat] });
    const caps = (await (await fetch(`${url}/v1/capabilities`, { headers: auth })).json()) as { modules: Record<string, unknown> };
    expect(caps.modules.chatapp).toMatchObject({ enabled: true, permissions: { fda: true }, status: 'ready' });

    const inFlight = fetch(`${url}/v1/collectors/chatapp:run`, { method: 'POST', headers: auth });
    await handlerStarted;
    const closed = app.close();
    release();
    const res = await inFlight;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ status: 'completed' });
    await closed;
    expect(finished).toBe(true);
    await expect(fetch(`${url}/v1/health`, { headers: auth })).rejects.toThrow();
  });
});
