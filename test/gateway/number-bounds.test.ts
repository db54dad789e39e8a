/**
 * Every number a client sends is range-checked (issue 33 item 9): `offset=1e309`, `offset=Infinity` and
 * a huge `payload.version` reached the database ("invalid input syntax for type bigint", "integer out of
 * range") and answered 500. Here every integer and number of every operation the OpenAPI document lists,
 * in the query and in JSON bodies (each numeric field of an otherwise valid body), is sent out of range:
 * no answer may be a 5xx, and the named cases are 422s naming the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

type Schema = Record<string, any>;
let gw: TestGateway;
let components: Record<string, Schema> = {};
let paths: Record<string, Record<string, any>> = {};

const QUERY_VALUES = ['1e309', 'Infinity', '-Infinity', '99999999999999999999', '2147483648', '-2147483649', '1e21'];
const BODY_TOKENS = ['1e309', '-1e309', '99999999999999999999', '2147483648', '-2147483649', '1e21'];
const SKIP = new Set(['post /v1/admin/backup', 'post /mcp']);

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
  const doc = (await gw.request('GET', '/openapi.json')).json();
  components = doc.components?.schemas ?? {};
  paths = doc.paths;
}, 180_000);

afterAll(async () => {
  await gw?.close();
});

function resolve(s: Schema | undefined): Schema {
  let cur = s ?? {};
  for (let i = 0; i < 10 && typeof cur.$ref === 'string'; i++) cur = components[cur.$ref.split('/').pop()!] ?? {};
  return cur;
}

const typeOf = (s: Schema): string | undefined => (Array.isArray(s.type) ? s.type.find((t: string) => t !== 'null') : s.type);

/** A valid value of the schema, every optional field included, as far as a deterministic generator can. */
function sample(schema: Schema | undefined, depth = 0): unknown {
  const s = resolve(schema);
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  if (s.default !== undefined && typeOf(s) !== 'object' && typeOf(s) !== 'array') return s.default;
  const union = s.anyOf ?? s.oneOf;
  if (Array.isArray(union)) {
    const nonNull = union.filter((u: Schema) => resolve(u).type !== 'null');
    return sample((nonNull.length ? nonNull : union)[0], depth);
  }
  switch (typeOf(s)) {
    case 'string':
      if (s.format === 'uuid') return '00000000-0000-4000-8000-000000000000';
      if (s.format === 'timestamp' || s.format === 'date-time') return '2026-03-01T10:00:00Z';
      if (s.format === 'date') return '2026-03-01';
      if (typeof s.pattern === 'string' && s.pattern.includes('0-9a-fA-F')) return 'a'.repeat(64);
      if (typeof s.pattern === 'string' && s.pattern.startsWith('^2')) return '2.0';
      return 'lisbon'.padEnd(s.minLength ?? 1, 'x').slice(0, Math.max(s.minLength ?? 1, Math.min(s.maxLength ?? 6, 6)));
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return false;
    case 'array':
      return depth > 5 ? [] : Array.from({ length: Math.max(1, s.minItems ?? 0) }, () => sample(s.items, depth + 1));
    case 'object':
    default: {
      if (depth > 5 || !s.properties) return {};
      return Object.fromEntries(Object.entries<Schema>(s.properties).map(([k, v]) => [k, sample(v, depth + 1)]));
    }
  }
}

/** Paths (keys and indexes) of every integer or number inside a value sampled from `schema`. */
function numericPaths(schema: Schema | undefined, depth = 0): (string | number)[][] {
  const s = resolve(schema);
  const union = s.anyOf ?? s.oneOf;
  if (Array.isArray(union)) {
    const nonNull = union.filter((u: Schema) => resolve(u).type !== 'null');
    return numericPaths((nonNull.length ? nonNull : union)[0], depth);
  }
  if (s.const !== undefined || Array.isArray(s.enum)) return [];
  const t = typeOf(s);
  if (t === 'integer' || t === 'number') return [[]];
  if (depth > 5) return [];
  if (t === 'array') return numericPaths(s.items, depth + 1).map((p) => [0, ...p]);
  if (s.properties) {
    return Object.entries<Schema>(s.properties).flatMap(([k, v]) => numericPaths(v, depth + 1).map((p) => [k, ...p]));
  }
  return [];
}

function setAt(value: any, path: (string | number)[], leaf: unknown): any {
  if (path.length === 0) return leaf;
  const copy = Array.isArray(value) ? [...value] : { ...value };
  copy[path[0]] = setAt(value?.[path[0]], path.slice(1), leaf);
  return copy;
}

function fillPath(path: string, params: Schema[]): string {
  return path.replace(/\{(\w+)\}/g, (_, name) => {
    const p = params.find((x) => x.in === 'path' && x.name === name);
    return encodeURIComponent(String(sample(p?.schema)));
  });
}

describe(`numbers out of range on ${backend}`, () => {
  it('no query number of any operation answers 5xx', async () => {
    const failures: string[] = [];
    let sent = 0;
    for (const [path, item] of Object.entries(paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (SKIP.has(`${method} ${path}`)) continue;
        const params: Schema[] = op.parameters ?? [];
        const query = params.filter((p) => p.in === 'query');
        for (const target of query) {
          const t = typeOf(resolve(target.schema));
          if (t !== 'integer' && t !== 'number') continue;
          for (const bad of QUERY_VALUES) {
            const qs = query
              .filter((p) => p.required || p === target)
              .map((p) => `${p.name}=${encodeURIComponent(p === target ? bad : String(sample(p.schema)))}`)
              .join('&');
            const url = `${fillPath(path, params)}?${qs}`;
            const res = await gw.request(method.toUpperCase() as any, url);
            sent++;
            if (res.statusCode >= 500) failures.push(`${method.toUpperCase()} ${url} -> ${res.statusCode} ${res.body.slice(0, 200)}`);
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(20);
    expect(failures).toEqual([]);
  });

  it('no number in a JSON body of any operation answers 5xx', async () => {
    const failures: string[] = [];
    let sent = 0;
    for (const [path, item] of Object.entries(paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (SKIP.has(`${method} ${path}`)) continue;
        const schema = op.requestBody?.content?.['application/json']?.schema;
        if (!schema) continue;
        const base = sample(schema);
        const params: Schema[] = op.parameters ?? [];
        const url = fillPath(path, params);
        for (const at of numericPaths(schema)) {
          for (const token of BODY_TOKENS) {
            const raw = JSON.stringify(setAt(base, at, '__NUMBER__')).replace('"__NUMBER__"', token);
            const res = await gw.request(method.toUpperCase() as any, url, raw, { 'content-type': 'application/json' });
            sent++;
            if (res.statusCode >= 500) failures.push(`${method.toUpperCase()} ${url} ${at.join('.')}=${token} -> ${res.statusCode} ${res.body.slice(0, 200)}`);
          }
        }
      }
    }
    expect(sent).toBeGreaterThan(20);
    expect(failures).toEqual([]);
  });

  it('names the field in the 422', async () => {
    for (const bad of ['1e309', 'Infinity', '99999999999999999999']) {
      const res = await gw.request('GET', `/v1/documents?offset=${bad}`);
      expect(res.statusCode, `offset=${bad}`).toBe(422);
      expect(res.json().detail[0].loc).toEqual(['query', 'offset']);
    }
    const person = (version: string) =>
      `{"schema_version":"2.0","kind":"person","source":{"source_type":"contact","source_provider":"test","source_account_id":"a"},` +
      `"payload":{"external_id":"p1","display_name":"Ana","version":${version}}}`;
    for (const v of ['1e21', '99999999999999999999', '2147483648', '1e309']) {
      const res = await gw.request('POST', '/v2/ingest/person', person(v), { 'content-type': 'application/json' });
      expect(res.statusCode, `version ${v}: ${res.body}`).toBe(422);
      expect(JSON.stringify(res.json().detail)).toContain('"version"');
    }
    expect((await gw.request('POST', '/v2/ingest/person', person('3'), { 'content-type': 'application/json' })).statusCode).toBeLessThan(300);
  });
});
