/**
 * The chat `submit` adapter over the agent gateway client, against a live gateway: per-item results of
 * the batch route, a bad document in a batch, and the fallback to single posts when the batch route is
 * missing (404 injected: our gateway always has the route).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ChatDocument } from '../../src/agent/collectors/chatapp/document.ts';
import { createGatewaySubmit } from '../../src/agent/collectors/chatapp/submit.ts';
import { createGatewayClient, GatewayHttpError, type GatewayClient } from '../../src/agent/gateway-client.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let client: GatewayClient;
beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (gw.app.server.address() as { port: number }).port;
  client = createGatewayClient({ baseUrl: `http://127.0.0.1:${port}`, authToken: TEST_TOKEN, sleep: async () => undefined });
});
afterAll(async () => {
  await gw?.close();
});

function doc(guid: string, text: string): ChatDocument {
  return {
    source_type: 'chatapp',
    source_id: `chatapp:${guid}`,
    external_id: `chatapp:${guid}`,
    source_provider: 'apple_messages',
    title: 'Alice',
    content: { mime_type: 'text/plain', data: text },
    metadata: { message: { guid }, attachments: [], reactions: [], has_attachments: false, attachment_count: 0 },
    content_timestamp: '2024-03-10T09:00:00.000Z',
    content_timestamp_type: 'received',
    people: [{ identifier: '+15551234567', identifier_type: 'phone', role: 'sender' }],
  } as ChatDocument;
}

const count = async (prefix: string) =>
  (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE external_id LIKE $1', [`chatapp:${prefix}%`])).rows[0].n;

describe('chat submit adapter (live gateway)', () => {
  it('maps per-item batch results: a document the gateway rejects is not retryable, the others are stored', async () => {
    const submit = createGatewaySubmit(client);
    const res = await submit([doc('b1-a', 'first'), doc('b1-b', '   '), doc('b1-c', 'third')]);
    expect(Array.isArray(res)).toBe(true);
    const r = res as { ok: boolean; retryable?: boolean; error?: string }[];
    expect(r[0].ok).toBe(true);
    expect(r[1]).toMatchObject({ ok: false, retryable: false });
    expect(r[1].error).toMatch(/422/);
    expect(r[2].ok).toBe(true);
    expect(await count('b1-')).toBe(2);
    // Sent again: duplicates, not new documents.
    const again = (await submit([doc('b1-a', 'first'), doc('b1-c', 'third')])) as { ok: boolean; duplicate?: boolean }[];
    expect(again.every((x) => x.ok && x.duplicate)).toBe(true);
    expect(await count('b1-')).toBe(2);
  });

  it('falls back to single posts for good when the batch route answers 404', async () => {
    let batchCalls = 0;
    const noBatch: GatewayClient = {
      ...client,
      submitDocument: client.submitDocument.bind(client),
      async submitBatch() {
        batchCalls++;
        throw new GatewayHttpError(404, 'Gateway answered 404', '{"error":"Not Found"}', [404]);
      },
    };
    const submit = createGatewaySubmit(noBatch);
    const r1 = (await submit([doc('fb-1', 'one'), doc('fb-2', 'two')])) as { ok: boolean }[];
    expect(r1.map((x) => x.ok)).toEqual([true, true]);
    expect(submit.batchUnsupported).toBe(true);
    const r2 = (await submit([doc('fb-3', 'three')])) as { ok: boolean }[];
    expect(r2[0].ok).toBe(true);
    expect(batchCalls).toBe(1);
    expect(await count('fb-')).toBe(3);
  });

  it('treats a wrong token as retryable (the run stops, nothing is skipped) and a 422 single post as final', async () => {
    const port = (gw.app.server.address() as { port: number }).port;
    const wrong = createGatewayClient({ baseUrl: `http://127.0.0.1:${port}`, authToken: 'nope', sleep: async () => undefined });
    const r = await createGatewaySubmit(wrong)(doc('wt-1', 'hello'));
    expect(r).toMatchObject({ ok: false, retryable: true });
    const bad = await createGatewaySubmit(client)(doc('wt-2', ''));
    expect(bad).toMatchObject({ ok: false, retryable: false });
    expect(await count('wt-')).toBe(0);
  });
});
