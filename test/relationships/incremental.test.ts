import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { EVE, ME_P, ingestBody, loadHistory, type Loaded, type Msg } from './fixture.ts';
import { startRelGateway, type RelGateway } from './helpers.ts';

let gw: RelGateway;
let h: Loaded;

beforeAll(async () => {
  gw = await startRelGateway();
  h = await loadHistory(gw, new Date(Math.floor(Date.now() / 60_000) * 60_000));
  await gw.service.flush(); // the history's own ingests: first refresh is a full one (new self person)
  expect(gw.service.lastResult).toMatchObject({ mode: 'full', self_person_id: h.ids.me, edges_upserted: 6 });
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

async function edge(personId: string) {
  const r = await gw.db.query<Record<string, any>>(
    'SELECT score, last_contact_at, decay_bucket, edge_features, updated_at FROM relationship_edges WHERE self_person_id = $1 AND person_id = $2',
    [h.ids.me, personId],
  );
  return r.rows[0];
}

const eve = EVE;
const me = ME_P;

describe(`incremental refresh on ${backend}`, () => {
  it('new messages refresh only the persons they touch', async () => {
    const aliceBefore = await edge(h.ids.alice);
    const now = new Date();
    const msgs: Msg[] = [
      { key: 'v2', source_type: 'sms', hoursAgo: 1, from: eve, to: [me], thread: 'sms-eve' },
      { key: 'v3', source_type: 'sms', hoursAgo: 0.5, from: me, to: [eve], thread: 'sms-eve', attachments: 2 },
    ];
    for (const m of msgs) expect((await gw.request('POST', '/v1/ingest', ingestBody(m, now))).statusCode).toBe(202);
    await gw.service.flush();
    expect(gw.service.lastResult).toMatchObject({ mode: 'incremental', edges_upserted: 1, edges_removed: 0 });
    const e = await edge(h.ids.eve);
    expect(e.edge_features).toMatchObject({ messages_30d: 3, attachments_30d: 3, distinct_threads_90d: 1, avg_reply_latency_seconds: 1800 });
    expect(e.decay_bucket).toBe(0);
    expect(new Date(e.last_contact_at).toISOString()).toBe(new Date(now.getTime() - 1800_000).toISOString());
    // Alice was not touched.
    const aliceAfter = await edge(h.ids.alice);
    expect(new Date(aliceAfter.updated_at).getTime()).toBe(new Date(aliceBefore.updated_at).getTime());
  });

  it('a new version of a message replaces the old one in the counts', async () => {
    const doc = await gw.db.query<{ doc_id: string }>(`SELECT doc_id FROM documents WHERE external_id = 'sms:v3' AND is_active_version`);
    const res = await gw.request('PATCH', `/v1/documents/${doc.rows[0].doc_id}`, { text: 'edited reply', metadata: {} });
    expect(res.statusCode, res.body).toBe(200);
    await gw.service.flush();
    expect(gw.service.lastResult).toMatchObject({ mode: 'incremental' });
    expect((await edge(h.ids.eve)).edge_features).toMatchObject({ messages_30d: 3, attachments_30d: 3 });
  });

  it('debounces: the refresh happens on its own shortly after the last ingest', async () => {
    const g = await startRelGateway({ rel: { debounceMs: 100, maxDelayMs: 1000 } });
    try {
      const now = new Date();
      const self = me;
      for (const m of [
        { key: 'x1', source_type: 'sms', hoursAgo: 2, from: eve, to: [self], thread: 'sms-x' },
        { key: 'x2', source_type: 'sms', hoursAgo: 1, from: self, to: [eve], thread: 'sms-x' },
      ] as Msg[]) {
        expect((await g.request('POST', '/v1/ingest', ingestBody(m, now))).statusCode).toBe(202);
      }
      // Wait for the condition, not for a time: under load the first refresh may run between the two ingests (it
      // then sees one message) and a second one follows; nothing here calls refresh, so the edge can only reach
      // both messages through the debounced refreshes.
      let top: any;
      for (;;) {
        top = (await g.request('GET', '/v1/crm/relationships/top')).json();
        if (top.relationships[0]?.features?.messages_30d === 2) break;
        await new Promise((r) => setTimeout(r, 50));
      }
      expect(g.service.lastResult).toMatchObject({ edges_upserted: 1 });
      expect(top.relationships).toHaveLength(1);
      expect(top.relationships[0].features).toMatchObject({ messages_30d: 2, avg_reply_latency_seconds: 3600 });
    } finally {
      await g.close();
    }
  });

  it('after a merge a full recompute folds the merged person into the survivor and drops its edge', async () => {
    // Frank turns out to be Eve: merge Frank into Eve the way the people merge does.
    await gw.db.query('UPDATE people SET merged_into = $2 WHERE person_id = $1', [h.ids.frank, h.ids.eve]);
    await gw.db.query('UPDATE document_people SET person_id = $2 WHERE person_id = $1', [h.ids.frank, h.ids.eve]);
    await gw.db.query('UPDATE person_identifiers SET person_id = $2 WHERE person_id = $1', [h.ids.frank, h.ids.eve]);
    // Until the recompute the top route already hides the merged person.
    const before = (await gw.request('GET', '/v1/crm/relationships/top')).json();
    expect(before.relationships.map((r: any) => r.person_id)).not.toContain(h.ids.frank);
    const r = await gw.service.recompute();
    expect(r).toMatchObject({ mode: 'full', edges_upserted: 5, edges_removed: 1 });
    expect(await edge(h.ids.frank)).toBeUndefined();
    // Eve: v1 (6 d), v2, v3 and Frank's f1 version 2 (4 d); threads sms-eve and sms-frank.
    expect((await edge(h.ids.eve)).edge_features).toMatchObject({ messages_30d: 4, distinct_threads_90d: 2 });
    const top = (await gw.request('GET', '/v1/crm/relationships/top')).json();
    expect(top.relationships.find((x: any) => x.person_id === h.ids.eve).phones).toEqual(['+15084109575', '+15084109576']);
  });
});
