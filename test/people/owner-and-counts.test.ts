/**
 * Issue 35 item 6 on both backends: the owner is no contact (not in GET /search/people, not in the search's person
 * facet, not ranked, including a second address of theirs named in SELF_IDENTIFIERS), and people come with how many
 * messages name them and the last contact, sortable by name, messages or last contact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { ingestBody, loadHistory, ME_PHONE, type Loaded } from '../relationships/fixture.ts';
import { startRelGateway, type RelGateway } from '../relationships/helpers.ts';

const HOME = 'me.home@example.org';
let gw: RelGateway;
let h: Loaded;
let home: string;

beforeAll(async () => {
  // The owner's phone first (the self person), and a home address that stayed a person of its own.
  gw = await startRelGateway({ rel: { selfIdentifiers: [ME_PHONE, HOME] } });
  h = await loadHistory(gw, new Date(Math.floor(Date.now() / 60_000) * 60_000));
  // The owner forwards a mail to their own home address.
  const fwd = ingestBody(
    {
      key: 'fwd1',
      source_type: 'email',
      hoursAgo: 3,
      from: { id: 'me@example.com', type: 'email', name: 'Me Myself' },
      to: [{ id: HOME, type: 'email', name: 'Me at home' }],
      thread: 'fwd',
      subject: 'Fwd: tickets',
    },
    h.now,
  );
  expect((await gw.request('POST', '/v1/ingest', fwd)).statusCode).toBe(202);
  home = (await gw.db.query<{ person_id: string }>(`SELECT person_id FROM person_identifiers WHERE value_canonical = $1`, [HOME])).rows[0].person_id;
  expect((await gw.request('POST', '/v1/admin/relationships/recompute')).json()).toMatchObject({ self_person_id: h.ids.me });
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

const names = (r: any) => r.json().results.map((p: any) => p.display_name);

describe(`the owner is no contact, on ${backend}`, () => {
  it('GET /search/people leaves the owner out, listed or searched for, unless include_self', async () => {
    const all = await gw.request('GET', '/search/people?limit=200');
    expect(all.statusCode, all.body).toBe(200);
    expect(names(all)).toContain('Alice Liddell');
    expect(names(all)).not.toContain('Me Myself');
    expect(names(all)).not.toContain('Me at home');
    const ids = all.json().results.map((p: any) => p.person_id);
    expect(ids).not.toContain(h.ids.me);
    expect(all.json().total).toBe(all.json().results.length);
    expect(names(await gw.request('GET', '/search/people?q=me'))).not.toContain('Me Myself');
    expect(names(await gw.request('GET', `/search/people?q=${encodeURIComponent(ME_PHONE)}`))).toEqual([]);
    const withSelf = await gw.request('GET', '/search/people?limit=200&include_self=true');
    expect(names(withSelf)).toEqual(expect.arrayContaining(['Me Myself', 'Me at home']));
    expect(withSelf.json().total).toBe(all.json().total + 2);
  });

  it("leaves the owner out of the search's person facet", async () => {
    const r = await gw.request('GET', '/v1/search?q=message&k=5');
    expect(r.statusCode, r.body).toBe(200);
    const facet = r.json().facets.person.map((f: any) => f.value);
    expect(facet).toContain(h.ids.alice);
    expect(facet).not.toContain(h.ids.me);
  });

  it("never ranks the owner's other address among the relationships", async () => {
    const top = (await gw.request('GET', '/v1/crm/relationships/top?window=365d&limit=100')).json();
    const ranked = top.relationships.map((r: any) => r.person_id);
    expect(ranked).toContain(h.ids.alice);
    expect(ranked).not.toContain(home);
    expect(ranked).not.toContain(h.ids.me);
  });
});

describe(`message counts and last contact, on ${backend}`, () => {
  it('says how many messages name each person (merged identities included) and when the last was', async () => {
    const r = (await gw.request('GET', '/search/people?q=alice')).json();
    // a1-a6 (chat), e1-e3 (mail under a merged address), g1-g4 (group chat).
    expect(r.results[0]).toMatchObject({ person_id: h.ids.alice, message_count: 13 });
    expect(Date.parse(r.results[0].last_contact_at)).toBe(h.now.getTime() - 29.5 * 3600_000);
    const bob = (await gw.request('GET', '/search/people?q=bob')).json().results[0];
    expect(bob).toMatchObject({ message_count: 6 });
    expect(Date.parse(bob.last_contact_at)).toBe(h.now.getTime() - 71.5 * 3600_000);
  });

  it('sorts by messages, by last contact and by name', async () => {
    const byCount = (await gw.request('GET', '/search/people?sort=messages&limit=3')).json();
    expect(byCount.results.map((p: any) => [p.display_name, p.message_count])).toEqual([
      ['Alice Liddell', 13],
      ['Bob Stone', 6],
      ['Service', 2], // tied with Shop Two: by name
    ]);
    const byLast = (await gw.request('GET', '/search/people?sort=last_contact&limit=200')).json().results;
    const times = byLast.map((p: any) => (p.last_contact_at ? Date.parse(p.last_contact_at) : -Infinity));
    expect(times).toEqual([...times].sort((a: number, b: number) => b - a));
    expect(byLast[0].display_name).toBe('Shop News'); // 5 hours ago
    const byName = (await gw.request('GET', '/search/people?sort=name&limit=200')).json().results.map((p: any) => p.display_name.toLowerCase());
    expect(byName).toEqual([...byName].sort());
    // With a query, the sort orders the matches.
    const matches = (await gw.request('GET', '/search/people?q=e&sort=messages&limit=2')).json();
    expect(matches.results[0].display_name).toBe('Alice Liddell');
    expect((await gw.request('GET', '/search/people?sort=size')).statusCode).toBe(422);
  });
});
