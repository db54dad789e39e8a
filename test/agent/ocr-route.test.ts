import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentServer } from '../../src/agent/server.ts';
import { startAgent } from '../../src/app/agent.ts';
import { isPublicAddress } from '../../src/agent/url-fetch.ts';
import { urlForLog } from '../../src/util/url.ts';
import { auth, testConfig } from './helpers.ts';
import { renderTextImage } from '../ocr/render-text.ts';

let agent: AgentServer;
let base: string;
let imageServer: http.Server;
let imageBase: string;
let agentPort: string;
let png: Buffer;

beforeAll(async () => {
  png = await renderTextImage('Parking permit 7731\nValid until March');
  imageServer = http.createServer((req, res) => {
    if (req.url === '/permit.png') {
      res.writeHead(200, { 'content-type': 'image/png', 'content-length': png.length });
      return res.end(png);
    }
    if (req.url === '/redirect-out') {
      res.writeHead(302, { location: 'http://203.0.113.9/permit.png' });
      return res.end();
    }
    if (req.url === '/redirect-agent') {
      // A redirect hop to the agent's own API, on a loopback port that is not allowed.
      res.writeHead(302, { location: `http://127.0.0.1:${agentPort}/v1/health` });
      return res.end();
    }
    if (req.url === '/redirect-in') {
      res.writeHead(302, { location: '/permit.png' });
      return res.end();
    }
    if (req.url === '/huge') {
      res.writeHead(200, { 'content-type': 'image/png' });
      return res.end(Buffer.alloc(300_000, 1));
    }
    res.writeHead(404);
    res.end();
  });
  await new Promise<void>((r) => imageServer.listen(0, '127.0.0.1', r));
  const imagePort = (imageServer.address() as AddressInfo).port;
  imageBase = `http://127.0.0.1:${imagePort}`;
  // Loopback is refused by default: the test image server is allowed by its exact host and port.
  const allowed = [`127.0.0.1:${imagePort}`, `localhost:${imagePort}`];
  const started = await startAgent({
    config: testConfig({ modules: { ocr: { timeout_ms: 60_000, max_image_bytes: 200_000, allowed_url_hosts: allowed } } }),
    port: 0,
    logger: false,
  });
  agent = started.app;
  base = started.url;
  agentPort = new URL(base).port;
});
afterAll(async () => {
  await agent?.close();
  await new Promise((r) => imageServer.close(r));
});

function checkResult(body: Record<string, any>) {
  expect(body.ocr_text).toMatch(/Parking permit 7731/);
  expect(body.ocr_text).toMatch(/Valid until March/);
  expect(body.ocr_boxes.length).toBeGreaterThanOrEqual(2);
  for (const box of body.ocr_boxes) {
    expect(box.level).toBe('line');
    for (const v of box.bbox) {
      expect(v).toBeGreaterThanOrEqual(0);
      expect(v).toBeLessThanOrEqual(1);
    }
    expect(box.confidence).toBeGreaterThanOrEqual(0);
    expect(box.confidence).toBeLessThanOrEqual(1);
  }
  expect(body.lang).toBe('en');
  expect(typeof body.tooling.vision).toBe('string');
  for (const k of ['read', 'ocr', 'total']) expect(typeof body.timings_ms[k], k).toBe('number');
}

async function ocrUrl(url: string) {
  return fetch(`${base}/v1/ocr`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url }) });
}

describe('POST /v1/ocr', () => {
  it('recognises an uploaded image (multipart "file")', async () => {
    const form = new FormData();
    form.append('file', new Blob([png], { type: 'image/png' }), 'permit.png');
    const res = await fetch(`${base}/v1/ocr`, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(200);
    checkResult((await res.json()) as Record<string, any>);
  });

  it('recognises an image fetched from an allowed loopback host:port, following a same-host redirect', async () => {
    const res = await ocrUrl(`${imageBase}/permit.png`);
    expect(res.status).toBe(200);
    checkResult((await res.json()) as Record<string, any>);
    expect((await ocrUrl(`${imageBase}/redirect-in`)).status).toBe(200);
    // A host name goes through the connect-time DNS check; localhost resolves to loopback only.
    expect((await ocrUrl(imageBase.replace('127.0.0.1', 'localhost') + '/permit.png')).status).toBe(200);
  });

  it('refuses loopback, private and link-local targets in every spelling, the agent itself included, and on redirect hops', async () => {
    for (const host of [
      `127.0.0.1:${agentPort}`, `localhost:${agentPort}`, `2130706433:${agentPort}`, `127.1:${agentPort}`, `0x7f.1:${agentPort}`,
      `017700000001:${agentPort}`, `[::1]:${agentPort}`, `[::ffff:127.0.0.1]:${agentPort}`, `0:${agentPort}`, '127.0.0.1',
      '10.0.0.1', '172.16.5.4', '192.168.1.1', '169.254.169.254', '100.64.0.1', '[fe80::1]', '[fd00::1]', '[::ffff:10.0.0.1]',
      '[64:ff9b::a00:1]',
    ]) {
      const res = await ocrUrl(`http://${host}/v1/health?X-Amz-Signature=secret`);
      expect(res.status, host).toBe(403);
      expect(((await res.json()) as { error: string }).error).toMatch(/not a public address/);
    }
    // The allowed host:port redirecting to another loopback port: the hop is checked and refused.
    expect((await ocrUrl(`${imageBase}/redirect-agent`)).status).toBe(403);
  });

  it('classifies addresses and logs URLs without their query strings', () => {
    for (const a of ['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '[2a00:1450::1]']) expect(isPublicAddress(a), a).toBe(true);
    for (const a of ['127.0.0.1', '::1', '::', '0.0.0.0', '10.1.2.3', '::ffff:192.168.0.1', 'fe80::1', '224.0.0.1', '255.255.255.255', 'not-an-ip']) {
      expect(isPublicAddress(a), a).toBe(false);
    }
    expect(urlForLog('https://bucket.example.org:9000/a/b.png?X-Amz-Signature=secret#frag')).toBe('https://bucket.example.org:9000/a/b.png');
  });

  it('refuses URLs to hosts that are not allowed, schemes other than http(s), and redirects out', async () => {
    const outside = await ocrUrl('http://203.0.113.9/permit.png');
    expect(outside.status).toBe(403);
    expect(((await outside.json()) as { error: string }).error).toMatch(/not a public address/);
    expect((await ocrUrl('http://[::ffff:10.0.0.1]/x.png')).status).toBe(403);
    expect((await ocrUrl('file:///etc/passwd')).status).toBe(400);
    expect((await ocrUrl('ftp://127.0.0.1/x.png')).status).toBe(400);
    expect((await ocrUrl('not a url')).status).toBe(400);
    expect((await ocrUrl(`${imageBase}/redirect-out`)).status).toBe(403);
    expect((await ocrUrl(`${imageBase}/missing.png`)).status).toBe(502);
  });

  it('enforces the size cap on URLs and uploads', async () => {
    expect((await ocrUrl(`${imageBase}/huge`)).status).toBe(413);
    const form = new FormData();
    form.append('file', new Blob([Buffer.alloc(300_000, 1)], { type: 'image/png' }), 'big.png');
    const res = await fetch(`${base}/v1/ocr`, { method: 'POST', headers: auth, body: form });
    expect(res.status).toBe(413);
  });

  it('answers 400 for a missing file, the wrong part name, or bytes that are not an image', async () => {
    const empty = await fetch(`${base}/v1/ocr`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: '{}' });
    expect(empty.status).toBe(400);
    const wrong = new FormData();
    wrong.append('image', new Blob([png], { type: 'image/png' }), 'permit.png');
    expect((await fetch(`${base}/v1/ocr`, { method: 'POST', headers: auth, body: wrong })).status).toBe(400);
    const junk = new FormData();
    junk.append('file', new Blob([Buffer.from('hello, not a png')], { type: 'image/png' }), 'x.png');
    const res = await fetch(`${base}/v1/ocr`, { method: 'POST', headers: auth, body: junk });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/Not a readable image/);
  });

  it('answers 503 when the OCR module is disabled', async () => {
    const { app, url } = await startAgent({ config: testConfig({ modules: { ocr: { enabled: false } } }), port: 0, logger: false });
    try {
      const res = await fetch(`${url}/v1/ocr`, { method: 'POST', headers: { ...auth, 'content-type': 'application/json' }, body: JSON.stringify({ url: `${imageBase}/permit.png` }) });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ error: 'OCR module is disabled' });
    } finally {
      await app.close();
    }
  });

  it('counts requests in ocr_requests_total', async () => {
    const text = await (await fetch(`${base}/v1/metrics`, { headers: auth })).text();
    const line = text.split('\n').find((l) => l.startsWith('ocr_requests_total '));
    expect(Number(line?.split(' ')[1])).toBeGreaterThanOrEqual(10);
  });
});
