/**
 * Egress redaction (issue 30): text that leaves the machine is redacted, text that stays is not. Real HTTP
 * servers stand in for the remote hosts and record what they receive: an OpenAI-compatible chat API for
 * `ask`, an OpenAI-compatible embeddings API, and an MCP client calling POST /mcp. "Remote" is a
 * non-loopback address of this machine (its network interface) or a loopback address listed in
 * EGRESS_REMOTE_HOSTS (a local proxy that forwards to a cloud API); "local" is loopback. Each call logs one
 * line naming destination, purpose and policy, never the text.
 */
import http from 'node:http';
import os from 'node:os';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/server.ts';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createOllamaEmbedder, createOpenAIEmbedder } from '../../src/embedding/providers/http.ts';
import { configureEgress, loadEgressConfig, type EgressLogger } from '../../src/privacy/egress.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

const ADDRESS = 'jane.doe@example.org';
const PHONE = '+44 20 7946 0958';
const HASH = '3f9a1c2e8b7d6054a1b2c3d4e5f60718293a4b5c';
const CLAIM = 'CLM-2026-04417';
const TEXT = `The dentist confirmed the appointment on 17.04.2019 08:22. Write to ${ADDRESS} or call ${PHONE}; claim ${CLAIM}, fix in commit ${HASH}.`;

const external = Object.values(os.networkInterfaces())
  .flat()
  .find((a) => a && a.family === 'IPv4' && !a.internal)?.address;

/** An HTTP server on `host` that records every request body and answers like an OpenAI-compatible API. */
async function recorder(host: string) {
  const bodies: any[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
      bodies.push(body);
      res.writeHead(200, { 'content-type': 'application/json' });
      if (req.url?.endsWith('/chat/completions')) {
        res.end(JSON.stringify({ choices: [{ message: { content: 'The dentist is reachable as written in the note [1].' } }] }));
      } else if (req.url?.endsWith('/api/embed')) {
        res.end(JSON.stringify({ embeddings: body.input.map(() => [0.1, 0.2, 0.3]) }));
      } else {
        res.end(JSON.stringify({ data: body.input.map((_: string, index: number) => ({ index, embedding: [0.1, 0.2, 0.3] })) }));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as { port: number }).port;
  return { url: `http://${host}:${port}`, hostPort: `${host}:${port}`, bodies, close: () => new Promise<void>((r) => server.close(() => r())) };
}

/** A logger that keeps what it is given. */
function capture() {
  const lines: { level: 'info' | 'debug'; obj: any; msg?: string }[] = [];
  const log: EgressLogger = {
    info: (obj, msg) => void lines.push({ level: 'info', obj, msg }),
    debug: (obj, msg) => void lines.push({ level: 'debug', obj, msg }),
  };
  return { log, lines };
}

function egressWith(env: Record<string, string>) {
  const c = capture();
  configureEgress(loadEgressConfig(env), c.log);
  return c;
}

let gw: TestGateway;
let docId: string;
const savedEnv = { ...process.env };

beforeAll(async () => {
  gw = await startTestGateway();
  const r = await gw.request('POST', '/v1/ingest', {
    source_type: 'note',
    source_id: 'note-dentist',
    title: 'Dentist',
    content: { mime_type: 'text/plain', data: TEXT },
  });
  expect(r.statusCode, r.body).toBe(202);
  docId = r.json().doc_id;
});
afterAll(async () => {
  await gw?.close();
});
afterEach(() => {
  for (const k of ['LLM_PROVIDER', 'OPENAI_BASE_URL', 'OPENAI_API_KEY', 'LLM_MODEL']) {
    if (savedEnv[k] === undefined) delete process.env[k];
    else process.env[k] = savedEnv[k];
  }
});

/** POST /v1/ask with an OpenAI-compatible provider at `base`; returns what the provider received. */
async function askThrough(base: string, rec: Awaited<ReturnType<typeof recorder>>) {
  process.env.LLM_PROVIDER = 'openai';
  process.env.OPENAI_BASE_URL = `${base}/v1`;
  process.env.OPENAI_API_KEY = 'sk-test';
  const before = rec.bodies.length;
  const res = await gw.request('POST', '/v1/ask', { query: 'When is the dentist appointment?', k: 3 });
  expect(res.statusCode, res.body).toBe(200);
  expect(res.json().answer_mode).toBe('llm');
  expect(rec.bodies.length).toBe(before + 1);
  return JSON.stringify(rec.bodies[before].messages);
}

describe('ask with an OpenAI-compatible LLM', () => {
  it.skipIf(!external)('a provider on another machine receives redacted text; the log line names the policy', async () => {
    const rec = await recorder(external!);
    try {
      const { lines } = egressWith({});
      const sent = await askThrough(rec.url, rec);
      expect(sent).toContain('[EMAIL_REDACTED]');
      expect(sent).toContain('[PHONE_REDACTED]');
      expect(sent).not.toContain(ADDRESS);
      expect(sent).not.toContain('7946');
      // What is not personal data goes as written.
      for (const kept of [HASH, CLAIM, '17.04.2019 08:22']) expect(sent).toContain(kept);
      const line = lines.find((l) => l.obj.purpose === 'ask')!;
      expect(line.level).toBe('info');
      expect(line.obj).toMatchObject({ destination: rec.hostPort, purpose: 'ask', policy: 'all' });
      expect(line.obj.replaced).toMatchObject({ email: 1, phone: 1 });
      expect(JSON.stringify(lines)).not.toContain(ADDRESS);
      expect(JSON.stringify(lines)).not.toContain('dentist');
    } finally {
      await rec.close();
    }
  });

  it('a loopback proxy listed in EGRESS_REMOTE_HOSTS counts as remote; EGRESS_REDACT picks the categories', async () => {
    const rec = await recorder('127.0.0.1');
    try {
      const { lines } = egressWith({ EGRESS_REMOTE_HOSTS: rec.hostPort, EGRESS_REDACT: 'emails' });
      const sent = await askThrough(rec.url, rec);
      expect(sent).toContain('[EMAIL_REDACTED]');
      expect(sent).toContain(PHONE);
      expect(lines.find((l) => l.obj.purpose === 'ask')!.obj).toMatchObject({ destination: rec.hostPort, policy: 'emails' });
    } finally {
      await rec.close();
    }
  });

  it('a local provider (loopback) receives the original', async () => {
    const rec = await recorder('127.0.0.1');
    try {
      const { lines } = egressWith({});
      const sent = await askThrough(rec.url, rec);
      expect(sent).toContain(ADDRESS);
      expect(sent).toContain(PHONE);
      expect(sent).not.toContain('_REDACTED]');
      expect(lines.find((l) => l.obj.purpose === 'ask')!.obj).toMatchObject({ destination: rec.hostPort, policy: 'none', local: true });
    } finally {
      await rec.close();
    }
  });

  it.skipIf(!external)('a host in EGRESS_TRUSTED_HOSTS (your own LAN box) receives the original', async () => {
    const rec = await recorder(external!);
    try {
      egressWith({ EGRESS_TRUSTED_HOSTS: external! });
      expect(await askThrough(rec.url, rec)).toContain(ADDRESS);
    } finally {
      await rec.close();
    }
  });
});

describe('remote embedding APIs', () => {
  const texts = [TEXT, `query: ${ADDRESS}`];

  it('an OpenAI-compatible API on another host receives redacted passages, one log line per request', async () => {
    const rec = await recorder('127.0.0.1');
    try {
      const { lines } = egressWith({ EGRESS_REMOTE_HOSTS: rec.hostPort });
      const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'openai', EMBEDDING_MODEL: 'text-embedding-3-small', OPENAI_BASE_URL: rec.url, OPENAI_API_KEY: 'sk-test' });
      const vectors = await createOpenAIEmbedder(cfg, { maxRetries: 0 }).embed(texts);
      expect(vectors).toHaveLength(2);
      const sent = rec.bodies[0].input as string[];
      expect(sent[0]).toBe(TEXT.replace(ADDRESS, '[EMAIL_REDACTED]').replace(PHONE, '[PHONE_REDACTED]'));
      expect(sent[1]).toBe('query: [EMAIL_REDACTED]');
      expect(rec.bodies[0].model).toBe('text-embedding-3-small');
      const embedLines = lines.filter((l) => l.obj.purpose === 'embedding');
      expect(embedLines).toHaveLength(1);
      expect(embedLines[0].obj).toMatchObject({ destination: rec.hostPort, policy: 'all', replaced: { email: 2, phone: 1 } });
    } finally {
      await rec.close();
    }
  });

  it('a local Ollama receives the original', async () => {
    const rec = await recorder('127.0.0.1');
    try {
      egressWith({});
      const cfg = loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'ollama', EMBEDDING_MODEL: 'bge-m3', OLLAMA_BASE_URL: rec.url });
      await createOllamaEmbedder(cfg, { maxRetries: 0 }).embed(texts);
      expect(rec.bodies[0].input).toEqual(texts);
    } finally {
      await rec.close();
    }
  });
});

describe('MCP over HTTP', () => {
  async function searchOverMcp(base: string): Promise<string> {
    const client = new Client({ name: 'egress-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', base), { requestInit: { headers: { authorization: `Bearer ${TEST_TOKEN}` } } }));
    try {
      const r = (await client.callTool({ name: 'get_document', arguments: { document_id: docId } })) as CallToolResult;
      expect(r.isError ?? false).toBe(false);
      return JSON.stringify(r);
    } finally {
      await client.close();
    }
  }

  /** A second gateway on the same database, listening on `host`; closed after `fn`. */
  async function listening(host: string, fn: (base: string) => Promise<void>) {
    const g = await startTestGateway({ testDb: gw.testDb });
    try {
      await fn(await g.app.listen({ port: 0, host }));
    } finally {
      await g.app.close();
    }
  }

  it('a client on this machine reads the original', async () => {
    egressWith({});
    await listening('127.0.0.1', async (base) => {
      const got = await searchOverMcp(base);
      expect(got).toContain(ADDRESS);
      expect(got).toContain(PHONE);
    });
  });

  it.skipIf(!external)('a client on another machine reads redacted text; ids, hashes and dates stay', async () => {
    const { lines } = egressWith({});
    await listening(external!, async (base) => {
      const got = await searchOverMcp(base);
      expect(got).not.toContain(ADDRESS);
      expect(got).toContain('[EMAIL_REDACTED]');
      expect(got).toContain('[PHONE_REDACTED]');
      for (const kept of [docId, HASH, CLAIM, '17.04.2019 08:22']) expect(got).toContain(kept);
      expect(lines.some((l) => l.obj.purpose === 'mcp' && l.obj.policy === 'all' && l.level === 'info')).toBe(true);
    });
  });
});

describe('configuration', () => {
  it('a bad EGRESS_REDACT is an error naming the variable', () => {
    expect(() => loadEgressConfig({ EGRESS_REDACT: 'emails,faxes' })).toThrow(ConfigError);
    expect(() => loadEgressConfig({ EGRESS_REDACT: 'emails,faxes' })).toThrow(/EGRESS_REDACT: "faxes" is not a redaction category/);
    expect(loadEgressConfig({}).remote).toEqual({ emails: true, phones: true, account_numbers: true, ssn: true });
    expect(loadEgressConfig({ EGRESS_REDACT: 'none' }).remote).toEqual({ emails: false, phones: false, account_numbers: false, ssn: false });
  });
});
