import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import os from 'node:os';
import { loadAgentConfig } from '../../src/agent/config.ts';
import { createGatewayClient, gatewayClientFromConfig, GatewayHttpError } from '../../src/agent/gateway-client.ts';
import { backend } from '../helpers/db.ts';
import { noteBody, startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;
let baseUrl: string;
beforeAll(async () => {
  gw = await startTestGateway();
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  const addr = gw.app.server.address() as { port: number };
  baseUrl = `http://127.0.0.1:${addr.port}`;
});
afterAll(async () => {
  await gw?.close();
});

describe(`agent gateway client against a live memex gateway (${backend})`, () => {
  it('submits single documents and batches that the gateway stores', async () => {
    const client = createGatewayClient({ baseUrl, authToken: TEST_TOKEN, sleep: async () => undefined });
    const one = await client.submitDocument<{ doc_id: string; duplicate: boolean }>(noteBody({ source_id: 'live-1' }));
    expect(one.status).toBe(202);
    const again = await client.submitDocument<{ doc_id: string; duplicate: boolean }>(noteBody({ source_id: 'live-1' }));
    expect(again.status).toBe(200);
    expect(again.body.duplicate).toBe(true);
    expect(again.body.doc_id).toBe(one.body.doc_id);

    const batch = await client.submitBatch<{ success_count: number; batch_id: string }>([
      noteBody({ source_id: 'live-2' }),
      noteBody({ source_id: 'live-3' }),
    ]);
    expect(batch.status).toBe(202);
    expect(batch.body.success_count).toBe(2);
    const stored = await gw.db.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE external_id LIKE 'live-%'");
    expect(stored.rows[0].n).toBe(3);
  });

  it('fails at once on a 4xx from the gateway, without retrying', async () => {
    const client = createGatewayClient({ baseUrl, authToken: 'wrong-token', sleep: async () => undefined });
    const err = await client.submitDocument(noteBody()).catch((e) => e);
    expect(err).toBeInstanceOf(GatewayHttpError);
    expect(err.status).toBe(403);
    const bad = createGatewayClient({ baseUrl, authToken: TEST_TOKEN, sleep: async () => undefined });
    const invalid = await bad.submitDocument({ source_type: 'note' }).catch((e) => e);
    expect(invalid.status).toBe(422);
  });

  it('takes the gateway AUTH_TOKEN as the collector token (spec 5.3) and names the variable when the gateway refuses it', async () => {
    const configured = (env: Record<string, string>) =>
      gatewayClientFromConfig(loadAgentConfig({ env: { HOME: os.homedir(), SVC_GATEWAY_URL: baseUrl, ...env } }).config, {
        sleep: async () => undefined,
      });
    const ok = await configured({ AUTH_TOKEN: TEST_TOKEN }).submitDocument(noteBody({ source_id: 'live-auth-token' }));
    expect(ok.status).toBe(202);
    // SVC_GATEWAY_TOKEN, the agent's own name, wins when both are set.
    const refused = await configured({ AUTH_TOKEN: TEST_TOKEN, SVC_GATEWAY_TOKEN: 'stale-token' }).submitDocument(noteBody()).catch((e) => e);
    expect(refused).toBeInstanceOf(GatewayHttpError);
    expect(refused.message).toBe('Gateway answered 403: the gateway refused the token from SVC_GATEWAY_TOKEN');
    const wrongAuth = await configured({ AUTH_TOKEN: 'stale-token' }).submitDocument(noteBody()).catch((e) => e);
    expect(wrongAuth.message).toContain('the token from AUTH_TOKEN');
    const none = await configured({}).submitDocument(noteBody()).catch((e) => e);
    expect(none.status).toBe(401);
    expect(none.message).toContain('no gateway token is configured');
  });
});
