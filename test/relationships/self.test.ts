import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { detectSelf, resolveSelf } from '../../src/relationships/self.ts';
import { backend } from '../helpers/db.ts';
import { ALICE_EMAIL, BOB_PHONE, CAROL_EMAIL, loadHistory, type Loaded } from './fixture.ts';
import { startRelGateway, type RelGateway } from './helpers.ts';

let gw: RelGateway;
let h: Loaded;

beforeAll(async () => {
  gw = await startRelGateway();
  h = await loadHistory(gw, new Date(Math.floor(Date.now() / 60_000) * 60_000));
  await gw.service.recompute();
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

describe(`self person on ${backend}`, () => {
  it('GET shows the detected self person and the evidence', async () => {
    const res = await gw.request('GET', '/v1/admin/self-person');
    expect(res.statusCode).toBe(200);
    const s = res.json();
    expect(s).toMatchObject({ self_person_id: h.ids.me, source: 'outbound_messages', display_name: 'Me Myself', override: null, warning: null });
    expect(s.detected.evidence.outbound_messages).toBeGreaterThan(0);
  });

  it('PUT by identifier overrides detection (through a merge chain) and edges follow after the refresh', async () => {
    const res = await gw.request('PUT', '/v1/admin/self-person', { identifier: ALICE_EMAIL });
    expect(res.statusCode, res.body).toBe(200);
    expect(res.json()).toMatchObject({
      self_person_id: h.ids.alice,
      source: 'setting',
      display_name: 'Alice Liddell',
      override: { stored_person_id: h.ids.alice, resolved_person_id: h.ids.alice, source: 'manual' },
      detected: { person_id: h.ids.me, source: 'outbound_messages' },
    });
    await gw.service.flush();
    const top = (await gw.request('GET', '/v1/crm/relationships/top')).json();
    expect(top.self_person_id).toBe(h.ids.alice);
    // Alice's side of the history: the user (direct chat, email, group) and Bob (group chat only).
    expect(top.relationships.map((r: any) => r.person_id)).toContain(h.ids.me);
    const me = top.relationships.find((r: any) => r.person_id === h.ids.me);
    expect(me.features).toMatchObject({ messages_30d: 11, distinct_threads_90d: 3, attachments_30d: 3 });
    // The original self person's ranking is still there when asked for explicitly.
    const mine = (await gw.request('GET', `/v1/crm/relationships/top?self_person_id=${h.ids.me}`)).json();
    expect(mine.total_count).toBe(4);
  });

  it('PUT by a merged person id stores the survivor', async () => {
    const res = await gw.request('PUT', '/v1/admin/self-person', { person_id: h.ids.meEmail });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ self_person_id: h.ids.me, source: 'setting', override: { stored_person_id: h.ids.me } });
    const row = await gw.db.query<{ value: any }>(`SELECT value FROM system_settings WHERE key = 'self_person_id'`);
    expect(row.rows[0].value).toMatchObject({ self_person_id: h.ids.me, source: 'manual' });
  });

  it('rejects unknown persons (404) and malformed bodies (422) without changing the setting', async () => {
    const cases: [unknown, number][] = [
      [{ person_id: '0190a000-0000-7000-8000-000000000000' }, 404],
      [{ identifier: 'nobody@nowhere.example' }, 404],
      [{ identifier: ALICE_EMAIL, identifier_type: 'fax' }, 404],
      [{}, 422],
      [{ person_id: h.ids.bob, identifier: ALICE_EMAIL }, 422],
      [{ person_id: 'bob' }, 422],
      [{ person_id: h.ids.bob, extra: 1 }, 422],
      ['not json', 422],
    ];
    for (const [body, status] of cases) {
      const res = await gw.request('PUT', '/v1/admin/self-person', body, typeof body === 'string' ? { 'content-type': 'application/json' } : {});
      expect(res.statusCode, JSON.stringify(body)).toBe(status);
    }
    expect((await gw.request('GET', '/v1/admin/self-person')).json()).toMatchObject({ self_person_id: h.ids.me, source: 'setting' });
    // A deleted person cannot become the self person.
    await gw.db.query('UPDATE people SET deleted = true WHERE person_id = $1', [h.ids.dan]);
    expect((await gw.request('PUT', '/v1/admin/self-person', { person_id: h.ids.dan })).statusCode).toBe(404);
    await gw.db.query('UPDATE people SET deleted = false WHERE person_id = $1', [h.ids.dan]);
  });

  it('a stored person that was deleted since is ignored with a warning', async () => {
    await gw.db.query(
      `UPDATE system_settings SET value = jsonb_build_object('self_person_id', $1::text, 'source', 'manual') WHERE key = 'self_person_id'`,
      [h.ids.dan],
    );
    await gw.db.query('UPDATE people SET deleted = true WHERE person_id = $1', [h.ids.dan]);
    const s = (await gw.request('GET', '/v1/admin/self-person')).json();
    expect(s).toMatchObject({ self_person_id: h.ids.me, source: 'outbound_messages', override: { stored_person_id: h.ids.dan, resolved_person_id: null } });
    expect(s.warning).toContain('no longer exists');
    await gw.db.query('UPDATE people SET deleted = false WHERE person_id = $1', [h.ids.dan]);
  });

  it('DELETE removes the override and detection decides again', async () => {
    const res = await gw.request('DELETE', '/v1/admin/self-person');
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ self_person_id: h.ids.me, source: 'outbound_messages', override: null });
  });

  it('detection order: setting, then SELF_IDENTIFIERS, then a "me" contact card, then outbound messages', async () => {
    const opts = { selfIdentifiers: [] as string[], phoneRegion: 'US' };
    expect(await detectSelf(gw.db, opts)).toMatchObject({ person_id: h.ids.me, source: 'outbound_messages' });

    // A contact card marked as me (Carol's card, to tell it apart from the outbound evidence).
    const card = await gw.request('POST', '/v1/ingest', {
      source_type: 'contact',
      source_id: 'contacts:me-card',
      title: 'Carol Danvers',
      content: { mime_type: 'text/plain', data: 'Carol Danvers' },
      metadata: { contact: { is_me: true, display_name: 'Carol Danvers' } },
      people: [{ identifier: CAROL_EMAIL, identifier_type: 'email', role: 'contact', display_name: 'Carol Danvers' }],
    });
    expect(card.statusCode, card.body).toBe(202);
    expect(await detectSelf(gw.db, opts)).toMatchObject({ person_id: h.ids.carol, source: 'contact_card' });

    // Configured identifiers win over the card; unknown ones are skipped; national formats work.
    const cfg = { selfIdentifiers: ['ghost@nowhere.example', '(508) 410-9573'], phoneRegion: 'US' };
    expect(await detectSelf(gw.db, cfg)).toMatchObject({ person_id: h.ids.bob, source: 'config', evidence: { identifier: '(508) 410-9573' } });
    expect(BOB_PHONE).toBe('+15084109573');

    // The stored setting wins over everything.
    await gw.request('PUT', '/v1/admin/self-person', { person_id: h.ids.eve });
    expect(await resolveSelf(gw.db, cfg)).toMatchObject({ person_id: h.ids.eve, source: 'setting' });
    await gw.request('DELETE', '/v1/admin/self-person');
    expect(await resolveSelf(gw.db, cfg)).toMatchObject({ person_id: h.ids.bob, source: 'config' });

    // A setting stored automatically (a contact sync's self_identifier) does not beat SELF_IDENTIFIERS,
    // only detection.
    await gw.db.query(`INSERT INTO system_settings (key, value) VALUES ('self_person_id', $1)`, [
      JSON.stringify({ self_person_id: h.ids.eve, source: 'host_contacts' }),
    ]);
    expect(await resolveSelf(gw.db, cfg)).toMatchObject({ person_id: h.ids.bob, source: 'config' });
    expect(await resolveSelf(gw.db, opts)).toMatchObject({ person_id: h.ids.eve, source: 'setting' });
    await gw.request('DELETE', '/v1/admin/self-person');
  });
});
