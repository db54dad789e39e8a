import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recomputeRelationships } from '../../src/relationships/recompute.ts';
import { relationshipScore } from '../../src/relationships/score.ts';
import { resolveSelf } from '../../src/relationships/self.ts';
import { topRelationships } from '../../src/relationships/top.ts';
import { backend } from '../helpers/db.ts';
import { ALICE_EMAIL, ALICE_PHONE, ALICE_WORK, EXPECTED, loadHistory, type Loaded } from './fixture.ts';
import { startRelGateway, type RelGateway } from './helpers.ts';

let gw: RelGateway;
let h: Loaded;
const NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000);

beforeAll(async () => {
  gw = await startRelGateway();
  h = await loadHistory(gw, NOW);
  await recomputeRelationships(gw.db, { now: NOW });
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

async function edges(): Promise<Map<string, Record<string, any>>> {
  const r = await gw.db.query<Record<string, any>>(
    'SELECT person_id, score, last_contact_at, decay_bucket, edge_features, self_person_id FROM relationship_edges',
  );
  return new Map(r.rows.map((x) => [x.person_id as string, x]));
}

describe(`relationship edges on ${backend}`, () => {
  it('detects the self person from outbound messages, through the merge of its email identity', async () => {
    const self = await resolveSelf(gw.db, { selfIdentifiers: [], phoneRegion: 'US' });
    expect(self).toMatchObject({ person_id: h.ids.me, source: 'outbound_messages' });
  });

  it('computes every feature and decay bucket exactly', async () => {
    const e = await edges();
    for (const [name, exp] of Object.entries(EXPECTED)) {
      const edge = e.get(h.ids[name]);
      expect(edge, name).toBeDefined();
      expect(edge!.self_person_id).toBe(h.ids.me);
      const f = edge!.edge_features;
      expect(
        {
          days_since_last_message: f.days_since_last_message,
          messages_30d: f.messages_30d,
          distinct_threads_90d: f.distinct_threads_90d,
          attachments_30d: f.attachments_30d,
          avg_reply_latency_seconds: f.avg_reply_latency_seconds,
          inbound_30d: f.inbound_30d,
          outbound_30d: f.outbound_30d,
          decay_bucket: edge!.decay_bucket,
        },
        name,
      ).toEqual({
        days_since_last_message: exp.days_since_last_message,
        messages_30d: exp.messages_30d,
        distinct_threads_90d: exp.distinct_threads_90d,
        attachments_30d: exp.attachments_30d,
        avg_reply_latency_seconds: exp.avg_reply_latency_seconds,
        inbound_30d: exp.inbound_30d,
        outbound_30d: exp.outbound_30d,
        decay_bucket: exp.decay_bucket,
      });
      expect(new Date(edge!.last_contact_at).toISOString(), name).toBe(
        new Date(NOW.getTime() - exp.last_hours_ago * 3600_000).toISOString(),
      );
    }
  });

  it('stores the score with its components, and it follows the documented formula', async () => {
    const e = await edges();
    for (const [name, exp] of Object.entries(EXPECTED)) {
      const edge = e.get(h.ids[name])!;
      const { score, components } = relationshipScore(exp, 30);
      expect(Number(edge.score), name).toBeCloseTo(score, 4);
      expect(edge.edge_features.score_components, name).toEqual(components);
      expect(edge.edge_features.score_components.half_life_days).toBe(30);
    }
    // Alice (recent, many messages, three threads) outranks everybody; Dan (200 days) is last.
    const ranked = [...e.values()].sort((a, b) => Number(b.score) - Number(a.score)).map((x) => x.person_id);
    expect(ranked[0]).toBe(h.ids.alice);
    expect(ranked.at(-1)).toBe(h.ids.dan);
  });

  it('leaves out newsletters, no-reply senders, merged persons and the self person', async () => {
    const e = await edges();
    expect([...e.keys()].sort()).toEqual(Object.keys(EXPECTED).map((n) => h.ids[n]).sort());
    for (const gone of ['news', 'noreply', 'deals', 'meEmail', 'aliceEmail', 'aliceWork', 'me']) {
      expect(e.has(h.ids[gone]), gone).toBe(false);
    }
  });

  it('lists identifiers of every merged identity with the survivor', async () => {
    const top = await topRelationships(gw.db, h.ids.me, { days: 90, limit: 10, offset: 0, now: NOW });
    const alice = top.relationships.find((r) => r.person_id === h.ids.alice)!;
    expect(alice.display_name).toBe('Alice Liddell');
    expect(alice.emails).toEqual([ALICE_EMAIL, ALICE_WORK].sort());
    expect(alice.phones).toEqual([ALICE_PHONE]);
  });

  it('window boundaries: a contact exactly at the window start is inside, one second later outside', async () => {
    const names = async (days: number, now = NOW) =>
      (await topRelationships(gw.db, h.ids.me, { days, limit: 500, offset: 0, now })).relationships.map((r) => r.person_id);
    expect(await names(100)).toContain(h.ids.carol);
    expect(await names(99)).not.toContain(h.ids.carol);
    expect(await names(100, new Date(NOW.getTime() + 1000))).not.toContain(h.ids.carol);
    expect((await names(90)).sort()).toEqual(['alice', 'bob', 'eve', 'frank'].map((n) => h.ids[n]).sort());
    expect(await names(3650)).toHaveLength(6);
    const one = await topRelationships(gw.db, h.ids.me, { days: 2, limit: 500, offset: 0, now: NOW });
    expect(one.relationships.map((r) => r.person_id)).toEqual([h.ids.alice]);
    expect(one.window_start).toBe(new Date(NOW.getTime() - 2 * 86400_000).toISOString());
    expect(one.window_end).toBe(NOW.toISOString());
  });

  it('a full recompute is idempotent and removes edges that no longer qualify', async () => {
    const before = await edges();
    const again = await recomputeRelationships(gw.db, { now: NOW });
    expect(again).toMatchObject({ mode: 'full', self_person_id: h.ids.me, edges_upserted: 6, edges_removed: 0 });
    const after = await edges();
    for (const [id, e] of before) expect(Number(after.get(id)!.score)).toBe(Number(e.score));

    // Dan's only message is deleted: his edge goes on the next recompute.
    const dan = await gw.db.query<{ doc_id: string }>(
      `SELECT d.doc_id FROM documents d WHERE d.external_id = 'sms:d1' AND d.is_active_version`,
    );
    await gw.catalog.deleteDocument(dan.rows[0].doc_id);
    const r = await recomputeRelationships(gw.db, { now: NOW });
    expect(r.edges_removed).toBe(1);
    expect((await edges()).has(h.ids.dan)).toBe(false);
  });
});
