import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ config: { bodyLimitBytes: 64 * 1024, catalogToken: 'catalog-secret' } });
});
afterAll(async () => {
  await gw?.close();
});

async function documentCount(): Promise<number> {
  return (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents')).rows[0].n;
}

describe(`auth on ${backend}`, () => {
  it('401 without a bearer token, 403 with a wrong one, health open', async () => {
    const none = await gw.request('GET', '/v1/documents', undefined, { authorization: '' });
    expect(none.statusCode).toBe(401);
    expect(none.json()).toEqual({ detail: 'Missing token' });
    expect(none.headers['www-authenticate']).toBe('Bearer');
    const basic = await gw.request('GET', '/v1/documents', undefined, { authorization: 'Basic abc' });
    expect(basic.statusCode).toBe(401);
    const wrong = await gw.request('POST', '/v1/ingest', noteBody(), { authorization: 'Bearer nope' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json()).toEqual({ detail: 'Invalid token' });
    expect(await documentCount()).toBe(0);
    const health = await gw.request('GET', '/v1/healthz', undefined, { authorization: '' });
    expect(health.statusCode).toBe(200);
    expect(health.json()).toMatchObject({ status: 'ok', database: backend });
  });

  it('guards the catalog API with CATALOG_TOKEN', async () => {
    const withGatewayToken = await gw.request('GET', '/v1/catalog/submissions/00000000-0000-4000-8000-000000000000');
    expect(withGatewayToken.statusCode).toBe(403);
    const ok = await gw.request('GET', '/v1/catalog/submissions/00000000-0000-4000-8000-000000000000', undefined, {
      authorization: 'Bearer catalog-secret',
    });
    expect(ok.statusCode).toBe(404);
  });
});

describe(`input errors on ${backend}`, () => {
  it('413 for a body over the limit, and nothing stored', async () => {
    const res = await gw.request('POST', '/v1/ingest', noteBody({ content: { data: 'x'.repeat(70 * 1024) } }));
    expect(res.statusCode).toBe(413);
    expect(res.json().detail).toMatch(/limit/);
    expect(await documentCount()).toBe(0);
  });

  it('422 in the spec shape for wrong types, never coerced', async () => {
    const res = await gw.request('POST', '/v1/ingest', noteBody({ source_id: 42, content: { data: 'x' }, people: 'ann' }));
    expect(res.statusCode).toBe(422);
    const detail = res.json().detail;
    expect(detail).toEqual(
      expect.arrayContaining([
        { loc: ['body', 'source_id'], msg: expect.any(String), type: 'string_type' },
        { loc: ['body', 'people'], msg: expect.any(String), type: 'array_type' },
      ]),
    );
    const bool = await gw.request('POST', '/v1/ingest', noteBody({ has_location: 'true' }));
    expect(bool.statusCode).toBe(422);
    expect(bool.json().detail[0]).toMatchObject({ loc: ['body', 'has_location'], type: 'boolean_type' });
  });

  it('422 for missing fields', async () => {
    const res = await gw.request('POST', '/v1/ingest', { source_type: 'note' });
    expect(res.statusCode).toBe(422);
    const locs = res.json().detail.map((d: any) => d.loc.join('.'));
    expect(locs).toEqual(expect.arrayContaining(['body.source_id', 'body.content']));
    expect(res.json().detail.every((d: any) => d.type === 'missing' && d.msg === 'Field required')).toBe(true);
  });

  it('422 for bad UUIDs in paths and bodies', async () => {
    for (const url of ['/v1/doc/not-a-uuid', '/v1/ingest/12345']) {
      const r = await gw.request('GET', url);
      expect(r.statusCode, url).toBe(422);
      expect(r.json().detail[0]).toMatchObject({ loc: ['path', expect.any(String)], type: 'uuid_parsing' });
    }
    const body = await gw.request('POST', '/v1/ingest', noteBody({ thread_id: 'thread-1' }));
    expect(body.statusCode).toBe(422);
    expect(body.json().detail[0]).toMatchObject({ loc: ['body', 'thread_id'], type: 'uuid_parsing' });
  });

  it('422 for bad dates', async () => {
    for (const ts of ['yesterday', '2026-02-31', '2026-13-01T00:00:00Z', '2026-01-01T25:00:00Z']) {
      const r = await gw.request('POST', '/v1/ingest', noteBody({ content_timestamp: ts }));
      expect(r.statusCode, ts).toBe(422);
      expect(r.json().detail[0]).toMatchObject({ loc: ['body', 'content_timestamp'], type: 'timestamp_parsing' });
    }
  });

  it('422 for bad base64 and for base64 that is not UTF-8', async () => {
    const bad = await gw.request('POST', '/v1/ingest', noteBody({ content: { data: 'not base64 at all!', encoding: 'base64' } }));
    expect(bad.statusCode).toBe(422);
    expect(bad.json().detail[0]).toMatchObject({ loc: ['body', 'content', 'data'], type: 'base64_decode' });
    const latin1 = Buffer.from([0x47, 0x72, 0xfc, 0xdf, 0x65]).toString('base64');
    const notUtf8 = await gw.request('POST', '/v1/ingest', noteBody({ content: { data: latin1, encoding: 'BASE64' } }));
    expect(notUtf8.statusCode).toBe(422);
    expect(await documentCount()).toBe(0);
  });

  it('422 for malformed JSON and an empty text', async () => {
    const r = await gw.request('POST', '/v1/ingest', '{"source_type": ', { 'content-type': 'application/json' });
    expect(r.statusCode).toBe(422);
    expect(r.json().detail[0]).toMatchObject({ loc: ['body'], type: 'json_invalid' });
    const empty = await gw.request('POST', '/v1/ingest', noteBody({ content: { data: ' \r\n ' } }));
    expect(empty.statusCode).toBe(422);
  });

  it('415 for content types that are not text', async () => {
    const r = await gw.request('POST', '/v1/ingest', noteBody({ content: { data: 'x', mime_type: 'application/pdf' } }));
    expect(r.statusCode).toBe(415);
  });

  it('404 JSON for unknown routes', async () => {
    const r = await gw.request('GET', '/v1/nope');
    expect(r.statusCode).toBe(404);
    expect(r.headers['content-type']).toMatch(/application\/json/);
    expect(r.json().detail).toMatch(/Not Found/);
  });

  it('serves an OpenAPI 3.1 document generated from the route schemas', async () => {
    const r = await gw.request('GET', '/openapi.json', undefined, { authorization: '' });
    expect(r.statusCode).toBe(200);
    const doc = r.json();
    expect(doc.openapi).toBe('3.1.0');
    expect(doc.info.version).toBe('0.2.0');
    expect(Object.keys(doc.paths)).toEqual(
      expect.arrayContaining(['/v1/ingest', '/v1/ingest:batch', '/v1/ingest/{submission_id}', '/v1/documents', '/v1/doc/{doc_id}']),
    );
    const body = doc.paths['/v1/ingest'].post.requestBody.content['application/json'].schema;
    expect(body.required).toEqual(expect.arrayContaining(['source_type', 'source_id', 'content']));
  });
});

describe(`validation details on ${backend}`, () => {
  it('names what is wrong inside a person, without a "must be null" for the nullable field around it', async () => {
    for (const people of [[{ role: 'sender' }], [{ identifier: 42, role: 'sender' }]]) {
      const res = await gw.request('POST', '/v1/ingest', noteBody({ people }));
      expect(res.statusCode).toBe(422);
      const detail = res.json().detail as { loc: (string | number)[]; msg: string }[];
      expect(detail.length).toBeGreaterThan(0);
      expect(detail.every((d) => d.loc.slice(0, 4).join('/') === 'body/people/0/identifier'), JSON.stringify(detail)).toBe(true);
      expect(detail.map((d) => d.msg).join(' ')).not.toMatch(/must be null/);
    }
    expect(await documentCount()).toBe(0);
  });
});
