/**
 * A backup whose client goes away (curl -m 1, Ctrl-C of `memex backup`, a proxy's timeout) costs only
 * that request (issue 33 item 8): the connection is cut at several points of the stream, and after
 * each cut the server still answers, nothing is left unhandled, and a whole backup still works.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fileUpload } from '../files/multipart.ts';
import { backend, createTestDatabase } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let port: number;
const lines: string[] = [];
const unhandled: unknown[] = [];
const onUnhandled = (e: unknown) => unhandled.push(e);

const outcomes = () => lines.filter((l) => /"msg":"backup (written|failed|abandoned)/.test(l)).length;

/** Sends POST /v1/admin/backup over a real socket and cuts it once `cut` bytes came (0: before any). */
function backupCutAt(cut: number): Promise<{ received: number; whole: Buffer | undefined }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let received = 0;
    let settled = false;
    const finish = (whole: Buffer | undefined) => {
      if (settled) return;
      settled = true;
      resolve({ received, whole });
    };
    socket.on('connect', () => {
      socket.write(`POST /v1/admin/backup HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TEST_TOKEN}\r\nConnection: close\r\n\r\n`);
      if (cut === 0) setImmediate(() => (socket.destroy(), finish(undefined)));
    });
    socket.on('data', (c: Buffer) => {
      if (settled) return;
      received += c.length;
      chunks.push(c);
      if (cut > 0 && received >= cut) {
        socket.destroy();
        finish(undefined);
      }
    });
    socket.on('end', () => finish(Buffer.concat(chunks)));
    socket.on('error', (e) => (settled ? undefined : reject(e)));
  });
}

async function healthz(): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}/v1/healthz`);
  return res.status;
}

async function waitForOutcomes(n: number) {
  // The server notices a cut connection asynchronously; wait until it has settled each backup.
  for (let i = 0; i < 600 && outcomes() < n; i++) await new Promise((r) => setTimeout(r, 100));
}

beforeAll(async () => {
  process.on('unhandledRejection', onUnhandled);
  process.on('uncaughtException', onUnhandled);
  const logStream = new Writable({
    write(chunk, _enc, done) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  });
  const testDb = await createTestDatabase();
  gw = await startTestGateway({ testDb, config: { databaseUrl: testDb.url, logLevel: 'info', logFormat: 'json' } as any, files: {}, logStream });
  for (let i = 0; i < 3; i++) {
    // Incompressible stored files, so the stream has an objects section to be cut inside.
    const text = crypto.randomBytes(96 * 1024).toString('base64');
    const up = fileUpload({ path: `/docs/blob-${i}.txt`, mtime: 1767225600 + i }, Buffer.from(text), `blob-${i}.txt`, 'text/plain');
    const res = await gw.app.inject({ method: 'POST', url: '/v1/ingest/file', payload: up.payload, headers: { ...up.headers, authorization: `Bearer ${TEST_TOKEN}` } });
    expect(res.statusCode).toBe(202);
  }
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  port = (gw.app.server.address() as net.AddressInfo).port;
}, 180_000);

afterAll(async () => {
  await gw?.close();
  process.off('unhandledRejection', onUnhandled);
  process.off('uncaughtException', onUnhandled);
});

describe(`an interrupted backup on ${backend}`, () => {
  it('costs only its own request, wherever the connection is cut', async () => {
    const full = await backupCutAt(Number.MAX_SAFE_INTEGER);
    expect(full.whole).toBeDefined();
    const size = full.whole!.length;
    expect(full.whole!.includes(Buffer.from('memex-backup.json'))).toBe(true);
    expect(size).toBeGreaterThan(300 * 1024);
    await waitForOutcomes(1);

    // Before any byte, after the headers, inside the database part, inside the objects, near the end.
    const cuts = [0, 1, 2048, Math.floor(size / 4), Math.floor(size / 2), Math.floor((size * 3) / 4), size - 600];
    let n = 1;
    for (const cut of cuts) {
      const r = await backupCutAt(cut);
      expect(r.whole, `cut at ${cut} bytes`).toBeUndefined();
      n++;
      await waitForOutcomes(n);
      expect(unhandled.map(String), `after a cut at ${cut} of ${size} bytes`).toEqual([]);
      expect(await healthz()).toBe(200);
    }
    expect(outcomes()).toBe(n);

    // And a whole backup afterwards is complete, with its manifest.
    const again = await backupCutAt(Number.MAX_SAFE_INTEGER);
    expect(again.whole!.includes(Buffer.from('"type": "memex-backup"'))).toBe(true);
    expect(unhandled).toEqual([]);
  }, 300_000);
});
