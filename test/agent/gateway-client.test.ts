import Fastify, { type FastifyInstance } from 'fastify';
import multipart from '@fastify/multipart';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createGatewayClient, GatewayHttpError, type GatewayClientOptions } from '../../src/agent/gateway-client.ts';

interface Seen {
  at: number;
  method: string;
  url: string;
  headers: Record<string, unknown>;
  body: unknown;
}

let server: FastifyInstance;
let base: string;
let seen: Seen[] = [];
/** Statuses the fake gateway answers, in order; 202 once the script runs out. */
let script: number[] = [];
let delayMs = 0;

beforeAll(async () => {
  server = Fastify({ forceCloseConnections: true });
  await server.register(multipart);
  const handler = async (req: any, reply: any) => {
    // This test's script and log, taken on arrival: a request of an earlier test that is still being
    // answered (the timeout test leaves three sleeping) must not take a later test's scripted answers.
    const [mySeen, myScript] = [seen, script];
    let body: unknown = req.body;
    if (req.isMultipart()) {
      // Every part in order (`list`), and the last of each name by its name.
      const list: Array<{ name: string; filename?: string; mimetype?: string; bytes?: Buffer; value?: unknown }> = [];
      const parts: Record<string, unknown> = { list };
      for await (const part of req.parts()) {
        if (part.type === 'file') {
          const data = await part.toBuffer();
          parts[part.fieldname] = { filename: part.filename, mimetype: part.mimetype, data: data.toString('utf8') };
          list.push({ name: part.fieldname, filename: part.filename, mimetype: part.mimetype, bytes: data });
        } else {
          parts[part.fieldname] = part.value;
          list.push({ name: part.fieldname, value: part.value });
        }
      }
      body = parts;
    }
    mySeen.push({ at: performance.now(), method: req.method, url: req.url, headers: req.headers, body });
    if (delayMs) await new Promise((r) => setTimeout(r, delayMs));
    const status = myScript.shift() ?? 202;
    if (status === 400) return reply.code(400).send({ detail: [{ loc: ['body', 'source_type'], msg: 'field required', type: 'missing' }] });
    if (status === 507 || status === 413) {
      // The gateway's error envelope: a full disk may be sent again, a too-large file not.
      const retryable = status === 507;
      return reply.code(status).send({ detail: 'refused', error: { error_code: retryable ? 'STORAGE.DISK_FULL' : 'INGEST.FILE_TOO_LARGE', message: 'refused', retryable } });
    }
    if (status >= 400) return reply.code(status).send({ error_code: 'SLOW_DOWN', message: 'retry later' });
    return reply.code(status).send({ submission_id: 's-1', doc_id: 'd-1', status: 'submitted', duplicate: false });
  };
  server.post('/v1/ingest', handler);
  server.post('/v1/ingest:batch', handler);
  server.post('/v1/ingest/file', handler);
  server.post('/v1/ingest/file:batch', handler);
  server.post('/v1/ingest/originals', handler);
  await server.listen({ host: '127.0.0.1', port: 0 });
  base = `http://127.0.0.1:${(server.server.address() as { port: number }).port}`;
});
afterAll(() => server.close());
beforeEach(() => {
  seen = [];
  script = [];
  delayMs = 0;
});

const DOC = { source_type: 'email_local', source_id: 'email:m1', content: { mime_type: 'text/plain', data: 'PRIVATE BODY TEXT 42' } };

function client(extra: Partial<GatewayClientOptions> = {}) {
  const sleeps: number[] = [];
  const logs: string[] = [];
  const c = createGatewayClient({
    baseUrl: base,
    authToken: 'gw-token',
    sleep: async (ms) => {
      sleeps.push(ms);
    },
    logger: { warn: (obj, msg) => logs.push(`${msg} ${JSON.stringify(obj)}`) },
    ...extra,
  });
  return { c, sleeps, logs };
}

describe('gateway client against a local server', () => {
  it('posts one document with Bearer token and Idempotency-Key', async () => {
    const { c, sleeps } = client();
    const res = await c.submitDocument(DOC, { idempotencyKey: 'idem-1' });
    expect(res).toEqual({ status: 202, body: { submission_id: 's-1', doc_id: 'd-1', status: 'submitted', duplicate: false } });
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ method: 'POST', url: '/v1/ingest', body: DOC });
    expect(seen[0].headers).toMatchObject({ authorization: 'Bearer gw-token', 'idempotency-key': 'idem-1', 'content-type': 'application/json' });
    expect(sleeps).toEqual([]);
  });

  it('retries 429 and 503 after 0.5 s then 1.0 s and succeeds on the third attempt', async () => {
    script = [429, 503];
    const { c, sleeps } = client();
    const res = await c.submitDocument(DOC);
    expect(res.status).toBe(202);
    expect(seen).toHaveLength(3);
    expect(sleeps).toEqual([500, 1000]);
  });

  it('gives up after three attempts with status -1 and "Exceeded retry attempts"', async () => {
    script = [503, 429, 503];
    const { c, sleeps } = client();
    const err = await c.submitDocument(DOC).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayHttpError);
    expect(err.status).toBe(-1);
    expect(err.message).toBe('Exceeded retry attempts');
    expect(err.attempts).toEqual([503, 429, 503]);
    expect(seen).toHaveLength(3);
    expect(sleeps).toEqual([500, 1000]);
  });

  it('fails at once on other 4xx, logging the response body but never the document text', async () => {
    script = [400];
    const { c, sleeps, logs } = client();
    const err = await c.submitDocument(DOC).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayHttpError);
    expect(err.status).toBe(400);
    expect(err.body).toContain('field required');
    expect(seen).toHaveLength(1);
    expect(sleeps).toEqual([]);
    expect(logs.join('\n')).toContain('field required');
    expect(logs.join('\n')).not.toContain('PRIVATE BODY TEXT');
  });

  it('waits at least ~0.5 s and ~1.0 s between real attempts', async () => {
    script = [503, 429];
    const c = createGatewayClient({ baseUrl: base }); // real sleep
    await c.submitDocument(DOC);
    expect(seen).toHaveLength(3);
    const gap1 = seen[1].at - seen[0].at;
    const gap2 = seen[2].at - seen[1].at;
    expect(gap1).toBeGreaterThanOrEqual(450);
    expect(gap2).toBeGreaterThanOrEqual(950);
    expect(gap2).toBeGreaterThan(gap1);
  });

  it('gives an upload four attempts, 1 s, 3 s and 10 s apart, and says what each met', async () => {
    script = [503, 503, 503, 503];
    const { c, sleeps } = client({ backoffMs: [500, 1000] });
    const meta = { source: 'email', path: 'email/a.txt', filename: 'a.txt', mime_type: 'text/plain', sha256: 'a'.repeat(64), size: 5 } as never;
    const err = await c.uploadFile(meta, Buffer.from('hello')).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayHttpError);
    expect(err.message).toBe('Exceeded retry attempts');
    expect(seen).toHaveLength(4);
    expect(sleeps).toEqual([1000, 3000, 10000]);
    expect(err.describe()).toBe('Exceeded retry attempts (4 attempts: 503 Service Unavailable; 503 Service Unavailable; 503 Service Unavailable; 503 Service Unavailable)');
  });

  it('asks again when the gateway\'s envelope says retryable (a full disk), not when it says not', async () => {
    script = [507];
    const once = client();
    expect((await once.c.submitDocument(DOC)).status).toBe(202);
    expect(seen).toHaveLength(2);
    expect(once.sleeps).toEqual([500]);

    seen = [];
    script = [507, 507, 507];
    const err = await client().c.submitDocument(DOC).catch((e) => e);
    expect(err).toMatchObject({ status: -1, message: 'Exceeded retry attempts', attempts: [507, 507, 507] });
    expect(err.describe()).toBe('Exceeded retry attempts (3 attempts: 507 Insufficient Storage; 507 Insufficient Storage; 507 Insufficient Storage)');

    seen = [];
    script = [413];
    const tooLarge = await client().c.submitDocument(DOC).catch((e) => e);
    expect(tooLarge).toMatchObject({ status: 413, message: 'Gateway answered 413', attempts: [413] });
    expect(seen).toHaveLength(1);
  });

  it('retries transport failures and timeouts, then reports -1', async () => {
    const dead = client({ baseUrl: 'http://127.0.0.1:1' });
    const err = await dead.c.submitDocument(DOC).catch((e) => e);
    expect(err).toMatchObject({ status: -1, message: 'Exceeded retry attempts', attempts: [0, 0, 0] });
    expect(err.describe()).toMatch(/^Exceeded retry attempts \(3 attempts: fetch failed \(.+\); /);
    delayMs = 500;
    const slow = client({ timeoutSeconds: 0.1 });
    const err2 = await slow.c.submitDocument(DOC).catch((e) => e);
    expect(err2).toMatchObject({ status: -1, attempts: [0, 0, 0] });
    expect(slow.logs.join('\n')).toMatch(/timed out after 100 ms/);
  });

  it('sends batches to <ingest_path>:batch', async () => {
    const { c } = client();
    await c.submitBatch([DOC, { ...DOC, source_id: 'email:m2' }]);
    expect(seen[0].url).toBe('/v1/ingest:batch');
    expect((seen[0].body as { documents: unknown[] }).documents).toHaveLength(2);
    expect(seen[0].headers['idempotency-key']).toBeUndefined();
  });

  it('uploads files as multipart meta + upload, rebuilding the body on retry', async () => {
    script = [429];
    const { c } = client();
    const meta = { source: 'email_local', path: 'email/m1/a.txt', filename: 'a.txt', mime_type: 'text/plain', sha256: 'abc', size: 5 };
    const res = await c.uploadFile(meta, Buffer.from('hello'), { idempotencyKey: 'email-attachment:m1:abc' });
    expect(res.status).toBe(202);
    expect(seen).toHaveLength(2);
    for (const s of seen) {
      expect(s.url).toBe('/v1/ingest/file');
      expect(s.headers['idempotency-key']).toBe('email-attachment:m1:abc');
      const body = s.body as Record<string, any>;
      expect(JSON.parse(body.meta.data)).toEqual(meta);
      expect(body.upload).toEqual({ filename: 'a.txt', mimetype: 'text/plain', data: 'hello' });
    }
  });

  it('sends a batch of files and of originals byte for byte, each after its meta, whatever the bytes and names hold', async () => {
    const { c } = client();
    // Bytes that look like multipart framing, every byte value, and a name with a quote, a line break and accents.
    const tricky = Buffer.concat([Buffer.from('\r\n--boundary\r\nContent-Disposition: form-data; name="meta"\r\n\r\n'), Buffer.from(Array.from({ length: 256 }, (_, i) => i))]);
    const meta = (filename: string, data: Buffer) => ({ source: 'email_local', path: `email/m1/${filename}`, filename, mime_type: 'application/octet-stream', sha256: 'x', size: data.length });
    const files = [
      { meta: meta('résumé "final"\n.pdf', tricky), data: tricky, filename: 'résumé "final"\n.pdf', contentType: 'application/pdf' },
      { meta: meta('b.bin', Buffer.alloc(0)), data: new Uint8Array(Buffer.from('second')).subarray(1, 4) },
    ];
    await c.uploadFiles(files);
    const up = (seen.at(-1)!.body as { list: Array<{ name: string; filename?: string; mimetype?: string; bytes?: Buffer; value?: unknown }> }).list;
    expect(seen.at(-1)!.url).toBe('/v1/ingest/file:batch');
    expect(up.map((p) => p.name)).toEqual(['meta', 'upload', 'meta', 'upload']);
    expect(JSON.parse(up[0].bytes!.toString('utf8'))).toEqual(files[0].meta);
    expect(up[1].bytes!.equals(tricky)).toBe(true);
    expect(up[1].filename).toBe('résumé %22final%22%0A.pdf'); // FormData's escapes
    expect(up[1].mimetype).toBe('application/pdf');
    expect(up[3].bytes!.toString('latin1')).toBe('eco');
    expect(up[3].filename).toBe('b.bin');
    expect(up[3].mimetype).toBe('application/octet-stream');

    await c.uploadOriginals!([
      { docId: '00000000-0000-4000-8000-000000000001', kind: 'rfc822', data: tricky },
      { docId: '00000000-0000-4000-8000-000000000002', kind: 'rfc822', data: Buffer.from('Subject: x\r\n\r\nbody\r\n') },
    ]);
    const orig = (seen.at(-1)!.body as { list: Array<{ name: string; filename?: string; mimetype?: string; bytes?: Buffer; value?: unknown }> }).list;
    expect(seen.at(-1)!.url).toBe('/v1/ingest/originals');
    expect(orig.map((p) => p.name)).toEqual(['meta', 'original', 'meta', 'original']);
    expect(JSON.parse(String(orig[0].value))).toEqual({ doc_id: '00000000-0000-4000-8000-000000000001', kind: 'rfc822' });
    expect(orig[1].bytes!.equals(tricky)).toBe(true);
    expect(orig[1].mimetype).toBe('message/rfc822');
    expect(orig[3].bytes!.toString('latin1')).toBe('Subject: x\r\n\r\nbody\r\n');
  });

});
