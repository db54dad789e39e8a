/**
 * What telling the gateway mail flags and labels costs (POST /v1/documents/source-state, issue 44 item 5): 1,000
 * stored messages, then their flags and labels in one call of 1,000 updates, as `memex import mail` sends them for
 * a Takeout mbox. Backend from MEMEX_TEST_BACKEND (the test database helpers).
 *
 *   node --import tsx bench/organize/source-state.ts [--messages 1000]
 */
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import os from 'node:os';
import { startTestGateway } from '../../test/helpers/gateway.ts';

const { values } = parseArgs({ options: { messages: { type: 'string', default: '1000' } } });
const N = Number(values.messages);
const gw = await startTestGateway();
try {
  for (let i = 0; i < N; i += 100) {
    const documents = Array.from({ length: Math.min(100, N - i) }, (_, k) => ({
      source_type: 'email_local',
      source_id: `email:bench-${i + k}@example.org`,
      title: `Message ${i + k}`,
      content: { mime_type: 'text/plain', data: `Body of message ${i + k} about the quarterly plan.` },
      content_timestamp: '2024-01-01T00:00:00Z',
    }));
    const r = await gw.request('POST', '/v1/ingest:batch', { documents });
    if (r.statusCode >= 300) throw new Error(r.body);
  }
  const updates = (labels: string[]) =>
    Array.from({ length: N }, (_, i) => ({ source_type: 'email_local', source_id: `email:bench-${i}@example.org`, flags: i % 3 ? ['\\Seen'] : [], labels }));
  for (const [what, labels] of [['first', ['Work/Projects', 'Receipts']], ['changed', ['Receipts', 'Family']]] as const) {
    const t = performance.now();
    const r = await gw.request('POST', '/v1/documents/source-state', { updates: updates([...labels]) });
    if (r.statusCode >= 300) throw new Error(r.body);
    const ms = performance.now() - t;
    console.log(`${process.env.MEMEX_TEST_BACKEND ?? 'pglite'}: ${what} flags and labels of ${N} messages in one call: ${ms.toFixed(0)} ms (${Math.round(N / (ms / 1000))} updates/s); ${JSON.stringify(r.json())}; load ${os.loadavg()[0].toFixed(2)}`);
  }
} finally {
  await gw.close();
}
