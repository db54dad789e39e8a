/**
 * A body over BODY_LIMIT gets a 413 with a JSON body, also for a client that sends the whole body
 * before reading the answer (issue 33 item 10: a 20 MB body to /v1/ingest or /mcp had its connection
 * cut, "broken pipe"). Real sockets: inject never cuts anything.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let port: number;

beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  port = (gw.app.server.address() as net.AddressInfo).port;
}, 180_000);

afterAll(async () => {
  await gw?.close();
});

/**
 * Writes the request head and the whole body, waits until every byte was handed to the socket, and
 * only then reads the answer: what Python's http.client and many HTTP libraries do.
 */
function sendWholeThenRead(url: string, body: Buffer, chunked: boolean): Promise<{ status: number; headers: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let written = false;
    socket.on('error', (e) => reject(new Error(`${written ? 'after' : 'while'} sending the body: ${e.message}`)));
    const readAnswer = () => socket.on('data', (c: Buffer) => received.push(c));
    socket.on('end', () => {
      const text = Buffer.concat(received).toString('utf8');
      const [head, ...rest] = text.split('\r\n\r\n');
      let payload = rest.join('\r\n\r\n');
      if (/transfer-encoding: chunked/i.test(head)) payload = payload.replace(/^[0-9a-f]+\r\n/i, '').replace(/\r\n0\r\n\r\n$/, '');
      resolve({ status: Number(head.split(' ')[1]), headers: head, body: payload });
    });
    socket.on('connect', () => {
      const head = [
        `POST ${url} HTTP/1.1`,
        'Host: 127.0.0.1',
        `Authorization: Bearer ${TEST_TOKEN}`,
        'Content-Type: application/json',
        'Accept: application/json, text/event-stream',
        chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${body.length}`,
        '',
        '',
      ].join('\r\n');
      socket.write(head);
      const step = 256 * 1024;
      let last: Promise<void> = Promise.resolve();
      for (let i = 0; i < body.length; i += step) {
        const part = body.subarray(i, i + step);
        const data = chunked ? Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]) : part;
        last = new Promise((r, j) => socket.write(data, (e) => (e ? j(e) : r())));
        last.catch(() => undefined);
      }
      if (chunked) last = new Promise((r, j) => socket.write('0\r\n\r\n', (e) => (e ? j(e) : r())));
      last.then(() => {
        written = true;
        readAnswer(); // nothing was read before: the answer waited in the socket
      }, reject);
    });
  });
}

/** A JSON ingest body of about `bytes` bytes. */
function bigIngest(bytes: number): Buffer {
  return Buffer.from(JSON.stringify({ source_type: 'note', source_id: 'big', title: 'Big', content: { data: 'a'.repeat(bytes) } }));
}

describe(`bodies over the limit on ${backend}`, () => {
  it.each([
    ['/v1/ingest', false],
    ['/v1/ingest', true],
    ['/mcp', false],
    ['/mcp', true],
  ])('POST %s of 20 MB (chunked: %s) answers 413 with a JSON body', async (url, chunked) => {
    const res = await sendWholeThenRead(url, bigIngest(20 * 1024 * 1024), chunked);
    expect(res.status).toBe(413);
    expect(res.headers).toMatch(/content-type: application\/json/i);
    const body = JSON.parse(res.body);
    const message = url === '/mcp' ? body.error.message : body.detail;
    expect(message).toMatch(/larger than the limit of 10485760 bytes/);
    if (url === '/mcp') expect(body).toMatchObject({ jsonrpc: '2.0', id: null });
  });

  it('still answers on a new connection afterwards', async () => {
    const res = await fetch(`http://127.0.0.1:${port}/v1/healthz`);
    expect(res.status).toBe(200);
  });
});
