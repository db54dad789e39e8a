import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { card, syncContacts } from './helpers.ts';

let gw: TestGateway;
let base: string;
const N = 10_000;

beforeAll(async () => {
  gw = await startTestGateway();
  // Two cards through the real sync path, the other 9,998 written in bulk (the export reads the
  // people tables; syncing 10k cards through the catalog would only slow the test down).
  await syncContacts(gw, [
    card({ external_id: 'exp-1', display_name: 'Export One', emails: [{ value: 'one@export.example' }], phones: [{ value: '617-555-0101' }] }),
    card({ external_id: 'exp-2', display_name: 'Export Two', emails: [{ value: 'two@export.example' }] }),
  ]);
  await gw.db.query(
    `INSERT INTO people (person_id, display_name, source, updated_at)
     SELECT gen_random_uuid(), 'Bulk ' || g, 'bulk', now() - interval '1 day' FROM generate_series(1, $1) g`,
    [N - 2],
  );
  await gw.db.query(
    `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical)
     SELECT person_id, 'email', lower(replace(display_name, ' ', '')) || '@bulk.example',
            lower(replace(display_name, ' ', '')) || '@bulk.example' FROM people WHERE source = 'bulk'`,
  );
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

function get(path: string): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string; chunks: number }> {
  return new Promise((resolve, reject) => {
    http
      .get(`${base}${path}`, { headers: { authorization: `Bearer ${TEST_TOKEN}` } }, (res) => {
        let body = '';
        let chunks = 0;
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          chunks += 1;
          body += d;
        });
        res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body, chunks }));
      })
      .on('error', reject);
  });
}

describe('GET /catalog/contacts/export', () => {
  it('streams 10,000 people as NDJSON, one per line, with identifiers', async () => {
    const res = await get('/catalog/contacts/export?full=true');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/x-ndjson/);
    // Streamed: chunked transfer, no content-length, and the body arrived in many pieces.
    expect(res.headers['transfer-encoding']).toBe('chunked');
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.chunks).toBeGreaterThan(1);
    const lines = res.body.split('\n').filter(Boolean);
    expect(lines).toHaveLength(N);
    const people = lines.map((l) => JSON.parse(l));
    expect(new Set(people.map((p) => p.person_id)).size).toBe(N);
    const one = people.find((p) => p.display_name === 'Export One');
    expect(one.identifiers.map((i: any) => i.value_canonical).sort()).toEqual(['+16175550101', 'one@export.example']);
    expect(one.sources).toEqual([{ source: 'host_contacts', external_id: 'exp-1', deleted: false }]);
    expect(people.find((p) => p.display_name === 'Bulk 17').emails).toEqual(['bulk17@bulk.example']);
    expect(res.headers['x-since-token-next']).toBeTruthy();
  }, 120_000);

  it('exports only what changed after a token, deletions included', async () => {
    const first = await get('/catalog/contacts/export');
    const token = first.headers['x-since-token-next'] as string;
    expect(first.body.split('\n').filter(Boolean)).toHaveLength(N);

    const nothing = await get(`/catalog/contacts/export?since_token=${token}`);
    expect(nothing.status).toBe(200);
    expect(nothing.body).toBe('');

    await syncContacts(gw, [
      card({ external_id: 'exp-2', display_name: 'Export Two', emails: [{ value: 'two@export.example' }], deleted: true }),
      card({ external_id: 'exp-3', display_name: 'Export Three' }),
    ]);
    const delta = await get(`/catalog/contacts/export?since_token=${token}`);
    const changed = delta.body.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    expect(changed.map((p) => [p.display_name, p.deleted]).sort()).toEqual([
      ['Export Three', false],
      ['Export Two', true],
    ]);
    // full=true ignores the token and lists live people only.
    const full = await get(`/catalog/contacts/export?full=true&since_token=${token}`);
    expect(full.body.split('\n').filter(Boolean)).toHaveLength(N);
  }, 120_000);

  it('rejects a token it cannot read with 422', async () => {
    const res = await get('/catalog/contacts/export?since_token=garbage!');
    expect(res.status).toBe(422);
  });

  it('needs the gateway token', async () => {
    const res = await gw.request('GET', '/catalog/contacts/export', undefined, { authorization: '' });
    expect(res.statusCode).toBe(401);
  });
});
