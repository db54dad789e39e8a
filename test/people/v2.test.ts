import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

const docEnvelope = (overrides: Record<string, unknown> = {}, payload: Record<string, unknown> = {}) => ({
  schema_version: '2.0',
  kind: 'document',
  source: { source_type: 'chatapp', source_provider: 'messages', source_account_id: 'acct-1' },
  payload: {
    external_id: `msg-${Math.random().toString(36).slice(2)}`,
    text: 'Are we still on for dinner at eight?',
    content_timestamp: '2026-05-01T19:00:00Z',
    content_timestamp_type: 'sent',
    people: [
      { identifier: '+1 617 555 0123', identifier_type: 'phone', role: 'sender', display_name: 'Sam' },
      { identifier: 'me@self.example', identifier_type: 'email', role: 'recipient' },
    ],
    thread: { external_id: 'chat-42', is_group: false, thread_type: 'direct' },
    metadata: { message: { guid: 'g-1' }, custom: [1, 2, 3] },
    ...payload,
  },
  ...overrides,
});

const personEnvelope = (payload: Record<string, unknown> = {}, overrides: Record<string, unknown> = {}) => ({
  schema_version: '2.0',
  kind: 'person',
  source: { source_type: 'contacts', source_provider: 'carddav' },
  payload: {
    external_id: 'p-1',
    display_name: 'Priya Patel',
    given_name: 'Priya',
    organization: 'Patel & Co',
    identifiers: [
      { kind: 'phone', value_raw: '(415) 555-0199', label: 'Mobile' },
      { kind: 'email', value_raw: 'Priya@Patel.example' },
      { kind: 'imessage', value_raw: 'priya.icloud@me.example' },
      { kind: 'fax', value_raw: '415-555-0100' },
    ],
    ...payload,
  },
  ...overrides,
});

describe('v2 envelopes', () => {
  it('ingests a document envelope and keeps its payload (202 new, 200 duplicate)', async () => {
    const env = docEnvelope();
    const first = await gw.request('POST', '/v2/ingest/document', env);
    expect(first.statusCode).toBe(202);
    const r = first.json();
    expect(r).toMatchObject({ external_id: env.payload.external_id, version_number: 1, duplicate: false });
    expect(r.thread_id).toBeTruthy();
    const again = await gw.request('POST', '/v2/ingest/document', env);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ doc_id: r.doc_id, duplicate: true });

    const doc = (await gw.request('GET', `/v1/doc/${r.doc_id}`)).json();
    expect(doc).toMatchObject({ source_type: 'chatapp', source_provider: 'messages', source_account_id: 'acct-1', content_timestamp_type: 'sent' });
    expect(doc.metadata.message).toEqual({ guid: 'g-1' });
    expect(doc.metadata.custom).toEqual([1, 2, 3]);
    const links = await gw.db.query('SELECT role FROM document_people WHERE doc_id = $1 ORDER BY role', [r.doc_id]);
    expect(links.rows.map((x: any) => x.role)).toEqual(['recipient', 'sender']);
  });

  it('ingests a person envelope into the people tables', async () => {
    const res = await gw.request('POST', '/v2/ingest/person', personEnvelope());
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ external_id: 'p-1', version: 1, status: 'upserted', deleted: false });
    const person = (await gw.request('GET', `/v1/people/${body.person_id}`)).json();
    expect(person.emails.sort()).toEqual(['priya.icloud@me.example', 'priya@patel.example']);
    expect(person.phones).toEqual(['+14155550199']);
    expect(person.notes).toContain('fax:415-555-0100');
    expect(person.sources).toEqual([{ source: 'contacts:carddav:default', external_id: 'p-1', deleted: false }]);

    const del = await gw.request('POST', '/v2/ingest/person', personEnvelope({ deleted: true, version: 2 }));
    expect(del.json()).toMatchObject({ person_id: body.person_id, status: 'deleted', deleted: true, version: 2 });
    const stale = await gw.request('POST', '/v2/ingest/person', personEnvelope({ version: 1 }));
    expect(stale.statusCode).toBe(409);
  });

  it.each([
    ['wrong schema_version', '/v2/ingest/document', docEnvelope({ schema_version: '1.0' }), 'schema_version'],
    ['schema_version not a string', '/v2/ingest/document', docEnvelope({ schema_version: 2 }), 'schema_version'],
    ['wrong kind', '/v2/ingest/document', docEnvelope({ kind: 'person' }), 'kind'],
    ['document on the person route', '/v2/ingest/person', docEnvelope(), 'kind'],
    ['missing payload', '/v2/ingest/document', { schema_version: '2.0', kind: 'document', source: { source_type: 'note' } }, 'payload'],
    ['missing source', '/v2/ingest/person', { schema_version: '2.0', kind: 'person', payload: { external_id: 'x', display_name: 'X' } }, 'source'],
    ['unknown source_type', '/v2/ingest/document', docEnvelope({ source: { source_type: 'fax' } }), 'source'],
    ['payload without text', '/v2/ingest/document', docEnvelope({}, { text: undefined }), 'payload'],
    ['bad timestamp type', '/v2/ingest/document', docEnvelope({}, { content_timestamp_type: 'whenever' }), 'payload'],
  ])('answers 422 for %s', async (_name, url, body, field) => {
    const res = await gw.request('POST', url, JSON.parse(JSON.stringify(body)));
    expect(res.statusCode).toBe(422);
    const detail = res.json().detail;
    expect(Array.isArray(detail)).toBe(true);
    expect(detail.some((d: any) => d.loc[0] === 'body' && d.loc[1] === field)).toBe(true);
  });

  it('accepts any 2.x schema version', async () => {
    const res = await gw.request('POST', '/v2/ingest/document', docEnvelope({ schema_version: '2.3' }));
    expect(res.statusCode).toBe(202);
  });

  it('processes a batch item by item; one bad envelope does not stop the others', async () => {
    const good = docEnvelope();
    const res = await gw.request('POST', '/v2/ingest:batch', [
      good,
      docEnvelope({ schema_version: '3.0' }),
      personEnvelope({ external_id: 'p-batch', display_name: 'Batch Person' }),
      { kind: 'spaceship' },
      { schema_version: '2.0', kind: 'document', source: { source_type: 'note' } },
      good,
    ]);
    expect(res.statusCode).toBe(207);
    const body = res.json();
    expect(body).toMatchObject({ total_count: 6, success_count: 3, failure_count: 3 });
    expect(body.results.map((r: any) => r.status_code)).toEqual([202, 422, 200, 422, 422, 200]);
    expect(body.results[0].document.doc_id).toBe(body.results[5].document.doc_id);
    expect(body.results[2].person).toMatchObject({ external_id: 'p-batch', status: 'upserted' });
    expect(body.results[1].error.details.detail[0].loc).toEqual(['body', 1, 'schema_version']);
    expect(body.results[4].error.details.detail[0].loc).toEqual(['body', 4, 'payload']);

    const allGood = await gw.request('POST', '/v2/ingest:batch', [docEnvelope()]);
    expect(allGood.statusCode).toBe(202);
    for (const bad of [{}, [], { kind: 'document' }]) {
      expect((await gw.request('POST', '/v2/ingest:batch', bad)).statusCode).toBe(422);
    }
  });
});
