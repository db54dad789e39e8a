import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { validateMarkers } from '../../src/search/ask.ts';
import { doc, startSearchGateway, type SearchGateway } from './helpers.ts';

/** A local chat server speaking the Ollama (/api/chat) and OpenAI (/v1/chat/completions) APIs. */
function chatServer(reply: () => { status: number; text: string }) {
  const seen: any[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const parsed = JSON.parse(body);
      seen.push({ url: req.url, auth: req.headers.authorization, body: parsed });
      const r = reply();
      res.writeHead(r.status, { 'content-type': 'application/json' });
      if (r.status !== 200) return res.end(JSON.stringify({ error: 'boom' }));
      if (req.url === '/api/chat') return res.end(JSON.stringify({ message: { role: 'assistant', content: r.text }, done: true }));
      res.end(JSON.stringify({ choices: [{ index: 0, message: { role: 'assistant', content: r.text } }] }));
    });
  });
  return {
    seen,
    async start() {
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    },
    close: () => new Promise<void>((ok) => server.close(() => ok())),
  };
}

async function seed(g: SearchGateway) {
  await g.ingest(doc('The boiler was serviced on 3 March. The technician replaced the pressure valve. Next service is due in March next year.', { title: 'Boiler service' }));
  await g.ingest(doc('The garden fence needs painting before summer. Buy green paint.', { title: 'Garden' }));
  await g.ingest(doc('Pressure valve warranty lasts two years according to the installer.', { title: 'Warranty' }));
}

describe('POST /v1/ask (extractive)', () => {
  let g: SearchGateway;
  beforeAll(async () => {
    g = await startSearchGateway();
    await seed(g);
  });
  afterAll(async () => g.close());

  it('answers with sentences of the hits and citations that are all among the retrieved chunks', async () => {
    const res = await g.post('/v1/ask', { query: 'When was the pressure valve replaced?', k: 3 });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.answer_mode).toBe('extractive');
    expect(body.answer).toMatch(/pressure valve/);
    expect(body.answer).toMatch(/\[\d\]/);
    const search = (await g.get('/v1/search?k=3&q=' + encodeURIComponent('When was the pressure valve replaced?'))).json();
    const retrieved = new Set(search.hits.map((h: any) => `${h.document_id}/${h.chunk_id}`));
    expect(body.citations.length).toBeGreaterThan(0);
    for (const c of body.citations) expect(retrieved.has(`${c.document_id}/${c.chunk_id}`)).toBe(true);
    // Every marker names a citation.
    for (const m of body.answer.matchAll(/\[(\d+)\]/g)) expect(Number(m[1])).toBeLessThanOrEqual(body.citations.length);
    expect(body.citations.length).toBeLessThanOrEqual(3);
  });

  it('k defaults to 5 and "nothing relevant" is an answer', async () => {
    const body = (await g.post('/v1/ask', { query: 'quasar xylophonist' })).json();
    expect(body.citations).toEqual([]);
    expect(body.answer).toBe('No relevant results found.');
    expect(body.answer_mode).toBe('none');
  });
});

describe('POST /v1/ask with an LLM', () => {
  let reply = { status: 200, text: '' };
  const server = chatServer(() => reply);
  let base = '';
  beforeAll(async () => {
    base = await server.start();
  });
  afterAll(async () => server.close());

  it('ollama: grounded prompt, valid markers kept, invented ones removed', async () => {
    const g = await startSearchGateway({ ask: { provider: 'ollama', baseUrl: base, model: 'test-model', timeoutMs: 5000 } });
    try {
      await seed(g);
      reply = { status: 200, text: 'The valve was replaced in March [1]. It has a warranty [2][7]. See also [9, 1].' };
      const body = (await g.post('/v1/ask', { query: 'pressure valve', k: 2 })).json();
      expect(body.answer_mode).toBe('llm');
      expect(body.answer).toBe('The valve was replaced in March [1]. It has a warranty [2]. See also [1].');
      expect(body.citations).toHaveLength(2);
      const call = server.seen.at(-1);
      expect(call.url).toBe('/api/chat');
      expect(call.body.model).toBe('test-model');
      const prompt = call.body.messages.map((m: any) => m.content).join('\n');
      expect(prompt).toContain('[1]');
      expect(prompt).toMatch(/pressure valve/i);
      expect(prompt).not.toContain('garden fence');
    } finally {
      await g.close();
    }
  });

  it('openai-compatible: bearer key sent; on HTTP failure the extractive answer comes back, saying so', async () => {
    const g = await startSearchGateway({
      ask: { provider: 'openai', baseUrl: `${base}/v1`, apiKey: 'sk-test', model: 'gpt-test', timeoutMs: 5000 },
    });
    try {
      await seed(g);
      reply = { status: 200, text: 'Paint it green [1].' };
      const ok = (await g.post('/v1/ask', { query: 'garden fence paint', k: 1 })).json();
      expect(ok.answer).toBe('Paint it green [1].');
      expect(server.seen.at(-1).url).toBe('/v1/chat/completions');
      expect(server.seen.at(-1).auth).toBe('Bearer sk-test');

      reply = { status: 500, text: '' };
      const failed = (await g.post('/v1/ask', { query: 'garden fence paint', k: 1 })).json();
      expect(failed.answer_mode).toBe('extractive');
      expect(failed.llm_error).toMatch(/LLM unavailable/);
      expect(failed.answer).toMatch(/fence/);
      expect(failed.citations).toHaveLength(1);
    } finally {
      await g.close();
    }
  });

  it('an unreachable LLM falls back too', async () => {
    const g = await startSearchGateway({ ask: { provider: 'ollama', baseUrl: 'http://127.0.0.1:1', model: 'x', timeoutMs: 2000 } });
    try {
      await seed(g);
      const body = (await g.post('/v1/ask', { query: 'boiler service', k: 2 })).json();
      expect(body.answer_mode).toBe('extractive');
      expect(body.llm_error).toBeDefined();
      expect(body.answer).toMatch(/\[1\]/);
    } finally {
      await g.close();
    }
  });

  it('marker validation never invents a citation', () => {
    expect(validateMarkers('A [0] B [3] C [1; 2]', 2)).toBe('A B C [1][2]');
    expect(validateMarkers('Nothing relevant [5].', 2)).toBe('Nothing relevant.');
  });
});
