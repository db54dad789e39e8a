/**
 * Issue 47 item 2 on the host agent, over real sockets (the Host header is the point): a request naming another
 * host (DNS rebinding) is refused with 421 before the secret is looked at, a page of another origin with 403;
 * the agent's own names, requests without Origin and the names of `allowed_hosts` are answered. The secret is
 * never a placeholder: createAgentServer refuses one, startAgent generates one when none is set.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentConfigError } from '../../src/agent/config.ts';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { startAgent } from '../../src/app/agent.ts';
import { rawRequest } from '../helpers/raw-http.ts';
import { auth, SECRET, testConfig } from './helpers.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-agent-host-'));
const mail = path.join(dir, 'mail');
fs.mkdirSync(mail);
fs.writeFileSync(
  path.join(mail, 'private.eml'),
  'From: Dana <dana@example.org>\r\nTo: me@example.org\r\nSubject: The private subject\r\nDate: Mon, 2 Mar 2026 10:00:00 +0000\r\n\r\nThe private body.\r\n',
);
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

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
  ['GET', '/v1/collectors/email_local/state'],
  ['GET', '/v1/no-such-route'],
];

let app: AgentServer;
let url: string;
let port: string;
beforeAll(async () => {
  ({ app, url } = await startAgent({
    config: testConfig({ allowed_hosts: ['agent.example', '*.proxy.example'], modules: { mail: { enabled: true, allowed_roots: [mail] } } }),
    port: 0,
    logger: false,
  }));
  port = new URL(url).port;
});
afterAll(() => app?.close());

const json = { 'content-type': 'application/json' };
const parse = (headers: Record<string, string>) =>
  rawRequest(url, { method: 'POST', path: '/v1/email/parse', headers: { ...auth, ...json, ...headers }, body: JSON.stringify({ path: path.join(mail, 'private.eml') }) });

describe('the host agent answers only to its own names', () => {
  it('refuses Host: evil.example with 421 on every route, before the secret, and reads no mail file for it', async () => {
    for (const [method, route] of ROUTES) {
      for (const headers of [{ host: `evil.example:${port}` }, { host: 'evil.example' }, { host: `evil.example:${port}`, ...auth }]) {
        const res = await rawRequest(url, { method, path: route, headers, body: method === 'POST' ? '{}' : undefined });
        expect(res.status, `${method} ${route} ${JSON.stringify(headers)}`).toBe(421);
        expect(res.json().error).toMatch(/does not answer to the host name "evil\.example/);
      }
    }
    const rebound = await parse({ host: `evil.example:${port}`, origin: `http://evil.example:${port}` });
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain('private');
  });

  it('answers its own names: 127.0.0.1, localhost, a *.localhost name and IP addresses', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `memex.localhost:${port}`, 'LOCALHOST', `[::1]:${port}`, `192.168.1.20:${port}`]) {
      const res = await parse({ host });
      expect(res.status, host).toBe(200);
      expect(res.json().subject).toBe('The private subject');
    }
  });

  it('answers the names of allowed_hosts (a reverse proxy), and a *.domain entry for names under it only', async () => {
    expect((await parse({ host: 'agent.example' })).status).toBe(200);
    expect((await parse({ host: 'a.proxy.example:443' })).status).toBe(200);
    expect((await parse({ host: 'proxy.example' })).status).toBe(421);
    expect((await parse({ host: 'agent.example.evil.example' })).status).toBe(421);
    expect((await parse({ host: 'evil@agent.example' })).status).toBe(421);
  });

  it('refuses a page of another origin with 403 (another port on 127.0.0.1 included), answers its own origin and no Origin', async () => {
    for (const origin of ['http://evil.example', `http://localhost:${Number(port) + 1}`, `http://127.0.0.1:${Number(port) + 1}`, 'null', 'file://']) {
      const res = await parse({ host: `127.0.0.1:${port}`, origin });
      expect(res.status, origin).toBe(403);
      expect(res.json().error).toMatch(/Requests from the page origin .* are refused/);
      expect(res.body).not.toContain('private subject');
    }
    expect((await parse({ host: `127.0.0.1:${port}`, origin: `http://127.0.0.1:${port}` })).status).toBe(200);
    expect((await parse({ host: 'agent.example', origin: 'https://agent.example' })).status).toBe(200);
    expect((await parse({ host: `127.0.0.1:${port}`, origin: 'https://agent.example' })).status).toBe(200);
    expect((await parse({ host: `127.0.0.1:${port}` })).status).toBe(200);
  });
});

describe('the host agent never runs with a placeholder or empty secret', () => {
  it('createAgentServer refuses changeme and an empty secret', async () => {
    for (const secret of ['changeme', 'CHANGEME', '', '   ']) {
      const config = testConfig();
      config.auth.secret = secret;
      await expect(createAgentServer(config, { logger: false }), JSON.stringify(secret)).rejects.toBeInstanceOf(AgentConfigError);
    }
  });

  it('startAgent without a secret generates one in auth.secret_file (0600), uses it, and keeps it for the next start', async () => {
    const file = path.join(dir, 'state', 'agent-secret');
    const config = testConfig({ auth: { secret_file: file } });
    config.auth.secret = '';
    const first = await startAgent({ config, port: 0, logger: false });
    let secret: string;
    try {
      expect(first.secretGenerated).toBe(true);
      expect(first.secretFile).toBe(file);
      secret = fs.readFileSync(file, 'utf8').trim();
      expect(secret).not.toBe(SECRET);
      expect(secret.length).toBeGreaterThanOrEqual(40);
      expect(fs.statSync(file).mode & 0o777).toBe(0o600);
      expect((await rawRequest(first.url, { path: '/v1/health', headers: { 'x-auth': secret } })).status).toBe(200);
      expect((await rawRequest(first.url, { path: '/v1/health', headers: { 'x-auth': '' } })).status).toBe(401);
    } finally {
      await first.app.close();
    }
    const second = await startAgent({ config, port: 0, logger: false });
    try {
      expect(second.secretGenerated).toBe(false);
      expect((await rawRequest(second.url, { path: '/v1/health', headers: { 'x-auth': secret } })).status).toBe(200);
    } finally {
      await second.app.close();
    }
  });
});
