/**
 * The OpenAPI document the server serves is true to the routes (issue 36 item 4). Every operation of
 * /openapi.json is called:
 * - with its declared request example (every JSON body and path parameter has one; generated from the schemas where
 *   none is written): the answer's status is declared and its body matches the declared schema;
 * - with a Host it does not answer to (421), from a page of another origin (403),
 * - without a token (401), with a wrong one (403), with a body that is too large (413), of a type it does not take
 *   (415) or malformed (422), and with a path parameter of the wrong form (422): each answer is declared, its body
 *   as declared;
 * - and the cases that reach the other statuses (409, 404, 415 …) of the routes that have them.
 * A status a route answers that its operation does not declare fails the test, naming the request.
 */
import AjvModule from 'ajv';
import addFormatsModule from 'ajv-formats';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseTimestamp } from '../../src/util/timestamp.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { makePng } from '../files/fixtures.ts';
import { multipart } from '../files/multipart.ts';

const Ajv = AjvModule.default;
const addFormats = addFormatsModule.default;
const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: false });
addFormats(ajv);
ajv.addFormat('timestamp', { type: 'string', validate: (s: string) => parseTimestamp(s) !== null });
ajv.addFormat('binary', true);

const BODY_LIMIT = 256 * 1024;
const BODY_METHODS = new Set(['post', 'put', 'patch', 'delete']);

type Op = { method: string; path: string; op: Record<string, any> };
let gw: TestGateway;
let doc: any;
let ops: Op[] = [];

beforeAll(async () => {
  gw = await startTestGateway({ files: {}, config: { bodyLimitBytes: BODY_LIMIT } });
  doc = (await gw.request('GET', '/openapi.json')).json();
  for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) ops.push({ method, path, op });
  }
}, 60_000);
afterAll(async () => {
  await gw?.close();
});

type Answer = Awaited<ReturnType<TestGateway['request']>>;

/** What is wrong with `res` as an answer of `op` (null when it is declared and its body matches). */
function contractProblem(o: Op, res: Answer): string | null {
  const declared = o.op.responses?.[String(res.statusCode)];
  if (!declared) return `answered ${res.statusCode}, declared ${Object.keys(o.op.responses ?? {}).join(',')} (${res.body.slice(0, 200)})`;
  const content = declared.content as Record<string, { schema?: object }> | undefined;
  if (!content) return res.body.length === 0 ? null : `${res.statusCode} declares no body but has one`;
  const type = String(res.headers['content-type'] ?? '').split(';')[0].trim();
  const media = content[type];
  if (!media) return `${res.statusCode} answered ${type || '(no type)'}, declared ${Object.keys(content).join(',')}`;
  if (type !== 'application/json' || !media.schema) return null;
  let body: unknown;
  try {
    body = JSON.parse(res.body);
  } catch {
    return `${res.statusCode} body is not JSON`;
  }
  const validate = ajv.compile(media.schema);
  if (validate(body)) return null;
  return `${res.statusCode} body does not match its schema: ${ajv.errorsText(validate.errors)} (${res.body.slice(0, 300)})`;
}

/** The path with its parameters filled from `values` or their declared examples. */
function urlOf(o: Op, values: Record<string, unknown> = {}): string {
  let url = o.path;
  const query: string[] = [];
  for (const p of o.op.parameters ?? []) {
    const v = p.name in values ? values[p.name] : p.example;
    if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(v)));
    else if (p.in === 'query' && v !== undefined) query.push(`${p.name}=${encodeURIComponent(String(v))}`);
  }
  return query.length ? `${url}?${query.join('&')}` : url;
}

function jsonExample(o: Op): unknown {
  const media = o.op.requestBody?.content?.['application/json'];
  if (!media) return undefined;
  return media.example !== undefined ? media.example : Object.values<any>(media.examples ?? {})[0]?.value;
}

async function send(o: Op, opts: { url?: string; payload?: string | Buffer; headers?: Record<string, string> } = {}): Promise<Answer> {
  const headers: Record<string, string> = { authorization: `Bearer ${TEST_TOKEN}`, ...opts.headers };
  for (const [k, v] of Object.entries(headers)) if (v === '') delete headers[k];
  return (await gw.app.inject({
    method: o.method.toUpperCase() as 'GET',
    url: opts.url ?? urlOf(o),
    headers,
    ...(opts.payload !== undefined ? { payload: opts.payload } : {}),
  })) as Answer;
}

function exampleRequest(o: Op): { payload?: string | Buffer; headers?: Record<string, string> } {
  const form = o.op.requestBody?.content?.['multipart/form-data'];
  if (form) {
    // The parts the document names: a file upload (meta + upload), or a message's original (meta + original).
    const m = form.schema?.properties?.original
      ? multipart([
          { name: 'meta', value: JSON.stringify({ doc_id: '00000000-0000-4000-8000-000000000000', kind: 'rfc822' }) },
          { name: 'original', value: Buffer.from('From: a@example.org\r\nSubject: contract\r\n\r\nThe contract test sends this message.\r\n'), filename: 'contract.eml', contentType: 'message/rfc822' },
        ])
      : multipart([
          { name: 'meta', value: JSON.stringify({ path: '/notes/contract.txt' }) },
          { name: 'upload', value: Buffer.from('The contract test uploads this file.'), filename: 'contract.txt', contentType: 'text/plain' },
        ]);
    return { payload: m.payload, headers: m.headers };
  }
  const body = jsonExample(o);
  return body === undefined ? {} : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } };
}

const failures: string[] = [];
function check(o: Op, what: string, res: Answer): void {
  const problem = contractProblem(o, res);
  if (problem) failures.push(`${o.method.toUpperCase()} ${o.path} [${what}]: ${problem}`);
}

describe('every operation of /openapi.json answers as it declares', () => {
  it('has a request example for every JSON body and path parameter, valid against its schema', () => {
    expect(ops.length).toBeGreaterThan(50);
    const missing: string[] = [];
    for (const o of ops) {
      const media = o.op.requestBody?.content?.['application/json'];
      if (media) {
        const example = jsonExample(o);
        if (example === undefined) missing.push(`${o.method} ${o.path}: body`);
        else if (!ajv.validate(media.schema, example)) missing.push(`${o.method} ${o.path}: body example invalid: ${ajv.errorsText()}`);
      }
      for (const p of o.op.parameters ?? []) {
        if (p.in === 'path' && p.example === undefined) missing.push(`${o.method} ${o.path}: ${p.name}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('answers each declared request example with a declared status and body, and takes it (2xx, or 404 for what it names)', async () => {
    failures.length = 0;
    const refused: string[] = [];
    // What an example cannot be given here: a secret (sign-in), and readiness while the index is still built.
    const cannot: Record<string, number[]> = { 'post /v1/session': [401, 403], 'post /v1/session/redeem': [403], 'get /v1/readyz': [503] };
    for (const o of ops) {
      const res = await send(o, exampleRequest(o));
      check(o, 'example', res);
      // An example is something a client can copy: the route must take it (it may still not find what it names
      // in this empty store: 404). A 422 (issue 46: four were), a 400, 409 or 415 is an example that misleads.
      const key = `${o.method} ${o.path}`;
      if (res.statusCode >= 400 && res.statusCode !== 404 && !cannot[key]?.includes(res.statusCode)) {
        refused.push(`${key} ${res.statusCode}: ${res.body.slice(0, 300)}`);
      }
    }
    expect(failures).toEqual([]);
    expect(refused).toEqual([]);
  }, 120_000);

  it('declares a parameter or body property with a default as optional: the route fills it in', () => {
    const required: string[] = [];
    const walk = (schema: any, where: string) => {
      if (!schema || typeof schema !== 'object') return;
      for (const name of schema.required ?? []) if (schema.properties?.[name]?.default !== undefined) required.push(`${where}.${name}`);
      for (const [k, v] of Object.entries<any>(schema.properties ?? {})) walk(v, `${where}.${k}`);
      if (schema.items) walk(schema.items, `${where}[]`);
      for (const k of ['anyOf', 'oneOf', 'allOf']) for (const v of schema[k] ?? []) walk(v, where);
    };
    for (const o of ops) {
      for (const p of o.op.parameters ?? []) if (p.required && p.schema?.default !== undefined) required.push(`${o.method} ${o.path} ?${p.name}`);
      walk(o.op.requestBody?.content?.['application/json']?.schema, `${o.method} ${o.path} body`);
    }
    expect(required).toEqual([]);
  });

  it('declares the answers to a missing or wrong token, and to bodies too large, of another type or malformed', async () => {
    failures.length = 0;
    for (const o of ops) {
      // The host guard (src/gateway/host-guard.ts) answers on every route: a rebound name, a page of another origin.
      check(o, 'other host', await send(o, { ...exampleRequest(o), headers: { ...exampleRequest(o).headers, host: 'evil.example' } }));
      check(o, 'foreign origin', await send(o, { ...exampleRequest(o), headers: { ...exampleRequest(o).headers, origin: 'http://evil.example' } }));
      const secured = !(Array.isArray(o.op.security) && o.op.security.length === 0);
      if (secured) {
        check(o, 'no token', await send(o, { ...exampleRequest(o), headers: { ...exampleRequest(o).headers, authorization: '' } }));
        check(o, 'wrong token', await send(o, { ...exampleRequest(o), headers: { ...exampleRequest(o).headers, authorization: 'Bearer nope' } }));
      }
      if (BODY_METHODS.has(o.method)) {
        const json = { 'content-type': 'application/json' };
        check(o, 'too large', await send(o, { payload: `{"a":"${'x'.repeat(BODY_LIMIT + 10)}"}`, headers: json }));
        check(o, 'other type', await send(o, { payload: '<a/>', headers: { 'content-type': 'application/xml' } }));
        check(o, 'malformed', await send(o, { payload: '{"a":', headers: json }));
      }
      if ((o.op.parameters ?? []).some((p: any) => p.in === 'path')) {
        const bad = Object.fromEntries((o.op.parameters ?? []).filter((p: any) => p.in === 'path').map((p: any) => [p.name, 'not-an-id']));
        check(o, 'bad path id', await send(o, { url: urlOf(o, bad), ...exampleRequest(o) }));
      }
    }
    expect(failures).toEqual([]);
  }, 120_000);
});

describe('the statuses routes answer in particular cases are declared', () => {
  const op = (method: string, path: string): Op => {
    const found = ops.find((o) => o.method === method && o.path === path);
    if (!found) throw new Error(`no operation ${method} ${path}`);
    return found;
  };
  const sendJson = (o: Op, body: unknown) =>
    send(o, { payload: JSON.stringify(body), headers: { 'content-type': 'application/json' } });
  const note = (over: Record<string, unknown> = {}) => ({
    source_type: 'note',
    source_id: `contract-${Math.random().toString(36).slice(2)}`,
    content: { mime_type: 'text/plain', data: 'A note for the contract test.' },
    ...over,
  });

  it('/v1/ingest: 415 for content it does not take; metadata.attachments its schema allows are stored', async () => {
    const o = op('post', '/v1/ingest');
    const pdf = await sendJson(o, note({ content: { mime_type: 'application/pdf', data: 'x' } }));
    expect(pdf.statusCode).toBe(415);
    expect(contractProblem(o, pdf)).toBeNull();
    const attachments = [{ index: 0, kind: 'image', role: 'attachment', mime_type: 'image/png', size_bytes: 10, filename: 'a.png' }];
    const withAttachments = await sendJson(o, note({ metadata: { attachments } }));
    expect(withAttachments.statusCode).toBe(202);
    expect(contractProblem(o, withAttachments)).toBeNull();
    // What the schema refuses is a 422 naming the entry.
    const bad = await sendJson(o, note({ metadata: { attachments: [{ index: 0, kind: 'video', mime_type: 'video/mp4' }] } }));
    expect(bad.statusCode).toBe(422);
    expect(contractProblem(o, bad)).toBeNull();
    expect(bad.json().detail[0].loc).toEqual(['body', 'metadata', 'attachments', 0, 'kind']);
    // …and the declared body schema says so: what the route refuses, the document refuses.
    const schema = o.op.requestBody.content['application/json'].schema;
    expect(ajv.validate(schema, note({ metadata: { attachments: [{ index: 0, kind: 'video', mime_type: 'video/mp4' }] } }))).toBe(false);
    expect(ajv.validate(schema, note({ metadata: { attachments: [{ index: 0, kind: 'image' }] } }))).toBe(false);
    expect(ajv.validate(schema, note({ metadata: { attachments: attachments } }))).toBe(true);
  });

  it('/v1/files/{sha256} declares its 200 (the bytes)', async () => {
    const upload = op('post', '/v1/ingest/file');
    const bytes = Buffer.from('A file the contract test downloads again.');
    const m = multipart([
      { name: 'meta', value: JSON.stringify({ path: '/notes/download.txt' }) },
      { name: 'upload', value: bytes, filename: 'download.txt', contentType: 'text/plain' },
    ]);
    const stored = await send(upload, { payload: m.payload, headers: m.headers });
    expect(contractProblem(upload, stored)).toBeNull();
    const o = op('get', '/v1/files/{sha256}');
    const res = await send(o, { url: urlOf(o, { sha256: stored.json().file_sha256 }) });
    expect(res.statusCode).toBe(200);
    expect(contractProblem(o, res)).toBeNull();
  });

  it('/v1/files/{sha256}/thumbnail declares its 200 (a WebP)', async () => {
    const upload = op('post', '/v1/ingest/file');
    const m = multipart([
      { name: 'meta', value: JSON.stringify({ path: '/pictures/harbour.png' }) },
      { name: 'upload', value: makePng(64, 48), filename: 'harbour.png', contentType: 'image/png' },
    ]);
    const stored = await send(upload, { payload: m.payload, headers: m.headers });
    expect(contractProblem(upload, stored)).toBeNull();
    const o = op('get', '/v1/files/{sha256}/thumbnail');
    const res = await send(o, { url: urlOf(o, { sha256: stored.json().file_sha256 }) });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/webp');
    expect(contractProblem(o, res)).toBeNull();
  });

  it('/v2/ingest/person: a stale version is a declared 409, deleting an unknown person a declared 404', async () => {
    const o = op('post', '/v2/ingest/person');
    const env = (payload: Record<string, unknown>) => ({
      schema_version: '2.0',
      kind: 'person',
      source: { source_type: 'contact', source_provider: 'contract' },
      payload: { external_id: 'p-1', display_name: 'Ann Example', ...payload },
    });
    const first = await sendJson(o, env({ version: 3 }));
    expect(first.statusCode).toBe(200);
    expect(contractProblem(o, first)).toBeNull();
    const stale = await sendJson(o, env({ version: 2 }));
    expect(stale.statusCode).toBe(409);
    expect(contractProblem(o, stale)).toBeNull();
    const unknown = await sendJson(o, env({ external_id: 'never-seen', deleted: true }));
    expect([200, 404]).toContain(unknown.statusCode);
    expect(contractProblem(o, unknown)).toBeNull();
  });

  it('/v1/catalog/documents: a new document is a declared 202 with its body, the same again a declared 200', async () => {
    const o = op('post', '/v1/catalog/documents');
    const body = {
      idempotency_key: `contract-${Date.now()}`,
      source_type: 'note',
      source_id: 'contract-catalog-1',
      content_sha256: 'a'.repeat(64),
      text: 'Stored through the catalog route.',
      content_timestamp: '2026-03-01T10:15:00Z',
      content_timestamp_type: 'created',
    };
    const created = await sendJson(o, body);
    expect(created.statusCode).toBe(202);
    expect(created.json().doc_id).toBeTruthy();
    expect(contractProblem(o, created)).toBeNull();
    const again = await sendJson(o, body);
    expect(again.statusCode).toBe(200);
    expect(again.json().duplicate).toBe(true);
    expect(contractProblem(o, again)).toBeNull();
  });

  it('a route answering another media type declares its errors as JSON (a backup refused is a JSON 409)', () => {
    for (const [method, path] of [['post', '/v1/admin/backup'], ['get', '/v1/export'], ['get', '/catalog/contacts/export']]) {
      const o = op(method, path);
      for (const [status, r] of Object.entries<any>(o.op.responses)) {
        if (status !== '200') expect(Object.keys(r.content ?? { 'application/json': 1 }), `${method} ${path} ${status}`).toEqual(['application/json']);
      }
    }
  });

  it('/catalog/contacts/export declares its 200 (newline-delimited JSON)', async () => {
    const o = op('get', '/catalog/contacts/export');
    const res = await send(o);
    expect(res.statusCode).toBe(200);
    expect(contractProblem(o, res)).toBeNull();
  });
});
