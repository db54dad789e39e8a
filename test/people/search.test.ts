import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { card, syncContacts } from './helpers.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
  await syncContacts(gw, [
    card({ external_id: 's1', display_name: 'Margaret Hamilton', given_name: 'Margaret', family_name: 'Hamilton', organization: 'MIT Instrumentation Lab', nicknames: ['Maggie'], emails: [{ value: 'margaret@mit.example' }], phones: [{ value: '(617) 253-1000', label: 'work' }], addresses: [{ label: 'work', city: 'Cambridge', region: 'MA', country: 'USA', street: '77 Mass Ave' }] }),
    card({ external_id: 's2', display_name: 'Ada Lovelace', given_name: 'Ada', family_name: 'Lovelace', emails: [{ value: 'ada@analytical.example' }, { value: 'countess@lovelace.example' }], phones: [{ value: '+44 20 7946 0958' }] }),
    card({ external_id: 's3', display_name: 'Grace Hopper', organization: 'US Navy', emails: [{ value: 'grace@navy.example' }], phones: [{ value: '202-555-0147' }] }),
    card({ external_id: 's4', display_name: 'Hamilton Smith', emails: [{ value: 'hsmith@mit.example' }] }),
    card({ external_id: 's5', display_name: 'Adam Hamiltonian', emails: [{ value: 'adam@other.example' }] }),
  ]);
});
afterAll(async () => {
  await gw?.close();
});

const search = async (qs: string) => {
  const res = await gw.request('GET', `/search/people?${qs}`);
  expect(res.statusCode).toBe(200);
  return res.json();
};
const names = (body: any) => body.results.map((r: any) => r.display_name);

describe('GET /search/people', () => {
  it('finds people by a name fragment, ranked exact > prefix > substring', async () => {
    const body = await search('q=hamilton');
    // family_name exact (Margaret), word prefix (Hamilton Smith), substring-free prefix of a word (Hamiltonian).
    expect(names(body)).toEqual(['Margaret Hamilton', 'Adam Hamiltonian', 'Hamilton Smith']);
    expect(body).toMatchObject({ query: 'hamilton', limit: 20, offset: 0, total: 3 });
    expect(names(await search('q=ilton'))).toEqual(['Adam Hamiltonian', 'Hamilton Smith', 'Margaret Hamilton']);
    expect(names(await search('q=Maggie'))).toEqual(['Margaret Hamilton']);
    expect(names(await search('q=navy'))).toEqual(['Grace Hopper']);
  });

  it('returns exactly the hit fields of the spec', async () => {
    const [hit] = (await search('q=margaret')).results;
    expect(Object.keys(hit).sort()).toEqual(
      // The spec's fields, and (issue 35) how many messages name the person and the date of the last.
      ['addresses', 'display_name', 'emails', 'family_name', 'given_name', 'nicknames', 'organization', 'person_id', 'phones', 'message_count', 'last_contact_at'].sort(),
    );
    expect(hit).toMatchObject({
      display_name: 'Margaret Hamilton',
      given_name: 'Margaret',
      family_name: 'Hamilton',
      organization: 'MIT Instrumentation Lab',
      nicknames: ['Maggie'],
      emails: ['margaret@mit.example'],
      phones: ['+16172531000'],
      addresses: [{ label: 'work', city: 'Cambridge', region: 'MA', country: 'USA' }],
    });
  });

  it('finds a phone whatever format the user types', async () => {
    for (const q of ['6172531000', '617.253.1000', '(617) 253-1000', '+1 617 253 1000', '253-1000']) {
      expect(names(await search(`q=${encodeURIComponent(q)}`))).toEqual(['Margaret Hamilton']);
    }
    expect(names(await search(`q=${encodeURIComponent('020 7946 0958')}`))).toEqual(['Ada Lovelace']);
  });

  it('finds people by email domain and by full address', async () => {
    expect(names(await search('q=mit.example'))).toEqual(['Hamilton Smith', 'Margaret Hamilton']);
    expect(names(await search('q=%40lovelace.example'))).toEqual(['Ada Lovelace']);
    expect(names(await search(`q=${encodeURIComponent('Grace@Navy.example')}`))).toEqual(['Grace Hopper']);
  });

  it('pages through results and lists everyone without q', async () => {
    const all = await search('limit=200');
    expect(all.total).toBe(5);
    expect(all.query).toBeNull();
    const p1 = await search('limit=2&offset=0');
    const p2 = await search('limit=2&offset=2');
    expect([...names(p1), ...names(p2)]).toEqual(names(all).slice(0, 4));
    const past = await search('q=hamilton&offset=10');
    expect(past.results).toEqual([]);
    expect(past.total).toBe(3);
  });

  it('treats LIKE wildcards in the query as text', async () => {
    expect((await search('q=%25')).results).toEqual([]);
    expect((await search('q=_')).results).toEqual([]);
  });

  it('rejects out-of-range paging with 422', async () => {
    for (const qs of ['limit=0', 'limit=201', 'offset=-1', 'q=']) {
      const res = await gw.request('GET', `/search/people?${qs}`);
      expect(res.statusCode, qs).toBe(422);
    }
  });
});
