/**
 * Where memex differed from the gateway spec (issue 36 item 5), as a client sees it: the account in a document's
 * identity, has_attachments=false as the declared default, a thread's source_type from its set, ask's k capped, and
 * the context route's catalog-token switch. (A document whose embedding failed is `failed`:
 * test/embedding/worker.test.ts.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
}, 60_000);
afterAll(async () => {
  await gw?.close();
});

describe('a version identity includes the account (spec 2.1)', () => {
  it('the same external id and text under a second source_account_id is a new document', async () => {
    const body = (account: string) =>
      noteBody({
        source_type: 'email',
        source_id: 'msg-<same@example.com>',
        external_id: '<same@example.com>',
        source_account_id: account,
        content: { mime_type: 'text/plain', data: 'Lunch on Friday at noon?' },
      });
    const first = await gw.request('POST', '/v1/ingest', body('work@example.com'));
    expect(first.statusCode).toBe(202);
    const second = await gw.request('POST', '/v1/ingest', body('home@example.com'));
    expect(second.statusCode, second.body).toBe(202);
    expect(second.json().duplicate).toBe(false);
    expect(second.json().doc_id).not.toBe(first.json().doc_id);
    // Both are stored and active; the same account again is still the duplicate.
    expect((await gw.request('GET', `/v1/doc/${first.json().doc_id}`)).statusCode).toBe(200);
    expect((await gw.request('GET', `/v1/doc/${second.json().doc_id}`)).statusCode).toBe(200);
    const again = await gw.request('POST', '/v1/ingest', body('home@example.com'));
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ duplicate: true, doc_id: second.json().doc_id });
  });

  it('so does a v2 document envelope', async () => {
    const env = (account: string) => ({
      schema_version: '2.0',
      kind: 'document',
      source: { source_type: 'chatapp', source_provider: 'contract', source_account_id: account },
      payload: {
        external_id: 'chat-msg-1',
        text: 'See you at the station.',
        content_timestamp: '2026-03-01T10:15:00Z',
        content_timestamp_type: 'sent',
      },
    });
    const first = await gw.request('POST', '/v2/ingest/document', env('phone-a'));
    expect(first.statusCode).toBe(202);
    const second = await gw.request('POST', '/v2/ingest/document', env('phone-b'));
    expect(second.statusCode, second.body).toBe(202);
    expect(second.json().doc_id).not.toBe(first.json().doc_id);
  });
});

it('GET /v1/documents: has_attachments=false is the declared default, the same as leaving it out (spec 4.2)', async () => {
  const attachments = [{ index: 0, kind: 'pdf', role: 'attachment', mime_type: 'application/pdf' }];
  await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'with-attachment', metadata: { attachments } }));
  await gw.request('POST', '/v1/ingest', noteBody({ source_id: 'without-attachment' }));
  const ids = async (query: string) =>
    ((await gw.request('GET', `/v1/documents?source_type=note${query}`)).json().documents as { doc_id: string }[]).map((d) => d.doc_id).sort();
  const omitted = await ids('');
  expect(omitted.length).toBeGreaterThanOrEqual(2);
  expect(await ids('&has_attachments=false')).toEqual(omitted);
  const only = await ids('&has_attachments=true');
  expect(only.length).toBeGreaterThanOrEqual(1);
  expect(only.length).toBeLessThan(omitted.length);
  const doc = await gw.request('GET', '/openapi.json');
  const param = doc.json().paths['/v1/documents'].get.parameters.find((p: any) => p.name === 'has_attachments');
  expect(param.schema.default).toBe(false);
});

it("a thread's source_type is one of the spec's (2.2); a thread without one takes its document's", async () => {
  const thread = (source_type?: string) => ({ external_id: 'thread-1', ...(source_type ? { source_type } : {}) });
  const bad = await gw.request('POST', '/v1/ingest', noteBody({ source_type: 'sms', thread: thread('carrier-pigeon') }));
  expect(bad.statusCode).toBe(422);
  expect(bad.json().detail[0].loc).toEqual(['body', 'thread', 'source_type']);
  expect((await gw.request('POST', '/v1/ingest', noteBody({ source_type: 'sms', thread: thread('whatsapp') }))).statusCode).toBe(202);
  expect((await gw.request('POST', '/v1/ingest', noteBody({ source_type: 'sms', source_id: 'sms-2', thread: thread() }))).statusCode).toBe(202);
});

it('ask: k is optional and above 20 is read as 20, as the original did (no 422)', async () => {
  const capped = await gw.request('POST', '/v1/ask', { query: 'When is lunch?', k: 50 });
  expect(capped.statusCode, capped.body).toBe(200);
  expect((await gw.request('POST', '/v1/ask', { query: 'When is lunch?' })).statusCode).toBe(200);
  const schema = (await gw.request('GET', '/openapi.json')).json().paths['/v1/ask'].post.requestBody.content['application/json'].schema;
  expect(schema.required ?? []).not.toContain('k');
});

describe('GET /v1/context/general may require the catalog token (spec 4.3 rule 6, 5.4)', () => {
  it('takes the access token by default', async () => {
    expect((await gw.request('GET', '/v1/context/general')).statusCode).toBe(200);
  });

  it('with CONTEXT_REQUIRE_CATALOG_TOKEN=true, the catalog token instead', async () => {
    const catalogToken = 'catalog-token-0123456789';
    const strict = await startTestGateway({ config: { catalogToken, contextRequireCatalogToken: true } });
    try {
      expect((await strict.request('GET', '/v1/context/general')).statusCode).toBe(403);
      const res = await strict.request('GET', '/v1/context/general', undefined, { authorization: `Bearer ${catalogToken}` });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ total_messages: expect.any(Number), top_threads: expect.any(Array) });
      // Other routes keep the access token.
      expect((await strict.request('GET', '/v1/documents')).statusCode).toBe(200);
      expect(TEST_TOKEN).not.toBe(catalogToken);
    } finally {
      await strict.close();
    }
  });
});
