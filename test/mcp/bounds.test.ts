/**
 * Stored strings and MCP outputs are bounded (issue 33 item 5): a 5 MB title or a 1 MB canonical_uri
 * made every answer that shows the document as large (MCP get_document {max_chars: 100} answered
 * 10 MB). A title is stored cut at 1,000 characters, a URI past 8,192 is a 422 naming the field, and
 * every MCP output keeps the bounds its description states, through the official SDK client.
 */
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, type CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let client: Client;
let docId: string;

const LONG_TITLE = `Quarterly zorblax report ${'very long title '.repeat(3_200)}`; // ~51,000 characters
const URL_OK = `https://files.example/${'p/'.repeat(1_500)}zorblax.pdf`; // ~3,000 characters: stored, cut in MCP
const TEXT = `The zorblax figures are in. ${'Revenue rose in every region and the board was pleased. '.repeat(4_500)}`; // ~250 KB

const call = (name: string, args: Record<string, unknown>) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const textOf = (r: CallToolResult) => (r.content as { type: string; text: string }[]).map((x) => x.text).join('\n');

beforeAll(async () => {
  gw = await startTestGateway();
  const r = await gw.request('POST', '/v1/ingest', {
    source_type: 'note',
    source_id: 'note-zorblax',
    title: LONG_TITLE,
    canonical_uri: URL_OK,
    content: { mime_type: 'text/plain', data: TEXT },
    content_timestamp: '2026-11-20T09:00:00Z',
    people: Array.from({ length: 40 }, (_, i) => ({ identifier: `p${i}@example.org`, role: 'recipient', display_name: `Person ${'N'.repeat(400)} ${i}` })),
    metadata: {
      folder: 'reports',
      headers: { received: 'x'.repeat(30_000) },
      ...Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`field_${i}`, 'v'.repeat(150)])),
    },
  });
  expect(r.statusCode, r.body.slice(0, 300)).toBe(202);
  docId = r.json().doc_id;
  const url = await gw.app.listen({ port: 0, host: '127.0.0.1' });
  client = new Client({ name: 'memex-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers: { authorization: `Bearer ${TEST_TOKEN}` } } }));
  await client.listTools();
  void (gw.app.server.address() as AddressInfo);
}, 180_000);

afterAll(async () => {
  await client?.close();
  await gw?.close();
});

describe(`stored strings on ${backend}`, () => {
  it('stores a title cut at 1,000 characters, and refuses a canonical_uri past 8,192 naming it', async () => {
    const doc = (await gw.request('GET', `/v1/doc/${docId}`)).json();
    expect(Array.from(doc.title as string).length).toBe(1000);
    expect(doc.title.endsWith('…')).toBe(true);
    expect(doc.title.startsWith('Quarterly zorblax report')).toBe(true);

    const v1 = await gw.request('POST', '/v1/ingest', {
      source_type: 'note',
      source_id: 'note-long-uri',
      canonical_uri: `https://x.example/${'a'.repeat(1_000_000)}`,
      content: { data: 'A note with a very long link.' },
    });
    expect(v1.statusCode).toBe(422);
    expect(v1.json().detail[0].loc).toEqual(['body', 'canonical_uri']);

    const v2 = await gw.request('POST', '/v2/ingest/document', {
      schema_version: '2.0',
      kind: 'document',
      source: { source_type: 'note' },
      payload: {
        external_id: 'v2-long-uri',
        title: LONG_TITLE,
        text: 'Another note with a very long link.',
        canonical_uri: `https://x.example/${'a'.repeat(20_000)}`,
        content_timestamp: '2026-11-20T09:00:00Z',
        content_timestamp_type: 'created',
      },
    });
    expect(v2.statusCode).toBe(422);
    expect(JSON.stringify(v2.json().detail)).toContain('canonical_uri');

    const search = await gw.request('GET', '/v1/search?q=zorblax');
    expect(search.statusCode).toBe(200);
    for (const h of search.json().hits) expect(Array.from(h.title as string).length).toBeLessThanOrEqual(1000);
  });
});

describe(`MCP outputs keep their bounds on ${backend}`, () => {
  it('search: titles, URLs and people cut, a small answer', async () => {
    const r = await call('search', { query: 'zorblax', k: 10 });
    expect(r.isError).toBeFalsy();
    const hits = (r.structuredContent as any).hits;
    expect(hits.length).toBeGreaterThan(0);
    for (const h of hits) {
      expect(h.title.length).toBeLessThanOrEqual(300);
      expect(h.url.length).toBeLessThanOrEqual(2000);
      expect(h.snippet.length).toBeLessThanOrEqual(400 + 60);
      expect(h.people.length).toBeLessThanOrEqual(20);
      for (const p of h.people) expect(p.length).toBeLessThanOrEqual(200);
    }
    expect(JSON.stringify(r.structuredContent).length).toBeLessThan(hits.length * 8_000);
    expect(textOf(r).length).toBeLessThan(hits.length * 1_500);
  });

  it('get_document: max_chars bounds the whole result', async () => {
    for (const max of [100, 5_000, 20_000]) {
      const r = await call('get_document', { document_id: docId, max_chars: max });
      expect(r.isError).toBeFalsy();
      const s = r.structuredContent as any;
      expect(s.document_id).toBe(docId);
      expect(JSON.stringify(s).length, `structured, max_chars ${max}`).toBeLessThanOrEqual(max + 2_000);
      expect(textOf(r).length, `text, max_chars ${max}`).toBeLessThanOrEqual(max + 2_000);
      expect(s.text_chars).toBeGreaterThan(200_000);
    }
    const small = (await call('get_document', { document_id: docId, max_chars: 100 })).structuredContent as any;
    expect(small.title.startsWith('Quarterly zorblax')).toBe(true);
    expect(small.truncated).toBe(true);
  });

  it('resources/read: the first 20,000 characters, cut with a marker', async () => {
    const r = await client.readResource({ uri: `memex://document/${docId}` });
    const text = (r.contents[0] as { text: string }).text;
    expect(text.length).toBeLessThanOrEqual(20_000 + 1_000);
    expect(text).toContain('zorblax');
    expect(text).toMatch(/\[… truncated: \d+ more characters\]$/);
  });
});

describe(`MCP arguments of the wrong JSON type on ${backend}`, () => {
  it('tools/call with arguments that are not an object answers -32602 with a short message', async () => {
    for (const args of ['zorblax', [1, 2], 7, null, true]) {
      const err = await client
        .request({ method: 'tools/call', params: { name: 'search', arguments: args as any } }, CallToolResultSchema)
        .then(() => undefined, (e: { code?: number; message?: string }) => e);
      expect(err, JSON.stringify(args)).toBeDefined();
      expect(err!.code, JSON.stringify(args)).toBe(-32602);
      expect(err!.message).toMatch(/arguments of search must be a JSON object/);
      expect(String(err!.message).length).toBeLessThan(200);
    }
    // The server keeps serving, and fields of the wrong type stay tool errors naming the field.
    const r = await call('search', { query: 5 } as any);
    expect(r.isError).toBe(true);
    expect(textOf(r)).toMatch(/query/);
    expect((await call('search', { query: 'zorblax' })).isError).toBeFalsy();
  });
});
