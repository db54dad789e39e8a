/**
 * Hostile input (issue 22): deep nesting, oversized identifiers, NUL bytes, lone surrogates and the 422 shape.
 * Each answer is a clear 4xx (or a stored document with the documented cleaning), never a 500, and a refused
 * request stores nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH } from '../../src/util/json-input.ts';
import { MAX_IDENTITY_BYTES } from '../../src/catalog/ingest.ts';
import { canonicalJson } from '../../src/util/hash.ts';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ config: { bodyLimitBytes: 4 * 1024 * 1024, catalogToken: 'catalog-secret' } });
});
afterAll(async () => {
  await gw?.close();
});

const JSON_HEADERS = { 'content-type': 'application/json' };

async function documentCount(): Promise<number> {
  return (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents')).rows[0].n;
}

/** A note body whose metadata is `depth` objects nested inside each other, as JSON text. */
function nestedNote(depth: number): string {
  const body = JSON.stringify(noteBody({ metadata: { placeholder: 0 } }));
  const nested = '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
  return body.replace('{"placeholder":0}', nested);
}

/** `n` random characters outside the Basic Multilingual Plane: 4 bytes each in UTF-8, and incompressible. */
function astral(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCodePoint(0x10000 + Math.floor(Math.random() * 0xf0000));
  return s;
}

function expectValidationShape(body: any): void {
  expect(Array.isArray(body.detail)).toBe(true);
  expect(body.detail.length).toBeGreaterThan(0);
  for (const d of body.detail) {
    expect(Array.isArray(d.loc)).toBe(true);
    expect(typeof d.msg).toBe('string');
    expect(typeof d.type).toBe('string');
  }
}

describe('canonical JSON for idempotency keys', () => {
  it('equals JSON.stringify of the key-sorted value, and survives 100,000 levels', () => {
    const value = { b: [1, 'x', null, { d: true, c: undefined }, undefined], a: { z: 1.5, y: new Date(0) }, e: '\u2028"' };
    expect(canonicalJson(value)).toBe('{"a":{"y":"1970-01-01T00:00:00.000Z","z":1.5},"b":[1,"x",null,{"d":true},null],"e":"\u2028\\""}');
    let deep: unknown = 1;
    for (let i = 0; i < 100_000; i++) deep = { a: deep };
    expect(canonicalJson(deep)).toHaveLength(100_000 * 6 + 1);
  });
});

describe(`deeply nested JSON on ${backend}`, () => {
  it.each([10_000, 100_000])('refuses metadata nested %i levels with a 422 and stores nothing', async (depth) => {
    const before = await documentCount();
    const res = await gw.request('POST', '/v1/ingest', nestedNote(depth), JSON_HEADERS);
    expect(res.statusCode).toBe(422);
    expectValidationShape(res.json());
    expect(res.json().detail[0]).toMatchObject({ type: 'too_deep', msg: expect.stringContaining(String(MAX_JSON_DEPTH)) });
    expect(res.json().detail[0].loc.slice(0, 3)).toEqual(['body', 'metadata', 'a']);
    expect(await documentCount()).toBe(before);
  });

  it('accepts nesting up to the limit', async () => {
    // The body is level 1 and metadata, the outermost of the nested objects, level 2.
    const res = await gw.request('POST', '/v1/ingest', nestedNote(MAX_JSON_DEPTH - 1), JSON_HEADERS);
    expect(res.statusCode).toBe(202);
    const over = await gw.request('POST', '/v1/ingest', nestedNote(MAX_JSON_DEPTH), JSON_HEADERS);
    expect(over.statusCode).toBe(422);
  });

  it('refuses deep nesting on every JSON route, the catalog API and v2 included', async () => {
    const deep = '['.repeat(5000) + ']'.repeat(5000);
    for (const [url, token] of [
      ['/v1/ingest:batch', undefined],
      ['/v2/ingest:batch', undefined],
      ['/v1/catalog/documents', 'catalog-secret'],
    ] as const) {
      const res = await gw.request('POST', url, `{"documents":${deep}}`, {
        ...JSON_HEADERS,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      });
      expect(res.statusCode, url).toBe(422);
      expectValidationShape(res.json());
    }
  });
});

describe(`oversized identifiers on ${backend}`, () => {
  it.each([
    ['source_id', { source_id: 'x'.repeat(1_000_000) }, ['body', 'source_id']],
    ['external_id', { external_id: 'x'.repeat(1_000_000) }, ['body', 'external_id']],
    ['thread external_id', { thread: { external_id: 'x'.repeat(1_000_000) } }, ['body', 'thread', 'external_id']],
    ['person identifier', { people: [{ identifier: 'x'.repeat(1_000_000), identifier_type: 'email' }] }, ['body', 'people', 0, 'identifier']],
    ['source_account_id', { source_account_id: 'x'.repeat(100_000) }, ['body', 'source_account_id']],
  ])('a 1 MB %s is a 422', async (_name, overrides, loc) => {
    const before = await documentCount();
    const res = await gw.request('POST', '/v1/ingest', noteBody(overrides));
    expect(res.statusCode).toBe(422);
    expect(res.json().detail).toContainEqual({ loc, msg: expect.any(String), type: 'string_too_long' });
    expect(await documentCount()).toBe(before);
  });

  it('bounds identities in UTF-8 bytes: 4-byte characters up to the limit are stored, beyond it a 422', async () => {
    // 'note' is 4 bytes; the rest of the budget in 4-byte characters fits the unique index.
    const fits = await gw.request('POST', '/v1/ingest', noteBody({ source_id: astral((MAX_IDENTITY_BYTES - 4) / 4) }));
    expect(fits.statusCode).toBe(202);
    const before = await documentCount();
    const over = await gw.request('POST', '/v1/ingest', noteBody({ source_id: astral(1000) }));
    expect(over.statusCode).toBe(422);
    expect(over.json().detail[0]).toMatchObject({ loc: ['body'], type: 'INGEST.IDENTITY_TOO_LONG' });
    const thread = await gw.request('POST', '/v1/ingest', noteBody({ source_account_id: astral(300), thread: { external_id: astral(400) } }));
    expect(thread.statusCode).toBe(422);
    expect(thread.json().detail[0].msg).toMatch(/thread identity/);
    // In a batch the long item fails alone.
    const batch = await gw.request('POST', '/v1/ingest:batch', { documents: [noteBody({ source_id: astral(1000) }), noteBody()] });
    expect(batch.statusCode).toBe(207);
    expect(batch.json().results.map((r: any) => r.status_code)).toEqual([422, 202]);
    expect(await documentCount()).toBe(before + 1);
  });

  it('stores people and contacts whose identifiers are at their limits in 4-byte characters', async () => {
    const doc = await gw.request(
      'POST',
      '/v1/ingest',
      noteBody({ people: [{ identifier: astral(500), identifier_type: 'chatapp', display_name: astral(500), role: 'sender' }] }),
    );
    expect(doc.statusCode).toBe(202);
    const contacts = await gw.request(
      'POST',
      '/catalog/contacts/ingest',
      {
        source: astral(100),
        device_id: astral(200),
        batch_id: 'b1',
        people: [{ external_id: astral(500), display_name: astral(500), emails: [{ value: `${'a'.repeat(480)}@example.com` }] }],
      },
      { authorization: 'Bearer catalog-secret' },
    );
    expect(contacts.statusCode).toBe(200);
    expect(contacts.json(), JSON.stringify(contacts.json())).toMatchObject({ accepted: 1 });
    const n = (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM people_source_map')).rows[0].n;
    expect(n).toBe(1);
  });
});

describe(`NUL bytes and lone surrogates on ${backend}`, () => {
  it('refuses a NUL in identifiers with a 422', async () => {
    const before = await documentCount();
    for (const [overrides, loc] of [
      [{ source_id: 'a\u0000b' }, ['body', 'source_id']],
      [{ external_id: 'a\u0000b' }, ['body', 'external_id']],
      [{ thread: { external_id: 't\u0000' } }, ['body', 'thread', 'external_id']],
      [{ people: [{ identifier: 'ann\u0000@example.com', identifier_type: 'email' }] }, ['body', 'people', 0, 'identifier']],
    ] as const) {
      const res = await gw.request('POST', '/v1/ingest', noteBody(overrides));
      expect(res.statusCode).toBe(422);
      expect(res.json().detail).toContainEqual({ loc, msg: expect.stringMatching(/NUL/), type: 'string_pattern_mismatch' });
    }
    expect(await documentCount()).toBe(before);
  });

  it('applies the same rules to each item of a batch (v1 and v2)', async () => {
    const v1 = await gw.request('POST', '/v1/ingest:batch', {
      documents: [noteBody({ source_id: 'b\u0000' }), noteBody({ source_id: 'batch-nul', title: 'T\u0000' })],
    });
    expect(v1.statusCode).toBe(207);
    const [bad, good] = v1.json().results;
    expect(bad.status_code).toBe(422);
    expect(bad.error.details.detail).toContainEqual({ loc: ['body', 'documents', 0, 'source_id'], msg: expect.stringMatching(/NUL/), type: 'string_pattern_mismatch' });
    expect(good.status_code).toBe(202);
    const title = (await gw.db.query<any>('SELECT title FROM documents WHERE doc_id = $1', [good.submission.doc_id])).rows[0].title;
    expect(title).toBe('T');
    const envelope = (externalId: string) => ({
      schema_version: '2.0',
      kind: 'document',
      source: { source_type: 'note' },
      payload: { external_id: externalId, text: 'Some \u0000text', content_timestamp: '2026-01-01T00:00:00Z', content_timestamp_type: 'created' },
    });
    const v2 = await gw.request('POST', '/v2/ingest:batch', [envelope('v2\u0000'), envelope('v2-nul')]);
    expect(v2.statusCode).toBe(207);
    expect(v2.json().results.map((r: any) => r.status_code)).toEqual([422, 202]);
    const text = (await gw.db.query<any>('SELECT text FROM documents WHERE doc_id = $1', [v2.json().results[1].document.doc_id])).rows[0].text;
    expect(text).toBe('Some text');
  });

  it('removes NUL from free text: content, title, metadata (keys and values), base64 content', async () => {
    const res = await gw.request(
      'POST',
      '/v1/ingest',
      noteBody({
        source_id: 'nul-free-text',
        title: 'Tr\u0000ip',
        content: { data: 'Book\u0000 the train.' },
        metadata: { 'fol\u0000der': 'tra\u0000vel', list: ['a\u0000'] },
        people: [{ identifier: 'ann@example.com', display_name: 'A\u0000nn' }],
      }),
    );
    expect(res.statusCode).toBe(202);
    const row = (await gw.db.query<any>('SELECT title, text, metadata FROM documents WHERE doc_id = $1', [res.json().doc_id])).rows[0];
    expect(row.title).toBe('Trip');
    expect(row.text).toBe('Book the train.');
    expect(row.metadata).toMatchObject({ folder: 'travel', list: ['a'] });
    const b64 = await gw.request(
      'POST',
      '/v1/ingest',
      noteBody({ content: { data: Buffer.from('Hello\u0000 world').toString('base64'), encoding: 'base64' } }),
    );
    expect(b64.statusCode).toBe(202);
    const text = (await gw.db.query<any>('SELECT text FROM documents WHERE doc_id = $1', [b64.json().doc_id])).rows[0].text;
    expect(text).toBe('Hello world');
  });

  it('replaces lone surrogates with U+FFFD everywhere, identifiers and metadata keys included', async () => {
    const raw = JSON.stringify(
      noteBody({ source_id: 'sur-PLACE', title: 'tPLACE', content: { data: 'Hi PLACE there' }, metadata: { 'kPLACE': 'vPLACE' } }),
    ).replaceAll('PLACE', '\\ud800');
    const res = await gw.request('POST', '/v1/ingest', raw, JSON_HEADERS);
    expect(res.statusCode).toBe(202);
    const row = (await gw.db.query<any>('SELECT external_id, title, text, metadata FROM documents WHERE doc_id = $1', [res.json().doc_id])).rows[0];
    expect(row).toMatchObject({ external_id: 'sur-\uFFFD', title: 't\uFFFD', text: 'Hi \uFFFD there' });
    expect(row.metadata['k\uFFFD']).toBe('v\uFFFD');
    // A low surrogate alone, and one in a query string, are no 500 either.
    const low = await gw.request('POST', '/v1/ingest', JSON.stringify(noteBody({ title: 'x' })).replace('"x"', '"\\udc00x"'), JSON_HEADERS);
    expect(low.statusCode).toBe(202);
    const search = await gw.request('GET', `/v1/search?q=${encodeURIComponent('a')}%ED%A0%80%00`);
    expect(search.statusCode).toBeLessThan(500);
  });
});

describe(`422 shape on ${backend}`, () => {
  it('POST /v1/catalog/embeddings answers invalid input with {detail:[{loc,msg,type}]}', async () => {
    const auth = { authorization: 'Bearer catalog-secret' };
    const bodies = [
      { chunk_id: '00000000-0000-4000-8000-000000000000', model: 'bad model name!', vector: [0.1, 0.2] },
      { embeddings: [] },
      { chunk_id: 'nope', model: 'm', vector: [] },
      'not json',
    ];
    for (const body of bodies) {
      const res = await gw.request('POST', '/v1/catalog/embeddings', body, typeof body === 'string' ? { ...auth, ...JSON_HEADERS } : auth);
      expect(res.statusCode, JSON.stringify(body)).toBe(422);
      expectValidationShape(res.json());
    }
  });
});
