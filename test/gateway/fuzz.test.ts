/**
 * A bounded fuzz test (issue 22): malformed bodies, wrong types, oversized values, hostile strings and broken
 * encodings sent over loopback HTTP to every operation the OpenAPI document lists when the test runs (routes other
 * work adds are covered as they appear). It fails on any 5xx, on any 422 not in the `{detail:[{loc,msg,type}]}`
 * shape and on any answer slower than 5 s (scaled by the machine's load, see `slowBound`), listing each failing
 * request so it can be replayed.
 *
 * Bounded in count (ROUNDS_MAX cases per operation) and time (TIME_BUDGET_MS of sending per backend, but at least
 * ROUNDS_MIN rounds, so every operation is covered); operations take turns, one case each per round. The generator
 * is seeded (MEMEX_FUZZ_SEED, default 22) so a failure replays exactly.
 */
import crypto from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rng } from '../../bench/lib/generate.ts';
import { shutdownExtraction } from '../../src/files/extract.ts';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const SEED = Number(process.env.MEMEX_FUZZ_SEED ?? 22);
const ROUNDS_MIN = 3;
const ROUNDS_MAX = 40;
const TIME_BUDGET_MS = 6_000;

/** 5 s on an idle machine; proportionally more when the load average says the CPUs are shared (tests run at load 20). */
function slowBound(): number {
  return 5_000 * Math.max(1, os.loadavg()[0] / os.cpus().length);
}

// ------------------------------------------------------------------------------------------------ random values

const rnd = rng(SEED);
const int = (n: number) => Math.floor(rnd() * n);
const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
const uuid = () => {
  const b = Buffer.from(Array.from({ length: 16 }, () => int(256)));
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
};

const HOSTILE_STRINGS: readonly (() => string)[] = [
  () => '',
  () => ' ',
  () => 'a\u0000b',
  () => '\u0000',
  () => 'x\ud800y',
  () => '\udc00',
  () => 'x'.repeat(100_000),
  () => '\u{1F600}'.repeat(3_000),
  () => "' OR 1=1; DROP TABLE documents; --",
  () => '../../../../etc/passwd',
  () => '%00%ED%A0%80',
  () => '\u202e\u200b\ufeff',
  () => '<script>alert(1)</script>',
  () => '9'.repeat(400),
  () => '-1',
  () => 'NaN',
  () => '1e309',
  () => 'null',
  () => '2026-02-31T25:61:61Z',
  () => uuid(),
  () => 'not-a-uuid',
  () => '\\u0000',
];
const HOSTILE_VALUES: readonly (() => unknown)[] = [
  () => null,
  () => true,
  () => 0,
  () => -1,
  () => 1.5,
  () => 1e308,
  () => -1e308,
  () => 2 ** 53 + 1,
  () => [],
  () => ({}),
  () => [[[[]]]],
  () => new Array(10_000).fill(0),
  () => Object.fromEntries(Array.from({ length: 500 }, (_, i) => [`k${i}`, i])),
  () => pick(HOSTILE_STRINGS)(),
];

// ------------------------------------------------------------------------------------------------ schema sampling

type Schema = Record<string, any>;
let components: Record<string, Schema> = {};

function resolve(s: Schema | undefined): Schema {
  let cur = s ?? {};
  for (let i = 0; i < 10 && typeof cur.$ref === 'string'; i++) cur = components[cur.$ref.split('/').pop()!] ?? {};
  return cur;
}

/** A value that satisfies the schema as far as a quick generator can (formats, enums, bounds, required keys). */
function sample(schema: Schema | undefined, depth = 0): unknown {
  const s = resolve(schema);
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return pick(s.enum);
  const union = s.anyOf ?? s.oneOf;
  if (Array.isArray(union)) {
    const nonNull = union.filter((u: Schema) => resolve(u).type !== 'null');
    return sample(pick(nonNull.length ? nonNull : union), depth);
  }
  if (Array.isArray(s.allOf)) return Object.assign({}, ...s.allOf.map((p: Schema) => sample(p, depth)));
  const type = Array.isArray(s.type) ? pick(s.type.filter((t: string) => t !== 'null')) : s.type;
  switch (type) {
    case 'string': {
      if (s.format === 'uuid') return uuid();
      if (s.format === 'timestamp' || s.format === 'date-time') return new Date(Date.UTC(2020 + int(7), int(12), 1 + int(28))).toISOString();
      if (s.format === 'date') return '2026-03-01';
      if (typeof s.pattern === 'string' && s.pattern.includes('0-9a-fA-F')) return crypto.randomBytes(32).toString('hex');
      if (typeof s.pattern === 'string' && s.pattern.startsWith('^2')) return '2.0';
      const min = s.minLength ?? 1;
      const max = Math.min(s.maxLength ?? 24, 24);
      const words = ['lisbon', 'train', 'ann@example.com', '+14155550123', 'meeting', 'note'];
      let out = pick(words);
      while (out.length < min) out += out;
      return out.slice(0, Math.max(min, Math.min(max, out.length)));
    }
    case 'integer':
    case 'number': {
      const lo = s.minimum ?? 0;
      const hi = s.maximum ?? lo + 10;
      const v = lo + rnd() * (hi - lo);
      return type === 'integer' ? Math.round(v) : v;
    }
    case 'boolean':
      return rnd() < 0.5;
    case 'null':
      return null;
    case 'array': {
      if (depth > 4) return [];
      const n = Math.max(s.minItems ?? 0, int(3));
      return Array.from({ length: Math.min(n, s.maxItems ?? n) }, () => sample(s.items, depth + 1));
    }
    case 'object':
    default: {
      if (depth > 4) return {};
      const out: Record<string, unknown> = {};
      const required = new Set<string>(s.required ?? []);
      for (const [k, p] of Object.entries<Schema>(s.properties ?? {})) {
        if (required.has(k) || rnd() < 0.5) out[k] = sample(p, depth + 1);
      }
      return out;
    }
  }
}

/** Every path to a value inside `v` (object keys and array indexes). */
function paths(v: unknown, prefix: (string | number)[] = [], out: (string | number)[][] = []): (string | number)[][] {
  if (prefix.length > 8) return out;
  if (Array.isArray(v)) v.forEach((x, i) => (out.push([...prefix, i]), paths(x, [...prefix, i], out)));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push([...prefix, k]), paths(x, [...prefix, k], out);
  return out;
}

function setAt(root: unknown, path: (string | number)[], value: unknown): unknown {
  if (path.length === 0) return value;
  let cur = root as any;
  for (const k of path.slice(0, -1)) cur = cur[k];
  cur[path[path.length - 1]] = value;
  return root;
}

// ------------------------------------------------------------------------------------------------ requests

interface Probe {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  label: string;
}

const json = (v: unknown) => Buffer.from(JSON.stringify(v));
/** Most of an answer read (error bodies are small; a document list may not be). */
const MAX_READ = 256 * 1024;
const nested = (depth: number) => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);

/** Raw JSON-ish bodies that are broken in some way. */
const RAW_BODIES: readonly (() => Buffer)[] = [
  () => Buffer.from('{'),
  () => Buffer.from('{"a":'),
  () => Buffer.from('[1,2'),
  () => Buffer.from(''),
  () => Buffer.from('null'),
  () => Buffer.from('"just a string"'),
  () => Buffer.from('123'),
  () => Buffer.from('[]'),
  () => Buffer.from('\ufeff{}'),
  () => Buffer.from([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0xed, 0xa0, 0x80, 0x22, 0x7d]), // invalid UTF-8
  () => Buffer.from('{"a":"\\ud800","b":"\\u0000"}'),
  () => Buffer.from('{"a":1,"a":2}'),
  () => Buffer.from('{"n":1e999}'),
  () => Buffer.from('{"__proto__":{"x":1}}'),
  () => Buffer.from('{"constructor":{"prototype":{"x":1}}}'),
  () => Buffer.from(nested(100_000)),
  () => Buffer.from('['.repeat(50_000) + ']'.repeat(50_000)),
];

const PATH_VALUES: readonly (() => string)[] = [
  () => uuid(),
  () => 'not-a-uuid',
  () => '0',
  () => '-1',
  () => 'x'.repeat(3_000),
  () => '%00',
  () => '%ED%A0%80',
  () => '%2e%2e%2f%2e%2e%2f',
  () => '%F0%9F%98%80',
  () => crypto.randomBytes(32).toString('hex'),
  () => '%zz',
];

function fillPath(template: string, op: Operation, hostile: boolean): string {
  return template.replace(/\{([^}]+)\}/g, (_m, name: string) => {
    if (hostile) return pick(PATH_VALUES)();
    const p = op.parameters.find((x) => x.in === 'path' && x.name === name);
    return encodeURIComponent(String(sample(p?.schema)));
  });
}

function queryString(op: Operation, hostile: boolean): string {
  const parts: string[] = [];
  for (const p of op.parameters.filter((x) => x.in === 'query')) {
    if (!hostile && !p.required && rnd() < 0.5) continue;
    if (!hostile) {
      parts.push(`${encodeURIComponent(p.name)}=${encodeURIComponent(String(sample(p.schema)))}`);
      continue;
    }
    const v = pick([
      () => encodeURIComponent(pick(HOSTILE_STRINGS)().replace(/[\ud800-\udfff]/g, '')),
      () => '%ED%A0%80',
      () => '%00',
      () => '%zz',
      () => '%',
      () => encodeURIComponent(JSON.stringify(pick(HOSTILE_VALUES)())),
      () => `${encodeURIComponent(String(sample(p.schema)))}&${encodeURIComponent(p.name)}=2`,
    ])();
    parts.push(`${encodeURIComponent(p.name)}=${v}`);
  }
  if (hostile && rnd() < 0.3) parts.push(`unknown_${int(100)}=${encodeURIComponent('x'.repeat(int(5_000)))}`);
  return parts.length ? `?${parts.join('&')}` : '';
}

function multipartBody(parts: { name: string; value: Buffer | string; filename?: string; type?: string }[], boundary = `fz${int(1e9)}`) {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${p.name}"`;
    if (p.filename !== undefined) head += `; filename="${p.filename}"`;
    head += `\r\n${p.type ? `Content-Type: ${p.type}\r\n` : ''}\r\n`;
    chunks.push(Buffer.from(head), Buffer.from(p.value), Buffer.from('\r\n'));
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), type: `multipart/form-data; boundary=${boundary}` };
}

/** Uploads: a sane meta with a hostile file, a hostile meta, or a broken multipart body. */
function multipartProbe(): { body: Buffer; type: string; label: string } {
  const meta = { source: 'localfs', path: `/tmp/fuzz-${int(1e6)}.txt` } as Record<string, unknown>;
  const cases: (() => { body: Buffer; type: string; label: string })[] = [
    () => ({ ...multipartBody([{ name: 'meta', value: JSON.stringify(meta) }, { name: 'upload', value: crypto.randomBytes(int(4096)), filename: 'r.bin' }]), label: 'random bytes' }),
    () => ({ ...multipartBody([{ name: 'meta', value: JSON.stringify(meta) }, { name: 'upload', value: Buffer.from(`<html>${'<div>'.repeat(5_000)}x`), filename: 'n.html', type: 'text/html' }]), label: 'nested html' }),
    () => ({ ...multipartBody([{ name: 'meta', value: JSON.stringify({ ...meta, path: pick(HOSTILE_STRINGS)() }) }, { name: 'upload', value: 'hello', filename: 'h.txt' }]), label: 'hostile path' }),
    () => ({ ...multipartBody([{ name: 'meta', value: nested(20_000) }, { name: 'upload', value: 'hello', filename: 'h.txt' }]), label: 'deep meta' }),
    () => ({ ...multipartBody([{ name: 'meta', value: '{"path":' }, { name: 'upload', value: 'hello', filename: 'h.txt' }]), label: 'broken meta' }),
    () => ({ ...multipartBody([{ name: 'meta', value: JSON.stringify({ ...meta, [pick(['tags', 'mtime', 'size', 'intent', 'enrichment'])]: pick(HOSTILE_VALUES)() }) }, { name: 'upload', value: 'hello', filename: 'h.txt' }]), label: 'wrong-type meta field' }),
    () => ({ ...multipartBody([{ name: 'upload', value: 'hello', filename: 'x'.repeat(5_000) }]), label: 'no meta, long filename' }),
    () => {
      const m = multipartBody([{ name: 'meta', value: JSON.stringify(meta) }, { name: 'upload', value: 'hello world', filename: 'h.txt' }]);
      return { body: m.body.subarray(0, m.body.length - 20), type: m.type, label: 'truncated multipart' };
    },
    () => ({ body: Buffer.from('--x\r\ngarbage'), type: 'multipart/form-data', label: 'no boundary' }),
  ];
  return pick(cases)();
}

interface Operation {
  method: string;
  path: string;
  parameters: { name: string; in: string; required?: boolean; schema?: Schema }[];
  bodySchema?: Schema;
  bodyTypes: string[];
  /** 5xx statuses the operation documents (GET /v1/readyz: 503 while the index is prepared). */
  documented5xx: number[];
}

function makeProbe(op: Operation): Probe {
  const headers: Record<string, string> = { authorization: `Bearer ${TEST_TOKEN}` };
  const hostilePath = rnd() < 0.3;
  const hostileQuery = rnd() < 0.5;
  const url = fillPath(op.path, op, hostilePath) + queryString(op, hostileQuery);
  const labels = [hostilePath ? 'hostile path' : '', hostileQuery ? 'hostile query' : ''].filter(Boolean);
  const hasBody = op.method !== 'GET' && op.method !== 'DELETE';
  if (!hasBody) return { method: op.method, path: url, headers, label: labels.join(', ') || 'sampled' };

  if (op.bodyTypes.length === 0 && rnd() < 0.7) {
    const m = multipartProbe();
    return { method: op.method, path: url, headers: { ...headers, 'content-type': m.type }, body: m.body, label: [...labels, `multipart: ${m.label}`].join(', ') };
  }
  let body: Buffer;
  let label: string;
  let type = 'application/json';
  const valid = () => sample(op.bodySchema);
  switch (int(7)) {
    case 0:
      body = json(valid());
      label = 'sampled body';
      break;
    case 1: {
      const v = valid();
      const ps = paths(v);
      const at = ps.length ? pick(ps) : [];
      body = json(setAt(v, at, pick(HOSTILE_STRINGS)()));
      label = `hostile string at ${JSON.stringify(at)}`;
      break;
    }
    case 2: {
      const v = valid();
      const ps = paths(v);
      const at = ps.length ? pick(ps) : [];
      body = json(setAt(v, at, pick(HOSTILE_VALUES)()));
      label = `wrong type at ${JSON.stringify(at)}`;
      break;
    }
    case 3: {
      const v = valid();
      const ps = paths(v).filter((p) => typeof p[p.length - 1] === 'string');
      const at = ps.length ? pick(ps) : ['metadata'];
      const raw = JSON.stringify(setAt(v && typeof v === 'object' ? v : {}, at, '__NEST__'));
      body = Buffer.from(raw.replace('"__NEST__"', nested(200 + int(5_000))));
      label = `deep nesting at ${JSON.stringify(at)}`;
      break;
    }
    case 4:
      body = pick(RAW_BODIES)();
      label = 'broken JSON';
      break;
    case 5: {
      body = json(valid());
      type = pick(['text/plain', 'application/x-www-form-urlencoded', 'application/json; charset=utf-16', 'application/xml', '', 'multipart/form-data']);
      label = `content-type ${type || '(none)'}`;
      break;
    }
    default: {
      const v = valid() as Record<string, unknown>;
      const extra = v && typeof v === 'object' && !Array.isArray(v) ? { ...v, [`extra_${int(100)}`]: pick(HOSTILE_VALUES)() } : v;
      body = json(extra);
      label = 'extra field';
    }
  }
  const h = { ...headers, ...(type ? { 'content-type': type } : {}) };
  return { method: op.method, path: url, headers: h, body, label: [...labels, label].join(', ') };
}

function send(port: number, probe: Probe, timeoutMs: number): Promise<{ status: number; ms: number; body: string }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(
      // A fresh connection each time: a server may close a connection after refusing a body it did not read.
      { host: '127.0.0.1', port, agent: false, method: probe.method, path: probe.path, headers: { ...probe.headers, ...(probe.body ? { 'content-length': String(probe.body.length) } : {}) } },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size < MAX_READ) chunks.push(c);
          size += c.length;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - started, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', (e) => resolve({ status: -1, ms: performance.now() - started, body: `response error: ${e.message}` }));
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no answer within ${Math.round(timeoutMs)} ms`)));
    req.on('error', (e) => resolve({ status: -1, ms: performance.now() - started, body: `request error: ${e.message}` }));
    if (probe.body) req.end(probe.body);
    else req.end();
  });
}

// ------------------------------------------------------------------------------------------------ the test

/** A 422 body in the spec's shape. */
function validationShaped(body: string): boolean {
  try {
    const d = JSON.parse(body).detail;
    return Array.isArray(d) && d.length > 0 && d.every((i: any) => Array.isArray(i.loc) && typeof i.msg === 'string' && typeof i.type === 'string');
  } catch {
    return body.length >= MAX_READ; // cut short by the reader: the shape cannot be judged
  }
}

let gw: TestGateway;
let port: number;

beforeAll(async () => {
  gw = await startTestGateway({ files: { env: { EXTRACT_HTML_TIMEOUT_MS: '2000' } } });
  await gw.app.listen({ host: '127.0.0.1', port: 0 });
  port = (gw.app.server.address() as AddressInfo).port;
});
afterAll(async () => {
  await gw?.close();
  await shutdownExtraction();
});

describe(`fuzzing every OpenAPI operation on ${backend}`, () => {
  it('answers malformed requests with a 4xx (never a 5xx) and in time', async () => {
    const doc = (await gw.request('GET', '/openapi.json')).json();
    components = doc.components?.schemas ?? {};
    const ops: Operation[] = [];
    for (const [path, item] of Object.entries<Record<string, any>>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(item)) {
        if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
        const content = op.requestBody?.content ?? {};
        ops.push({
          method: method.toUpperCase(),
          path,
          parameters: op.parameters ?? [],
          bodySchema: content['application/json']?.schema,
          bodyTypes: Object.keys(content),
          documented5xx: Object.keys(op.responses ?? {}).map(Number).filter((s) => s >= 500),
        });
      }
    }
    expect(ops.length).toBeGreaterThan(20);

    const failures: string[] = [];
    const statuses = new Map<number, number>();
    const sent = new Map<string, number>();
    const started = Date.now();
    let requests = 0;
    for (let round = 0; round < ROUNDS_MAX; round++) {
      if (round >= ROUNDS_MIN && Date.now() - started > TIME_BUDGET_MS) break;
      for (const op of ops) {
        const probe = makeProbe(op);
        const bound = slowBound();
        const r = await send(port, probe, bound + 1_000);
        requests++;
        statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
        sent.set(`${op.method} ${op.path}`, (sent.get(`${op.method} ${op.path}`) ?? 0) + 1);
        const what = `${probe.method} ${probe.path.slice(0, 160)} [${probe.label}] (seed ${SEED}, round ${round})`;
        if ((r.status >= 500 && !op.documented5xx.includes(r.status)) || r.status < 0) failures.push(`${what} -> ${r.status} ${r.body.slice(0, 300)}`);
        else if (r.ms > bound) failures.push(`${what} -> answered in ${Math.round(r.ms)} ms (bound ${Math.round(bound)} ms)`);
        else if (r.status === 422 && !validationShaped(r.body)) failures.push(`${what} -> 422 not in the {detail:[{loc,msg,type}]} shape: ${r.body.slice(0, 300)}`);
      }
    }
    if (process.env.MEMEX_FUZZ_VERBOSE) console.log(`${requests} requests, statuses`, Object.fromEntries(statuses));
    // Every operation was exercised, and the server is still healthy.
    expect([...sent.keys()].sort()).toEqual(ops.map((o) => `${o.method} ${o.path}`).sort());
    expect((await send(port, { method: 'GET', path: '/v1/healthz', headers: {}, label: 'health' }, 30_000)).status).toBe(200);
    expect(failures, `${failures.length} of ${requests} requests failed`).toEqual([]);
  }, 300_000);
});
