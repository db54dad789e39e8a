/**
 * ollama and openai providers against a small local HTTP server speaking their APIs, with 429
 * (Retry-After) and 500 answers scripted per request.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { loadEmbeddingConfig } from '../../src/embedding/config.ts';
import { createOllamaEmbedder, createOpenAIEmbedder } from '../../src/embedding/providers/http.ts';
import { hashVector } from '../../src/embedding/providers/hash.ts';
import { EmbeddingRequestError, ProviderUnavailableError } from '../../src/embedding/types.ts';

interface Seen { path: string; body: any; auth: string | undefined; at: number }
let server: http.Server;
let base: string;
let seen: Seen[] = [];
/** Scripted answers consumed in order; when empty the server answers normally. */
let script: { status: number; headers?: Record<string, string>; body?: string }[] = [];
let legacyOnly = false;
const DIMS = 16;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = raw ? JSON.parse(raw) : undefined;
      seen.push({ path: req.url!, body, auth: req.headers.authorization, at: Date.now() });
      const next = script.shift();
      if (next) {
        res.writeHead(next.status, { 'content-type': 'application/json', ...next.headers });
        res.end(next.body ?? JSON.stringify({ error: `scripted ${next.status}` }));
        return;
      }
      res.setHeader('content-type', 'application/json');
      if (req.url === '/api/embed' && !legacyOnly) {
        res.end(JSON.stringify({ model: body.model, embeddings: body.input.map((t: string) => hashVector(t, DIMS)) }));
      } else if (req.url === '/api/embeddings') {
        res.end(JSON.stringify({ embedding: hashVector(body.prompt, DIMS) }));
      } else if (req.url === '/v1/embeddings') {
        if (req.headers.authorization !== 'Bearer sk-test') {
          res.writeHead(401);
          res.end(JSON.stringify({ error: { message: 'Incorrect API key' } }));
          return;
        }
        const dims = body.dimensions ?? DIMS;
        const data = body.input.map((t: string, index: number) => ({ object: 'embedding', index, embedding: hashVector(t, dims) }));
        // Out of order on purpose: clients must sort by index.
        res.end(JSON.stringify({ object: 'list', data: data.reverse(), model: body.model }));
      } else {
        res.writeHead(404);
        res.end('404 page not found');
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));
beforeEach(() => {
  seen = [];
  script = [];
  legacyOnly = false;
});

const fast = { baseDelayMs: 5, maxDelayMs: 50 };

describe('ollama', () => {
  const cfg = () => loadEmbeddingConfig({ EMBEDDING_PROVIDER: 'ollama', EMBEDDING_MODEL: 'bge-m3', OLLAMA_BASE_URL: base, EMBEDDING_HTTP_BATCH: '3' });

  it('embeds through /api/embed in batches and learns the dimension', async () => {
    const e = createOllamaEmbedder(cfg(), fast);
    expect(e.name).toBe('ollama:bge-m3');
    const texts = ['a', 'b', 'c', 'd', 'e'];
    const v = await e.embed(texts);
    expect(v).toEqual(texts.map((t) => hashVector(t, DIMS)));
    expect(e.dimensions).toBe(DIMS);
    expect(seen.map((s) => s.body.input.length)).toEqual([3, 2]);
    expect(seen[0].body.model).toBe('bge-m3');
  });

  it('retries 429 (honouring Retry-After) and 500, then succeeds', async () => {
    script = [{ status: 429, headers: { 'retry-after': '1' } }, { status: 500 }];
    const e = createOllamaEmbedder(cfg(), fast);
    const v = await e.embed(['hello']);
    expect(v[0]).toEqual(hashVector('hello', DIMS));
    expect(seen).toHaveLength(3);
    // Retry-After: 1 second was waited before the second attempt (back-off alone is ~5 ms).
    expect(seen[1].at - seen[0].at).toBeGreaterThanOrEqual(900);
  });

  it('gives up after the retries with ProviderUnavailableError (worker puts chunks back to pending)', async () => {
    script = Array.from({ length: 10 }, () => ({ status: 503 }));
    const e = createOllamaEmbedder({ ...cfg(), maxRetries: 2 }, fast);
    await expect(e.embed(['x'])).rejects.toBeInstanceOf(ProviderUnavailableError);
    expect(seen).toHaveLength(3);
  });

  it('a 400 is not retried and is an EmbeddingRequestError (chunk fails)', async () => {
    script = [{ status: 400, body: '{"error":"input too long"}' }];
    const e = createOllamaEmbedder(cfg(), fast);
    await expect(e.embed(['x'])).rejects.toThrow(EmbeddingRequestError);
    expect(seen).toHaveLength(1);
  });

  it('falls back to the older /api/embeddings (one prompt per call) when /api/embed is missing', async () => {
    legacyOnly = true;
    const e = createOllamaEmbedder(cfg(), fast);
    const v = await e.embed(['p', 'q']);
    expect(v).toEqual([hashVector('p', DIMS), hashVector('q', DIMS)]);
    expect(seen.map((s) => s.path)).toEqual(['/api/embed', '/api/embeddings', '/api/embeddings']);
    await e.embed(['r']);
    expect(seen.at(-1)!.path).toBe('/api/embeddings');
  });

  it('an unreachable server is ProviderUnavailableError after a timeout or refusal', async () => {
    const e = createOllamaEmbedder({ ...cfg(), ollamaBaseUrl: 'http://127.0.0.1:9', maxRetries: 1 }, fast);
    await expect(e.embed(['x'])).rejects.toBeInstanceOf(ProviderUnavailableError);
  });
});

describe('openai-compatible', () => {
  const cfg = (extra: Record<string, string> = {}) =>
    loadEmbeddingConfig({
      EMBEDDING_PROVIDER: 'openai', EMBEDDING_MODEL: 'text-embedding-3-small', OPENAI_BASE_URL: `${base}/v1`,
      OPENAI_API_KEY: 'sk-test', EMBEDDING_HTTP_BATCH: '4', ...extra,
    });

  it('sends the key, batches, restores the order by index and learns dimensions from the first answer', async () => {
    const e = createOpenAIEmbedder(cfg(), fast);
    expect(e.dimensions).toBe(0);
    const texts = ['one', 'two', 'three', 'four', 'five', 'six'];
    const v = await e.embed(texts);
    expect(v).toEqual(texts.map((t) => hashVector(t, DIMS)));
    expect(e.dimensions).toBe(DIMS);
    expect(seen.map((s) => s.body.input.length)).toEqual([4, 2]);
    expect(seen[0].auth).toBe('Bearer sk-test');
    expect(seen[0].body).toMatchObject({ model: 'text-embedding-3-small', encoding_format: 'float' });
  });

  it('requests EMBEDDING_DIMENSIONS and prefixes queries', async () => {
    const e = createOpenAIEmbedder(cfg({ EMBEDDING_DIMENSIONS: '8', EMBEDDING_QUERY_PREFIX: 'query: ' }), fast);
    const [v] = await e.embed(['find invoices'], 'query');
    expect(v).toHaveLength(8);
    expect(seen[0].body).toMatchObject({ dimensions: 8, input: ['query: find invoices'] });
  });

  it('retries 429 and 500, then succeeds', async () => {
    script = [{ status: 429, headers: { 'retry-after': '0' } }, { status: 500 }, { status: 502 }];
    const e = createOpenAIEmbedder(cfg(), fast);
    expect(await e.embed(['z'])).toEqual([hashVector('z', DIMS)]);
    expect(seen).toHaveLength(4);
  });

  it('a wrong key (401) fails at once without retries', async () => {
    const e = createOpenAIEmbedder(cfg({ OPENAI_API_KEY: 'sk-wrong' }), fast);
    await expect(e.embed(['z'])).rejects.toThrow(/HTTP 401/);
    expect(seen).toHaveLength(1);
  });

  it('a base URL without /v1 gets /v1/embeddings appended', async () => {
    const e = createOpenAIEmbedder(cfg({ OPENAI_BASE_URL: base }), fast);
    await e.embed(['q']);
    expect(seen[0].path).toBe('/v1/embeddings');
  });
});
