/**
 * Latency each MCP tool adds over the HTTP routes it wraps.
 *   node --import tsx bench/mcp/run.ts [--docs 1000] [--runs 40] [--backend pglite|postgres]
 * Starts `memex serve` (bench/lib/server.ts, embedding worker off so the CPU is quiet) with --docs
 * generated messages (bench/lib/generate.ts), sets the self person and computes relationships. Then,
 * per tool, --runs rounds of: the route(s) the tool calls, straight over HTTP with fetch; the tool
 * over stdio (`memex mcp` child, SDK Client); the tool over POST /mcp (SDK Client). Rounds
 * interleave the three so load drift hits them alike. Prints p50/p95 of each and the p50 of the
 * per-round difference tool − routes (the overhead).
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { message, PEOPLE, rng } from '../lib/generate.ts';
import { machineLine, percentile, ROOT, startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({
  options: {
    docs: { type: 'string', default: '1000' },
    runs: { type: 'string', default: '40' },
    backend: { type: 'string', default: 'pglite' },
  },
});
const DOCS = Number(values.docs);
const RUNS = Number(values.runs);
const backend = values.backend as 'pglite' | 'postgres';

const server = await startBenchServer(backend, { EMBEDDING_WORKER: 'false' });
const auth = { authorization: `Bearer ${server.token}` };

async function route(method: 'GET' | 'POST' | 'PUT', p: string, body?: unknown): Promise<any> {
  const res = await fetch(server.url + p, {
    method,
    headers: { ...auth, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json();
}

try {
  const r = rng(16);
  for (let i = 0; i < DOCS; i += 500) {
    const documents = Array.from({ length: Math.min(500, DOCS - i) }, (_, k) => message(r, i + k, 200));
    await route('POST', '/v1/ingest:batch', { documents });
  }
  await route('PUT', '/v1/admin/self-person', { identifier: PEOPLE[0].email });
  await route('POST', '/v1/admin/relationships/recompute');

  // A document in a thread, so get_document also reads its neighbours.
  const threadDoc = (await route('GET', '/v1/search?q=budget&k=1')).hits[0].document_id;
  const person = (await route('GET', `/search/people?q=${encodeURIComponent(PEOPLE[1].name)}&limit=1`)).results[0].person_id;

  // Each tool with the routes it calls, in the same order and with the same parameters.
  const cases: { tool: string; args: Record<string, unknown>; routes: () => Promise<unknown> }[] = [
    { tool: 'search', args: { query: 'budget meeting', k: 10 }, routes: () => route('GET', '/v1/search?q=budget+meeting&k=10&context_window=0') },
    { tool: 'ask', args: { question: 'when is the budget meeting?', k: 5 }, routes: () => route('POST', '/v1/ask', { query: 'when is the budget meeting?', k: 5 }) },
    {
      tool: 'get_document',
      args: { document_id: threadDoc },
      routes: async () => {
        const d = await route('GET', `/v1/doc/${threadDoc}`);
        if (d.thread_id) await route('GET', `/v1/documents?thread_id=${d.thread_id}&limit=200&offset=0`);
      },
    },
    { tool: 'search_people', args: { query: 'lee', limit: 10 }, routes: () => route('GET', '/search/people?q=lee&limit=10&offset=0') },
    {
      tool: 'get_person',
      args: { person_id: person },
      routes: async () => {
        await route('GET', `/v1/people/${person}`);
        await route('GET', `/v1/crm/relationships/top?window=3650d&person_id=${person}&limit=1`);
        await route('GET', `/v1/documents?person_id=${person}&limit=5`);
      },
    },
    { tool: 'top_relationships', args: { window: '365d', limit: 10 }, routes: () => route('GET', '/v1/crm/relationships/top?window=365d&limit=10&offset=0') },
    { tool: 'recent_activity', args: { days: 365 }, routes: () => route('GET', '/v1/context/general?days=365') },
  ];

  const stdio = new Client({ name: 'bench', version: '1' });
  await stdio.connect(
    new StdioClientTransport({
      command: process.execPath,
      args: [path.join(ROOT, 'bin/memex.js'), 'mcp'],
      env: { PATH: process.env.PATH ?? '', MEMEX_URL: server.url, AUTH_TOKEN: server.token },
      stderr: 'ignore',
    }),
  );
  const http = new Client({ name: 'bench', version: '1' });
  await http.connect(new StreamableHTTPClientTransport(new URL('/mcp', server.url), { requestInit: { headers: auth } }));

  const time = async (fn: () => Promise<unknown>) => {
    const t = performance.now();
    await fn();
    return performance.now() - t;
  };
  const callTool = (c: Client, tool: string, args: Record<string, unknown>) => async () => {
    const res = await c.callTool({ name: tool, arguments: args });
    if (res.isError) throw new Error(`${tool}: ${JSON.stringify(res.content)}`);
  };
  const fmt = (xs: number[]) => {
    const s = [...xs].sort((a, b) => a - b);
    return `${percentile(s, 50).toFixed(1)} / ${percentile(s, 95).toFixed(1)}`;
  };
  const median = (xs: number[]) => percentile([...xs].sort((a, b) => a - b), 50).toFixed(1);

  console.log(`# MCP tool overhead, ${backend}, ${DOCS} docs, ${RUNS} rounds; ${machineLine()}`);
  console.log('| tool | routes p50/p95 ms | stdio tool p50/p95 ms | stdio overhead p50 ms | /mcp tool p50/p95 ms | /mcp overhead p50 ms |');
  console.log('|---|---|---|---|---|---|');
  for (const c of cases) {
    // Warm up each path (first search builds the index; first call compiles schemas).
    await c.routes();
    await callTool(stdio, c.tool, c.args)();
    await callTool(http, c.tool, c.args)();
    const direct: number[] = [];
    const viaStdio: number[] = [];
    const viaHttp: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      direct.push(await time(c.routes));
      viaStdio.push(await time(callTool(stdio, c.tool, c.args)));
      viaHttp.push(await time(callTool(http, c.tool, c.args)));
    }
    const dStdio = viaStdio.map((v, i) => v - direct[i]);
    const dHttp = viaHttp.map((v, i) => v - direct[i]);
    console.log(`| ${c.tool} | ${fmt(direct)} | ${fmt(viaStdio)} | ${median(dStdio)} | ${fmt(viaHttp)} | ${median(dHttp)} |`);
  }
  await stdio.close();
  await http.close();
} finally {
  await server.stop();
}
