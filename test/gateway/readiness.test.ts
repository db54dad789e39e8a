/**
 * Honest readiness (issue 34): GET /v1/readyz answers 503 with what is being prepared until
 * searches are answered from a complete index, then 200; /v1/healthz stays liveness. The port is
 * open from the first moment of a start (early-listener.ts); `memex serve` refuses searches until
 * the index is complete (503 + Retry-After) instead of answering from part of it; the CLI waits
 * for a starting server; and searches never wait for the model threads.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServerClient } from '../../src/client/server.ts';
import { listenEarly } from '../../src/gateway/early-listener.ts';
import { startServer } from '../../src/server.ts';
import { backend, createServerDatabase, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { buildTestGateway, TEST_TOKEN, testConfig } from '../helpers/gateway.ts';
import { ConceptEmbedder, doc, indexVectors, q, startSearchGateway } from '../search/helpers.ts';

const auth = { authorization: `Bearer ${TEST_TOKEN}` };

/** GET /v1/readyz until it answers 200 (each answer kept), as a load balancer would poll it. */
async function pollReady(get: () => Promise<{ statusCode: number; json: () => any }>) {
  const seen: any[] = [];
  for (;;) {
    const res = await get();
    seen.push({ status: res.statusCode, ...(await res.json()) });
    if (res.statusCode === 200) return seen;
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe(`readiness of a gateway with documents (${backend})`, () => {
  let testDb: TestDatabase;
  beforeAll(async () => {
    testDb = await createTestDatabase();
    const writer = await startSearchGateway({ testDb: { ...testDb, drop: async () => undefined } });
    for (const word of ['lighthouse', 'harbour', 'ferry']) await writer.ingest(doc(`Notes about the ${word} timetable`));
    await writer.app.close();
    writer.search.close();
  });
  afterAll(async () => testDb.drop());

  it('GET /v1/readyz is 503 {ready: false, phase: index} before the index is read, then 200; healthz is 200 throughout', async () => {
    const g = await startSearchGateway({ testDb: { ...testDb, drop: async () => undefined } });
    try {
      const health = await g.get('/v1/healthz');
      expect(health.statusCode).toBe(200);
      const seen = await pollReady(() => g.app.inject({ method: 'GET', url: '/v1/readyz' }) as any);
      // No token needed: probes are anonymous.
      expect(seen[0]).toMatchObject({ status: 503, ready: false, phase: 'index' });
      expect(seen[0].progress).toBeGreaterThanOrEqual(0);
      expect(seen[0].progress).toBeLessThan(1);
      const last = seen.at(-1);
      expect(last).toMatchObject({ status: 200, ready: true, phase: 'ready', progress: 1 });
      // Anonymous, like healthz: no counts of what the store holds.
      expect(Object.keys(last).sort()).toEqual(['model', 'phase', 'progress', 'ready', 'status']);
      expect(last.model).toBe('none');
      for (const s of seen.slice(0, -1)) expect(s).toMatchObject({ status: 503, ready: false, phase: 'index' });
      expect((await g.get('/v1/healthz')).statusCode).toBe(200);
    } finally {
      await g.app.close();
      g.search.close();
    }
  });

  it('with beforeIndexReady refuse (memex serve), a search before the index is complete is a 503 with Retry-After, then answered in full', async () => {
    const g = await startSearchGateway({ testDb: { ...testDb, drop: async () => undefined }, beforeIndexReady: 'refuse' });
    try {
      const early = await g.get(q({ q: 'lighthouse' }));
      expect(early.statusCode).toBe(503);
      expect(early.json()).toMatchObject({ phase: 'index' });
      expect(early.json().detail).toMatch(/preparing the search index/);
      expect((early as any).headers['retry-after']).toBe('2');
      // The refused search started the build: readiness comes without anything else asking.
      await pollReady(() => g.app.inject({ method: 'GET', url: '/v1/readyz' }) as any);
      const res = await g.get(q({ q: 'timetable' }));
      expect(res.statusCode).toBe(200);
      expect(res.json().total).toBe(3);
    } finally {
      await g.app.close();
      g.search.close();
    }
  });
});

describe(`searches never wait for the model threads (${backend})`, () => {
  it('while the embedder is starting the answer is lexical (vector_skipped: model_starting); once it is up the vector leg runs', async () => {
    const concepts = new ConceptEmbedder();
    let started = false;
    const g = await startSearchGateway({ embedder: () => (started ? concepts : undefined), config: { vectorLeg: 'always' } });
    try {
      const d = await g.ingest(doc('automobile vehicle'));
      await indexVectors(g.db, concepts);
      const before = (await g.get(q({ q: 'automobile' }))).json();
      expect(before.hits.map((h: any) => h.document_id)).toEqual([d.doc_id]);
      expect(before.legs).toMatchObject({ lexical: true, vector: false, vector_skipped: 'model_starting' });
      expect(concepts.calls).toBe(0);
      // A synonym only the vector leg finds: nothing while the model starts, found once it is up.
      expect((await g.get(q({ q: 'sedan' }))).json().hits).toEqual([]);
      started = true;
      const after = (await g.get(q({ q: 'sedan' }))).json();
      expect(after.legs.vector).toBe(true);
      expect(after.hits.map((h: any) => h.document_id)).toEqual([d.doc_id]);
    } finally {
      await g.close();
    }
  });
});

describe('the port is open from the first moment of a start (early-listener.ts)', () => {
  it('answers liveness, readiness with the phase, a starting page and 503 + Retry-After, then hands over to the gateway', async () => {
    const early = await listenEarly({ host: '127.0.0.1', port: 0, database: 'pglite', version: 'test' });
    const testDb = await createTestDatabase();
    try {
      early.state.phase = 'migrations';
      early.state.progress = 0.5;
      const health = await fetch(`${early.url}/v1/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({ status: 'ok', database: 'pglite' });
      const ready = await fetch(`${early.url}/v1/readyz`);
      expect(ready.status).toBe(503);
      expect(await ready.json()).toMatchObject({ ready: false, phase: 'migrations', progress: 0.5 });
      const search = await fetch(`${early.url}/v1/search?q=x`, { headers: auth });
      expect(search.status).toBe(503);
      expect(search.headers.get('retry-after')).toBe('2');
      expect(await search.json()).toMatchObject({ phase: 'migrations', detail: expect.stringMatching(/starting: updating the database \(50 %\)/) });
      const page = await fetch(`${early.url}/`, { headers: { accept: 'text/html' } });
      expect(page.status).toBe(503);
      expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);
      expect(await page.text()).toMatch(/memex is starting[\s\S]*Updating the database \(50 %\)/);

      const app = await buildTestGateway({ config: testConfig(), db: testDb.db, serverFactory: early.serverFactory });
      await app.ready();
      early.attach();
      const seen = await pollReady(async () => {
        const res = await fetch(`${early.url}/v1/readyz`);
        return { statusCode: res.status, json: () => res.json() } as any;
      });
      expect(seen.at(-1)).toMatchObject({ ready: true, phase: 'ready' });
      const answered = await fetch(`${early.url}/v1/search?q=anything`, { headers: auth });
      expect(answered.status).toBe(200);
      await app.close();
    } finally {
      await early.close();
      await testDb.drop();
    }
  });

  it('a client verb waits for a starting server and then gets its answer', async () => {
    const early = await listenEarly({ host: '127.0.0.1', port: 0, database: 'pglite', version: 'test' });
    const testDb = await createTestDatabase();
    try {
      early.state.phase = 'database';
      const notices: string[] = [];
      const client = createServerClient({ url: early.url, token: TEST_TOKEN, tokenSource: 'test' }, (m) => notices.push(m));
      const answer = client.request<any>('GET', '/v1/status');
      // The request is refused with the phase until the gateway takes over; then it is answered.
      while (notices.length === 0) await new Promise((r) => setTimeout(r, 20));
      const app = await buildTestGateway({ config: testConfig(), db: testDb.db, serverFactory: early.serverFactory });
      await app.ready();
      early.attach();
      const status = await answer;
      expect(status.documents.total).toBe(0);
      expect(notices).toEqual(['the server is starting (database); waiting']);
      await app.close();
    } finally {
      await early.close();
      await testDb.drop();
    }
  });
});

describe(`memex serve's start (${backend})`, () => {
  it('readiness is 503 while it starts and 200 once the index is read; searches are answered then', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-ready-'));
    const pg = backend === 'postgres' ? await createServerDatabase() : undefined;
    const early = await listenEarly({ host: '127.0.0.1', port: 0, database: backend, version: 'test' });
    const lines: string[] = [];
    try {
      const first = await fetch(`${early.url}/v1/readyz`);
      expect(first.status).toBe(503);
      expect(await first.json()).toMatchObject({ ready: false, phase: 'starting' });
      const config = { ...testConfig({ dataDir, port: 0 }), databaseUrl: pg?.url };
      const server = await startServer(config, 'all', { early, env: { OCR_ENABLED: 'false' }, onProgress: (l) => lines.push(l) });
      try {
        const seen = await pollReady(async () => {
          const res = await fetch(`${server.url}/v1/readyz`);
          return { statusCode: res.status, json: () => res.json() } as any;
        });
        for (const s of seen.slice(0, -1)) expect(s.status).toBe(503);
        expect(seen.at(-1)).toMatchObject({ status: 200, ready: true, phase: 'ready' });
        const res = await fetch(`${server.url}/v1/search?q=anything`, { headers: auth });
        expect(res.status).toBe(200);
        // A line per phase for the person watching.
        expect(lines.join('\n')).toMatch(/database: [\s\S]*migrations: [\s\S]*listening on [\s\S]*index: ready, 0 documents/);
      } finally {
        await server.close();
      }
    } finally {
      await early.close();
      await pg?.drop();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
