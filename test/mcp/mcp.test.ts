/**
 * The MCP server through the SDK's own Client, over both transports, against a live gateway (a real
 * socket) holding the relationship history of test/relationships plus a few written documents:
 * `memex mcp` as a child process over stdio, and POST /mcp over streamable HTTP.
 */
import path from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { ingestBody, loadHistory, ME_EMAIL, type Loaded } from '../relationships/fixture.ts';
import { startRelGateway, type RelGateway } from '../relationships/helpers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const TOOLS = [
  'ask', 'get_document', 'get_person', 'list_saved_searches', 'list_tags', 'merge_candidates', 'recent_activity', 'run_saved_search', 'search',
  'search_people', 'top_relationships',
];

let gw: RelGateway;
let h: Loaded;
let url: string;
const docs: Record<string, string> = {};

async function httpClient(token: string | null = TEST_TOKEN, base = url): Promise<Client> {
  const client = new Client({ name: 'memex-test', version: '1.0.0' });
  const transport = new StreamableHTTPClientTransport(new URL('/mcp', base), {
    requestInit: token ? { headers: { authorization: `Bearer ${token}` } } : {},
  });
  await client.connect(transport);
  // Listing makes the client check every tool's structured content against its output schema.
  await client.listTools();
  return client;
}

function stdioClient(env: Record<string, string>): { client: Client; transport: StdioClientTransport; stderr: () => string } {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [path.join(ROOT, 'bin/memex.js'), 'mcp'],
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', DATA_DIR: '/nonexistent', ...env },
    stderr: 'pipe',
  });
  let err = '';
  transport.stderr?.on('data', (b: Buffer) => (err += b.toString()));
  return { client: new Client({ name: 'memex-test', version: '1.0.0' }), transport, stderr: () => err };
}

const call = (c: Client, name: string, args: Record<string, unknown> = {}) =>
  c.callTool({ name, arguments: args }) as Promise<CallToolResult>;
const text = (r: CallToolResult) => (r.content as { type: string; text: string }[]).map((x) => x.text).join('\n');

beforeAll(async () => {
  gw = await startRelGateway();
  h = await loadHistory(gw, new Date(Math.floor(Date.now() / 60_000) * 60_000));
  expect((await gw.request('POST', '/v1/admin/relationships/recompute')).statusCode).toBe(200);
  const written = [
    {
      key: 'lisbon',
      title: 'Trip to Lisbon',
      text: 'Book the night train to Lisbon for the architecture conference. Hotel near Alfama, check-in on the 12th.',
    },
    {
      key: 'boiler',
      title: 'Boiler service',
      text: 'The plumber replaced the pressure valve of the boiler; the next annual service is due in October. He also bled the radiators upstairs and checked the flue.',
    },
  ];
  for (const w of written) {
    const r = await gw.request('POST', '/v1/ingest', {
      source_type: 'note',
      source_id: `note-${w.key}`,
      title: w.title,
      content: { mime_type: 'text/plain', data: w.text },
      content_timestamp: new Date(Date.now() - 3600_000).toISOString(),
      metadata: {
        // The Lisbon note carries oversized nested metadata (a mail's headers, say).
        ...(w.key === 'lisbon' ? { folder: 'travel', headers: { received: 'x'.repeat(9000) } } : {}),
        attachments:
          w.key === 'boiler'
            ? [{ index: 0, kind: 'image', filename: 'invoice.jpg', mime_type: 'image/jpeg', ocr: { text: 'INVOICE 4471 pressure valve 89.00 EUR' } }]
            : [],
      },
    });
    expect(r.statusCode, r.body).toBe(202);
    docs[w.key] = r.json().doc_id;
  }
  url = await gw.app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await gw?.close();
});

describe(`MCP over streamable HTTP on ${backend}`, () => {
  it('lists the read-only tools with input and output schemas, and no add_note without MCP_ALLOW_WRITE', async () => {
    const c = await httpClient();
    try {
      const { tools } = await c.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual(TOOLS);
      for (const t of tools) {
        expect(t.inputSchema.type).toBe('object');
        expect(t.outputSchema?.type, t.name).toBe('object');
        expect(t.description!.length, t.name).toBeGreaterThan(40);
      }
      const add = await call(c, 'add_note', { text: 'hello' });
      expect(add.isError).toBe(true);
      expect(text(add)).toContain('add_note');
    } finally {
      await c.close();
    }
  });

  it('search finds written documents with ids, snippets, dates and people, and filters by person', async () => {
    const c = await httpClient();
    try {
      const r = await call(c, 'search', { query: 'night train Lisbon', k: 5 });
      expect(r.isError).toBeFalsy();
      const s = r.structuredContent as any;
      expect(s.hits[0]).toMatchObject({ document_id: docs.lisbon, title: 'Trip to Lisbon', source_type: 'note', resource_uri: `memex://document/${docs.lisbon}` });
      expect(s.hits[0].snippet).toContain('Lisbon');
      expect(text(r)).toContain(docs.lisbon);

      // A phrase nobody wrote: nothing as written, said so, then what matches its words (as the web UI and the CLI do).
      const strict = await call(c, 'search', { query: '"Lisbon night train"', k: 5 });
      const relaxed = strict.structuredContent as any;
      expect(relaxed.total).toBe(0);
      expect(relaxed.relaxed.total).toBeGreaterThan(0);
      expect(relaxed.hits.map((h: any) => h.document_id)).toContain(docs.lisbon);
      expect(text(strict)).toMatch(/^No documents match "\"Lisbon night train\"" as written .* match its words/);
      expect((await call(c, 'search', { query: 'zanzibar' })).structuredContent).toMatchObject({ total: 0, hits: [] });

      const photos = (await call(c, 'search', { query: 'photos', person: 'alice@example.com' })).structuredContent as any;
      expect(photos.total).toBeGreaterThan(0);
      for (const hit of photos.hits) expect(hit.people).toContain('Alice Liddell');
    } finally {
      await c.close();
    }
  });

  it('ask answers with citations exactly as POST /v1/ask does', async () => {
    const c = await httpClient();
    try {
      const r = await call(c, 'ask', { question: 'When is the boiler service due?', k: 3 });
      expect(r.isError).toBeFalsy();
      const route = (await gw.request('POST', '/v1/ask', { query: 'When is the boiler service due?', k: 3 })).json();
      expect(r.structuredContent).toEqual(route);
      expect((r.structuredContent as any).citations[0].document_id).toBe(docs.boiler);
      // The text an assistant reads: the short answer first, then each source with the sentence it quotes.
      const text = (r.content as any[])[0].text as string;
      expect(text.startsWith(route.answer)).toBe(true);
      expect(text).toContain(`\n\nSources:\n[1] `);
      expect(text).toContain(`document ${docs.boiler}: "${route.citations[0].quote}"`);
    } finally {
      await c.close();
    }
  });

  it('get_document returns text, attachments text, truncation and thread neighbours', async () => {
    const c = await httpClient();
    try {
      const boiler = (await call(c, 'get_document', { document_id: docs.boiler })).structuredContent as any;
      expect(boiler).toMatchObject({ document_id: docs.boiler, title: 'Boiler service', truncated: false, thread: null });
      expect(boiler.attachments).toEqual([{ filename: 'invoice.jpg', mime_type: 'image/jpeg', kind: 'image', text: 'INVOICE 4471 pressure valve 89.00 EUR' }]);

      const lisbon = (await call(c, 'get_document', { document_id: docs.lisbon })).structuredContent as any;
      expect(lisbon.metadata).toMatchObject({ folder: 'travel', _truncated: expect.stringContaining('8000') });
      expect(lisbon.metadata.headers).toBeUndefined();

      const short = (await call(c, 'get_document', { document_id: docs.boiler, max_chars: 100 })).structuredContent as any;
      expect(short.truncated).toBe(true);
      expect(short.text).toMatch(/^The plumber replaced[\s\S]*\[… truncated: \d+ more characters\]$/);

      // a3 sits in the middle of the chat with alice: a1, a2 before it, a4, a5, a6 after.
      const a3 = (await gw.request('GET', `/v1/search?q=${encodeURIComponent('message a3')}&k=1`)).json().hits[0].document_id;
      const d = (await call(c, 'get_document', { document_id: a3 })).structuredContent as any;
      expect(d.thread.documents_in_thread).toBe(6);
      expect(d.thread.neighbours.map((n: any) => `${n.position}:${n.snippet}`)).toEqual([
        'before:message a1',
        'before:message a2',
        'after:message a4',
        'after:message a5',
        'after:message a6',
      ]);
    } finally {
      await c.close();
    }
  });

  it('search_people, get_person and top_relationships explain who matters', async () => {
    const c = await httpClient();
    try {
      const found = (await call(c, 'search_people', { query: 'alice' })).structuredContent as any;
      expect(found.people[0]).toMatchObject({ person_id: h.ids.alice, display_name: 'Alice Liddell' });

      const p = await call(c, 'get_person', { person_id: h.ids.alice, recent: 3 });
      const person = p.structuredContent as any;
      expect(person.identifiers.map((i: any) => i.value)).toContain('+15084109572');
      expect(person.relationship.score).toBeGreaterThan(0);
      expect(person.relationship.summary).toContain('11 messages in the last 30 days');
      expect(person.recent_documents).toHaveLength(3);
      expect(person.documents_total).toBeGreaterThanOrEqual(9);
      expect(text(p)).toContain('Relationship score');

      const news = (await call(c, 'get_person', { person_id: h.ids.news })).structuredContent as any;
      expect(news).toMatchObject({ relationship: null, relationship_note: expect.stringContaining('no relationship edge') });
      expect(news.recent_documents).toHaveLength(2); // the two newsletters

      const top = (await call(c, 'top_relationships', { window: '90d', limit: 2 })).structuredContent as any;
      expect(top).toMatchObject({ window: '90d', total: 4, offset: 0 });
      expect(top.relationships.map((r: any) => r.rank)).toEqual([1, 2]);
      expect(top.relationships[0].person_id).toBe(h.ids.alice);
      const next = (await call(c, 'top_relationships', { window: '90d', limit: 2, offset: 2 })).structuredContent as any;
      expect(next.relationships.map((r: any) => r.rank)).toEqual([3, 4]);
      expect(new Set([...top.relationships, ...next.relationships].map((r: any) => r.person_id)).size).toBe(4);
    } finally {
      await c.close();
    }
  });

  it('recent_activity summarises the last days, optionally of one source type', async () => {
    const c = await httpClient();
    try {
      const week = (await call(c, 'recent_activity', { days: 3 })).structuredContent as any;
      expect(week.documents).toBeGreaterThan(5);
      expect(week.highlights.length).toBeGreaterThan(0);
      expect(week.busiest_threads[0]).toMatchObject({ documents: 6 }); // the chat with alice
      const all = (await call(c, 'recent_activity', { days: 3650 })).structuredContent as any;
      expect(week.documents).toBeLessThan(all.documents); // carol (100 days), dan (200 days) are outside 3 days
      const notes = (await call(c, 'recent_activity', { days: 1, source_type: 'note' })).structuredContent as any;
      expect(notes).toMatchObject({ documents: 2, source_type: 'note' });
      expect(notes.highlights.map((x: any) => x.document_id).sort()).toEqual([docs.lisbon, docs.boiler].sort());
    } finally {
      await c.close();
    }
  });

  it("recent_activity leaves automated senders' threads out of the busiest unless asked for", async () => {
    // A bank's statements (Auto-Submitted) and a school office that writes and is never answered (one-way):
    // both threads are busier this week than the chat with alice.
    const me = { id: ME_EMAIL, type: 'email' as const, name: 'Me Myself' };
    const bank = { id: 'statements@harbourbank.example', type: 'email' as const, name: 'Harbour Bank (statements)' };
    const school = { id: 'office@stanne.example', type: 'email' as const, name: "St Anne's Primary Office" };
    const now = new Date();
    const threadOf = async (m: Parameters<typeof ingestBody>[0]) => {
      const r = await gw.request('POST', '/v1/ingest', ingestBody(m, now));
      expect(r.statusCode, r.body).toBe(202);
      return (await gw.request('GET', `/v1/doc/${r.json().doc_id}`)).json().thread_id as string;
    };
    let statements = '';
    let office = '';
    for (let i = 0; i < 8; i++) {
      statements = await threadOf({ key: `bank${i}`, source_type: 'email', hoursAgo: 10 + i, from: bank, to: [me], thread: 'statements', subject: 'Your statement', metadata: { auto_submitted: 'auto-generated' } });
    }
    for (let i = 0; i < 7; i++) {
      office = await threadOf({ key: `school${i}`, source_type: 'email', hoursAgo: 20 + i, from: school, to: [me], thread: 'school-office', subject: 'Term dates' });
    }
    expect((await gw.request('POST', '/v1/admin/relationships/recompute')).statusCode).toBe(200);
    const c = await httpClient();
    try {
      const week = await call(c, 'recent_activity', { days: 3 });
      const busiest = (week.structuredContent as any).busiest_threads;
      expect(busiest[0]).toMatchObject({ documents: 6, automated: false }); // the chat with alice
      expect(busiest.map((t: any) => t.thread_id)).not.toContain(statements);
      expect(busiest.map((t: any) => t.thread_id)).not.toContain(office);
      expect(text(week)).not.toContain(statements);
      const all = await call(c, 'recent_activity', { days: 3, include_automated: true });
      const shown = (all.structuredContent as any).busiest_threads;
      expect(shown.slice(0, 3).map((t: any) => [t.thread_id, t.documents, t.automated])).toEqual([
        [statements, 8, true],
        [office, 7, true],
        [busiest[0].thread_id, 6, false],
      ]);
      expect(text(all)).toContain(`[email, automated]: 8 document(s), thread ${statements}`);
      // The route says the same.
      const route = (await gw.request('GET', '/v1/context/general?days=3')).json();
      expect(route.top_threads.map((t: any) => t.thread_id)).not.toContain(statements);
    } finally {
      await c.close();
    }
  });

  it('reads documents as memex://document/{id} resources', async () => {
    const c = await httpClient();
    try {
      const r = await c.readResource({ uri: `memex://document/${docs.lisbon}` });
      expect(r.contents[0]).toMatchObject({ uri: `memex://document/${docs.lisbon}`, mimeType: 'text/plain' });
      expect((r.contents[0] as { text: string }).text).toContain('# Trip to Lisbon');
      await expect(c.readResource({ uri: 'memex://document/0190a000-0000-7000-8000-000000000000' })).rejects.toThrow(/not found/i);
      await expect(c.readResource({ uri: 'memex://document/nope' })).rejects.toThrow(/UUID/);
      const templates = await c.listResourceTemplates();
      expect(templates.resourceTemplates[0].uriTemplate).toBe('memex://document/{id}');
    } finally {
      await c.close();
    }
  });

  it('bad arguments come back as isError results with a message to act on, and the server keeps serving', async () => {
    const c = await httpClient();
    try {
      const cases: [string, Record<string, unknown>, RegExp][] = [
        ['search', { query: 'x', k: 500 }, /k/],
        ['search', { query: 42 }, /query/],
        ['search', { query: 'x', start_date: 'yesterday' }, /start_date/],
        ['get_document', { document_id: 'abc' }, /UUID/],
        ['get_document', { document_id: '0190a000-0000-7000-8000-000000000000' }, /no document has id .*search/],
        ['get_person', { person_id: '0190a000-0000-7000-8000-000000000000' }, /no person has id .*search_people/],
        ['top_relationships', { window: 'a year' }, /90d/],
        ['top_relationships', { window: '99999d' }, /window/],
        ['recent_activity', { days: 0 }, /days/],
      ];
      for (const [name, args, msg] of cases) {
        const r = await call(c, name, args);
        expect(r.isError, `${name} ${JSON.stringify(args)}`).toBe(true);
        expect(text(r)).toMatch(msg);
      }
      expect((await call(c, 'search', { query: 'boiler' })).isError).toBeFalsy();
    } finally {
      await c.close();
    }
  });

  it('POST /mcp needs the gateway token: 401 without it, 403 with a wrong one', async () => {
    await expect(httpClient(null)).rejects.toMatchObject({ code: 401, message: expect.stringContaining('Missing token') });
    await expect(httpClient('wrong-token')).rejects.toMatchObject({ code: 403, message: expect.stringContaining('Invalid token') });
    const raw = await fetch(new URL('/mcp', url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(raw.status).toBe(401);
    // Stateless: no SSE stream to open and no session to delete.
    const get = await fetch(new URL('/mcp', url), { headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(get.status).toBe(405);
  });

  it('serves several clients at once', async () => {
    const clients = await Promise.all(Array.from({ length: 6 }, () => httpClient()));
    try {
      const queries = ['Lisbon', 'boiler', 'photos', 'Lisbon', 'boiler', 'photos'];
      const results = await Promise.all(clients.map((c, i) => call(c, 'search', { query: queries[i], k: 3 })));
      for (const [i, r] of results.entries()) {
        expect(r.isError).toBeFalsy();
        const first = (r.structuredContent as any).hits[0];
        if (queries[i] === 'Lisbon') expect(first.document_id).toBe(docs.lisbon);
        if (queries[i] === 'boiler') expect(first.document_id).toBe(docs.boiler);
      }
    } finally {
      await Promise.all(clients.map((c) => c.close()));
    }
  });
});

describe(`route parameters the tools need, on ${backend}`, () => {
  it('GET /v1/crm/relationships/top?person_id= answers one edge', async () => {
    const bob = (await gw.request('GET', `/v1/crm/relationships/top?window=3650d&person_id=${h.ids.bob}`)).json();
    expect(bob).toMatchObject({ total_count: 1, relationships: [{ person_id: h.ids.bob }] });
    const news = (await gw.request('GET', `/v1/crm/relationships/top?window=3650d&person_id=${h.ids.news}`)).json();
    expect(news).toMatchObject({ total_count: 0, relationships: [] });
    expect((await gw.request('GET', '/v1/crm/relationships/top?person_id=bob')).statusCode).toBe(422);
  });

  it('GET /v1/documents?person_id= lists the documents linked to a person', async () => {
    const r = (await gw.request('GET', `/v1/documents?person_id=${h.ids.bob}`)).json();
    expect(r.total).toBe(6);
    expect(r.documents.map((d: any) => d.text).sort()).toEqual(['message b1', 'message b2', 'message g1', 'message g2', 'message g3', 'message g4']);
    expect((await gw.request('GET', '/v1/documents?person_id=42')).statusCode).toBe(422);
  });

  it('GET /v1/context/general?days=&source_type= narrows every figure', async () => {
    const all = (await gw.request('GET', '/v1/context/general')).json();
    const notes = (await gw.request('GET', '/v1/context/general?days=1&source_type=note')).json();
    expect(notes).toMatchObject({ total_messages: 2, total_threads: 0, top_threads: [] });
    expect(notes.recent_highlights.map((x: any) => x.doc_id).sort()).toEqual([docs.lisbon, docs.boiler].sort());
    const sms = (await gw.request('GET', '/v1/context/general?days=3650&source_type=sms')).json();
    expect(sms.total_messages).toBeLessThan(all.total_messages);
    expect(sms.top_threads.every((t: any) => t.source_type === 'sms')).toBe(true);
    expect((await gw.request('GET', '/v1/context/general?days=0')).statusCode).toBe(422);
  });
});

describe(`MCP over stdio (memex mcp) on ${backend}`, () => {
  it('serves every tool against the running server; add_note only with MCP_ALLOW_WRITE=true', async () => {
    const { client, transport, stderr } = stdioClient({ MEMEX_URL: url, AUTH_TOKEN: TEST_TOKEN, MCP_ALLOW_WRITE: 'true' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...TOOLS, 'add_note', 'merge_people', 'tag_documents'].sort());
      const s = (await call(client, 'search', { query: 'boiler valve' })).structuredContent as any;
      expect(s.hits[0].document_id).toBe(docs.boiler);
      expect((await call(client, 'ask', { question: 'Where is the hotel in Lisbon?' })).isError).toBeFalsy();
      expect(((await call(client, 'get_document', { document_id: docs.lisbon })).structuredContent as any).title).toBe('Trip to Lisbon');
      expect(((await call(client, 'search_people', { query: 'bob' })).structuredContent as any).people[0].person_id).toBe(h.ids.bob);
      const bob = (await call(client, 'get_person', { person_id: h.ids.bob })).structuredContent as any;
      expect(bob.relationship.summary).toContain('2 messages in the last 30 days');
      expect(bob.documents_total).toBe(6); // b1, b2 and the group chat g1..g4
      expect(((await call(client, 'top_relationships', {})).structuredContent as any).total).toBe(4);
      expect(((await call(client, 'recent_activity', { days: 7 })).structuredContent as any).documents).toBeGreaterThan(0);

      const note = await call(client, 'add_note', { title: 'Parking', text: 'The car is on level 3 of the Marquês garage, space 318.' });
      expect(note.isError).toBeFalsy();
      const stored = note.structuredContent as any;
      expect(stored.duplicate).toBe(false);
      const doc = (await gw.request('GET', `/v1/doc/${stored.document_id}`)).json();
      expect(doc).toMatchObject({ source_type: 'note', title: 'Parking', text: 'The car is on level 3 of the Marquês garage, space 318.' });
      const again = (await call(client, 'add_note', { title: 'Parking', text: 'The car is on level 3 of the Marquês garage, space 318.' })).structuredContent as any;
      expect(again).toMatchObject({ document_id: stored.document_id, duplicate: true });
      const found = (await call(client, 'search', { query: 'Marquês garage', source_type: 'note' })).structuredContent as any;
      expect(found.hits[0].document_id).toBe(stored.document_id);
    } finally {
      await client.close();
    }
    expect(stderr()).toContain('serving on stdio');
  });

  it('without MCP_ALLOW_WRITE there is no add_note, and a wrong token is a tool error that says so', async () => {
    const { client, transport } = stdioClient({ MEMEX_URL: url, AUTH_TOKEN: 'wrong-token' });
    await client.connect(transport);
    try {
      expect((await client.listTools()).tools.map((t) => t.name)).not.toContain('add_note');
      const r = await call(client, 'search', { query: 'Lisbon' });
      expect(r.isError).toBe(true);
      expect(text(r)).toMatch(/refused the token.*AUTH_TOKEN/);
    } finally {
      await client.close();
    }
  });

  it('a server that is down gives a tool error saying what to start, and keeps serving', async () => {
    // A port nothing listens on: take one from the OS and close it again.
    const { createServer } = await import('node:net');
    const srv = createServer();
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const port = (srv.address() as { port: number }).port;
    await new Promise<void>((r) => srv.close(() => r()));
    const { client, transport } = stdioClient({ MEMEX_URL: `http://127.0.0.1:${port}`, AUTH_TOKEN: TEST_TOKEN });
    await client.connect(transport);
    try {
      for (const [name, args] of [['search', { query: 'x' }], ['top_relationships', {}]] as const) {
        const r = await call(client, name, args);
        expect(r.isError).toBe(true);
        expect(text(r)).toMatch(/no memex server answers at http:\/\/127\.0\.0\.1:\d+.*start one with `memex serve`/);
      }
      expect((await client.listTools()).tools.length).toBe(TOOLS.length);
    } finally {
      await client.close();
    }
  });
});
