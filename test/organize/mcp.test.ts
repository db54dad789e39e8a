/**
 * Issue 44's MCP tools through the SDK's own client over streamable HTTP against a live gateway: list_tags,
 * list_saved_searches, run_saved_search (which leaves "new since you last looked" to the user) and, with
 * MCP_ALLOW_WRITE, tag_documents.
 */
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let client: Client;
const ids: string[] = [];
const before = process.env.MCP_ALLOW_WRITE;

const call = (name: string, args: Record<string, unknown> = {}) => client.callTool({ name, arguments: args }) as Promise<CallToolResult>;

beforeAll(async () => {
  process.env.MCP_ALLOW_WRITE = 'true';
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const url = `http://127.0.0.1:${(gw.app.server.address() as AddressInfo).port}`;
  for (const data of ['The ferry to Tangier leaves at nine.', 'The ferry back is at six.', 'Buy bread.']) {
    ids.push((await gw.request('POST', '/v1/ingest', noteBody({ title: null, content: { mime_type: 'text/plain', data } }))).json().doc_id);
  }
  client = new Client({ name: 'memex-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), { requestInit: { headers: { authorization: `Bearer ${TEST_TOKEN}` } } }));
  // Listing makes the client check every tool's structured content against its output schema.
  await client.listTools();
}, 120_000);

afterAll(async () => {
  if (before === undefined) delete process.env.MCP_ALLOW_WRITE;
  else process.env.MCP_ALLOW_WRITE = before;
  await client?.close();
  await gw?.close();
});

describe('MCP tags and saved searches (issue 44)', () => {
  it('tags by query and by id, and lists the tags', async () => {
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['list_tags', 'list_saved_searches', 'run_saved_search', 'tag_documents']));
    const r = await call('tag_documents', { tag: 'Travel/Morocco', query: 'ferry' });
    expect(r.isError, JSON.stringify(r.content)).toBeFalsy();
    expect(r.structuredContent).toEqual({ tag: 'travel/morocco', matched: 2, changed: 2 });
    await call('tag_documents', { tag: 'errands', document_ids: [ids[2]] });
    const list = await call('list_tags');
    expect((list.structuredContent as any).tags).toEqual([
      { name: 'errands', documents: 1, conversations: 0, rules: 0 },
      { name: 'travel/morocco', documents: 2, conversations: 0, rules: 0 },
    ]);
    const bad = await call('tag_documents', { tag: 'no good', document_ids: [ids[0]] });
    expect(bad.isError).toBe(true);
    expect((bad.content as any)[0].text).toMatch(/letter or digit/);
  });

  it('lists and runs saved searches without marking them looked at', async () => {
    expect((await gw.request('PUT', '/v1/saved/morocco', { query: 'tag:travel/*' })).statusCode).toBe(200);
    const run = await call('run_saved_search', { name: '@morocco' });
    expect(run.isError, JSON.stringify(run.content)).toBeFalsy();
    expect((run.structuredContent as any).hits.map((h: any) => h.document_id).sort()).toEqual([ids[0], ids[1]].sort());
    const list = await call('list_saved_searches');
    expect((list.structuredContent as any).saved).toEqual([
      { name: 'morocco', query: 'tag:travel/*', filters: {}, count: 2, new_since_seen: 2, seen_at: null },
    ]);
    const none = await call('run_saved_search', { name: 'nothing' });
    expect(none.isError).toBe(true);
  });
});
