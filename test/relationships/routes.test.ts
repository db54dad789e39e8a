import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/config/server.ts';
import { backend } from '../helpers/db.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { loadHistory, type Loaded } from './fixture.ts';
import { startRelGateway, type RelGateway } from './helpers.ts';

let gw: RelGateway;
let h: Loaded;

beforeAll(async () => {
  gw = await startRelGateway();
  h = await loadHistory(gw, new Date(Math.floor(Date.now() / 60_000) * 60_000));
  const r = await gw.request('POST', '/v1/admin/relationships/recompute');
  expect(r.statusCode, r.body).toBe(200);
  expect(r.json()).toMatchObject({ mode: 'full', self_person_id: h.ids.me, self_source: 'outbound_messages', edges_upserted: 6 });
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

describe(`GET /v1/crm/relationships/top on ${backend}`, () => {
  it('ranks the detected self person\'s relationships with features, window and counts', async () => {
    const res = await gw.request('GET', '/v1/crm/relationships/top');
    expect(res.statusCode, res.body).toBe(200);
    const body = res.json();
    expect(body).toMatchObject({ self_person_id: h.ids.me, window: '90d', limit: 50, offset: 0, total_count: 4 });
    expect(Date.parse(body.window_end) - Date.parse(body.window_start)).toBe(90 * 86400_000);
    const ids = body.relationships.map((r: any) => r.person_id);
    expect(ids[0]).toBe(h.ids.alice);
    expect([...ids].sort()).toEqual(['alice', 'bob', 'eve', 'frank'].map((n) => h.ids[n]).sort());
    const scores = body.relationships.map((r: any) => r.score);
    expect([...scores].sort((a: number, b: number) => b - a)).toEqual(scores);
    const alice = body.relationships[0];
    expect(alice).toMatchObject({
      display_name: 'Alice Liddell',
      organization: null,
      decay_bucket: 0,
      emails: ['alice.l@work.example', 'alice@example.com'],
      phones: ['+15084109572'],
    });
    expect(alice.last_contact_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    expect(alice.features).toMatchObject({ messages_30d: 11, distinct_threads_90d: 3, attachments_30d: 3, avg_reply_latency_seconds: 23850 });
    expect(alice.features.score_components).toHaveProperty('recency');
  });

  it('pages with limit and offset over a stable order', async () => {
    const all = (await gw.request('GET', '/v1/crm/relationships/top?window=3650d&limit=500')).json();
    expect(all.total_count).toBe(6);
    expect(all.relationships.at(-1).person_id).toBe(h.ids.dan);
    const page = (await gw.request('GET', '/v1/crm/relationships/top?window=3650d&limit=2&offset=1')).json();
    expect(page).toMatchObject({ limit: 2, offset: 1, total_count: 6 });
    expect(page.relationships.map((r: any) => r.person_id)).toEqual(all.relationships.slice(1, 3).map((r: any) => r.person_id));
    const past = (await gw.request('GET', '/v1/crm/relationships/top?window=3650d&offset=10')).json();
    expect(past).toMatchObject({ relationships: [], total_count: 6 });
  });

  it('accepts a window written loosely and counts only edges inside it', async () => {
    const res = await gw.request('GET', `/v1/crm/relationships/top?window=${encodeURIComponent(' 2D ')}`);
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({ window: '2d', total_count: 1 });
    expect(res.json().relationships[0].person_id).toBe(h.ids.alice);
    expect((await gw.request('GET', '/v1/crm/relationships/top?window=150d')).json().total_count).toBe(5);
  });

  it('takes self_person_id, resolving a merged id to its survivor', async () => {
    const byMerged = await gw.request('GET', `/v1/crm/relationships/top?self_person_id=${h.ids.meEmail}`);
    expect(byMerged.statusCode).toBe(200);
    expect(byMerged.json()).toMatchObject({ self_person_id: h.ids.me, total_count: 4 });
    // Another person asked for by id: its edges are computed on demand and kept.
    const other = (await gw.request('GET', `/v1/crm/relationships/top?self_person_id=${h.ids.bob}`)).json();
    expect(other.self_person_id).toBe(h.ids.bob);
    expect(other.relationships.map((r: any) => r.person_id).sort()).toEqual([h.ids.me, h.ids.alice].sort());
    expect(other.relationships.every((r: any) => r.self_person_id === h.ids.bob)).toBe(true);
    // The self person's own ranking is untouched.
    expect((await gw.request('GET', '/v1/crm/relationships/top')).json()).toMatchObject({ self_person_id: h.ids.me, total_count: 4 });
  });

  it('422 for a malformed window, limit, offset or self id; 404 for an unknown self person', async () => {
    for (const q of ['window=abc', 'window=0d', 'window=3651d', 'window=90', 'window=-5d', 'window=1.5d', 'limit=0', 'limit=501',
      'limit=ten', 'offset=-1', 'self_person_id=not-a-uuid']) {
      const res = await gw.request('GET', `/v1/crm/relationships/top?${q}`);
      expect(res.statusCode, q).toBe(422);
      expect(Array.isArray(res.json().detail), q).toBe(true);
    }
    const w = (await gw.request('GET', '/v1/crm/relationships/top?window=abc')).json();
    expect(w.detail[0]).toMatchObject({ loc: ['query', 'window'] });
    expect(w.detail[0].msg).toContain('<days>d');
    const unknown = await gw.request('GET', '/v1/crm/relationships/top?self_person_id=0190a000-0000-7000-8000-000000000000');
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().detail).toContain('not found');
  });

  it('requires the gateway token', async () => {
    expect((await gw.request('GET', '/v1/crm/relationships/top', undefined, { authorization: '' })).statusCode).toBe(401);
    expect((await gw.request('GET', '/v1/crm/relationships/top', undefined, { authorization: 'Bearer nope' })).statusCode).toBe(403);
    expect((await gw.request('GET', '/v1/admin/self-person', undefined, { authorization: '' })).statusCode).toBe(401);
  });
});

describe(`relationships without a self person, and catalog token enforcement, on ${backend}`, () => {
  it('without a self person ranks the edges of every self asked for, and sees a self person detected later at once', async () => {
    const empty = await startRelGateway();
    try {
      const res = await empty.request('GET', '/v1/crm/relationships/top');
      expect(res.statusCode, res.body).toBe(200);
      expect(res.json()).toMatchObject({ self_person_id: null, relationships: [], total_count: 0 });
      const state = (await empty.request('GET', '/v1/admin/self-person')).json();
      expect(state).toMatchObject({ self_person_id: null, source: null, override: null, detected: null });
      expect(state.warning).toContain('not yet known');

      // Plain mail (an import: no "from me" marker): inbox messages to the owner, replies in Sent.
      const mail = async (key: string, from: string, to: string, mailbox: string, hoursAgo: number) => {
        const r = await empty.request('POST', '/v1/ingest', {
          source_type: 'email_local',
          source_id: `email:${key}`,
          content: { data: `Message ${key}` },
          content_timestamp: new Date(Date.now() - hoursAgo * 3600_000).toISOString(),
          metadata: { mailbox, subject: `Subject ${key}` },
          people: [
            { identifier: from, identifier_type: 'email', role: 'sender' },
            { identifier: to, identifier_type: 'email', role: 'recipient' },
          ],
        });
        expect(r.statusCode, r.body).toBe(202);
      };
      await mail('m1', 'zoe@example.org', 'owner@example.net', 'INBOX', 30);
      const ownerOf = async (email: string) =>
        (await empty.db.query<{ person_id: string }>(
          `SELECT person_id FROM person_identifiers WHERE kind = 'email' AND value_canonical = $1`, [email])).rows[0].person_id;
      const zoe = await ownerOf('zoe@example.org');
      const owner = await ownerOf('owner@example.net');
      // Asked by id before any self is known: computed on demand; the no-self ranking then holds it.
      const asked = (await empty.request('GET', `/v1/crm/relationships/top?self_person_id=${zoe}`)).json();
      expect(asked.relationships.map((r: any) => r.person_id)).toEqual([owner]);
      const all = (await empty.request('GET', '/v1/crm/relationships/top')).json();
      expect(all).toMatchObject({ self_person_id: null, total_count: 1 });
      expect(all.relationships[0]).toMatchObject({ self_person_id: zoe, person_id: owner });

      await mail('m2', 'yan@example.org', 'owner@example.net', 'INBOX', 20);
      await mail('m3', 'owner@example.net', 'zoe@example.org', 'Sent Messages', 10);
      // Detected from the mailboxes right away (no cached "unknown"), and ranked.
      const top = (await empty.request('GET', '/v1/crm/relationships/top')).json();
      expect(top.self_person_id).toBe(owner);
      expect(top.relationships.map((r: any) => r.person_id).sort()).toEqual([zoe, await ownerOf('yan@example.org')].sort());
      expect((await empty.request('GET', '/v1/admin/self-person')).json()).toMatchObject({ self_person_id: owner, source: 'mailboxes' });
    } finally {
      await empty.close();
    }
  });

  it('RELATIONSHIPS_REQUIRE_CATALOG_TOKEN makes the route take the catalog token instead of the gateway token', async () => {
    const cat = 'catalog-token-abcdef0123';
    const g = await startRelGateway({ rel: { requireCatalogToken: true }, config: { catalogToken: cat } });
    try {
      expect((await g.request('GET', '/v1/crm/relationships/top')).statusCode).toBe(403);
      const ok = await g.request('GET', '/v1/crm/relationships/top', undefined, { authorization: `Bearer ${cat}` });
      expect(ok.statusCode).toBe(200); // past the guard
      expect((await g.request('GET', '/v1/crm/relationships/top', undefined, { authorization: '' })).json().detail).toBe(
        'Missing catalog token',
      );
      // Admin routes stay behind the gateway token.
      expect((await g.request('GET', '/v1/admin/self-person')).statusCode).toBe(200);
      expect(
        (await g.request('GET', '/v1/admin/self-person', undefined, { authorization: `Bearer ${cat}` })).statusCode,
      ).toBe(403);
    } finally {
      await g.close();
    }
    await expect(startRelGateway({ rel: { requireCatalogToken: true } })).rejects.toThrow(ConfigError);
    expect(TEST_TOKEN).not.toBe(cat);
  });
});
