/**
 * The server's log as an operator reads it (issue 35, item 9): one line per request when it is answered (method,
 * path without the query string, status, duration), health checks only at debug, readable lines on a terminal and
 * JSON lines anywhere else.
 */
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

/** A stream that keeps what is written, looking like a terminal or not. */
function capture(isTTY: boolean) {
  const lines: string[] = [];
  let rest = '';
  const stream = Object.assign(
    new Writable({
      write(chunk, _enc, done) {
        const parts = (rest + chunk.toString()).split('\n');
        rest = parts.pop() ?? '';
        lines.push(...parts.filter(Boolean));
        done();
      },
    }),
    { isTTY },
  );
  return { stream, lines };
}

/** Each test starts its own gateway (a fresh database): on a loaded machine that alone can take a minute. */
const GATEWAY_START = 180_000;

let gw: TestGateway | undefined;
afterEach(async () => {
  await gw?.close();
  gw = undefined;
});

async function requests(g: TestGateway) {
  await g.app.inject({ method: 'GET', url: '/v1/healthz' });
  await g.app.inject({ method: 'GET', url: '/v1/search?q=secret+words', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
  await new Promise((r) => setImmediate(r));
}

describe('request log', () => {
  it('elsewhere than a terminal: one JSON line per request, health checks at debug, no query strings', async () => {
    const out = capture(false);
    gw = await startTestGateway({ config: { logLevel: 'debug', logFormat: 'auto' }, logStream: out.stream });
    await requests(gw);
    const records = out.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const perRequest = records.filter((r) => typeof r.reqId === 'string');
    const search = perRequest.filter((r) => JSON.stringify(r).includes('/v1/search'));
    expect(search).toHaveLength(1);
    expect(search[0]).toMatchObject({ level: 30, method: 'GET', url: '/v1/search', status: 200 });
    expect(typeof search[0].ms).toBe('number');
    const health = perRequest.filter((r) => JSON.stringify(r).includes('/v1/healthz'));
    expect(health).toHaveLength(1);
    expect(health[0]).toMatchObject({ level: 20, url: '/v1/healthz', status: 200 });
    expect(out.lines.join('\n')).not.toContain('secret');
  }, GATEWAY_START);

  it('at the default level a health check leaves no line', async () => {
    const out = capture(false);
    gw = await startTestGateway({ config: { logLevel: 'info', logFormat: 'auto' }, logStream: out.stream });
    await requests(gw);
    expect(out.lines.join('\n')).not.toContain('healthz');
    expect(out.lines.filter((l) => l.includes('/v1/search'))).toHaveLength(1);
  }, GATEWAY_START);

  it('on a terminal: one readable line per request', async () => {
    const out = capture(true);
    gw = await startTestGateway({ config: { logLevel: 'info', logFormat: 'auto' }, logStream: out.stream });
    await requests(gw);
    const plain = out.lines.map((l) => l.replace(/\x1b\[[0-9;]*m/g, ''));
    const search = plain.filter((l) => l.includes('/v1/search'));
    expect(search).toHaveLength(1);
    expect(search[0]).toMatch(/^\d\d:\d\d:\d\d INFO {2}GET \/v1\/search 200 \d+ ms$/);
    expect(plain.every((l) => !l.startsWith('{'))).toBe(true);
  }, GATEWAY_START);
});
