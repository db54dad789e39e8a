import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { card, livePeopleCount, syncContacts } from './helpers.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

const ann = () =>
  card({
    external_id: 'AB-ann',
    display_name: 'Ann Lee',
    given_name: 'Ann',
    family_name: 'Lee',
    organization: 'Acme Corp',
    nicknames: ['Annie'],
    emails: [{ value: 'Ann@Acme.example', label: 'Work' }],
    phones: [{ value: '(508) 410-9572', label: 'mobile' }],
    addresses: [{ label: 'home', street: '1 Main St', city: 'Springfield', region: 'MA', postal_code: '01101', country: 'USA' }],
    urls: [{ label: 'site', value: 'https://ann.example' }],
    notes: 'Met at the conference',
    change_token: 'tok-1',
  });
const bob = () => card({ external_id: 'AB-bob', display_name: 'Bob Stone', emails: [{ value: 'bob@stone.example' }], change_token: 'tok-2' });

async function contactDocs(externalId: string) {
  const r = await gw.db.query<Record<string, any>>(
    `SELECT doc_id, text, title, metadata, people, is_active_version, version_number FROM documents
      WHERE source_type = 'contact' AND external_id = $1 ORDER BY version_number`,
    [`contact:host_contacts:${externalId}`],
  );
  return r.rows;
}

describe('contact synchronisation', () => {
  it('upserts cards into people and contact documents with exact counts and the next token', async () => {
    const res = await syncContacts(gw, [ann(), bob()], { since_token: 'tok-0' });
    expect(res).toEqual({ accepted: 2, upserts: 2, deletes: 0, conflicts: 0, skipped: 0, blocked: [], since_token_next: 'tok-2' });

    const [doc] = await contactDocs('AB-ann');
    expect(doc.title).toBe('Ann Lee');
    expect(doc.text).toBe(
      [
        'Ann Lee',
        'Name: Ann Lee',
        'Organization: Acme Corp',
        'Nicknames: Annie',
        'Email: ann@acme.example',
        'Phone: +15084109572',
        'Address: 1 Main St, Springfield, MA, 01101, USA',
        'URL: https://ann.example',
        'Notes: Met at the conference',
      ].join('\n'),
    );
    expect(doc.metadata.contact).toMatchObject({ display_name: 'Ann Lee', organization: 'Acme Corp', version: 1, deleted: false });
    expect(doc.metadata.contact.emails[0]).toMatchObject({ value: 'ann@acme.example', value_raw: 'Ann@Acme.example', label: 'work' });
    expect(doc.people.map((p: any) => p.identifier_type)).toEqual(['email', 'phone', 'name']);
    expect(doc.people.every((p: any) => p.role === 'contact')).toBe(true);

    // The document links to the person the card created.
    const link = await gw.db.query<{ person_id: string }>('SELECT DISTINCT person_id FROM document_people WHERE doc_id = $1', [doc.doc_id]);
    expect(link.rows).toHaveLength(1);
    const person = (await gw.request('GET', `/v1/people/${link.rows[0].person_id}`)).json();
    expect(person).toMatchObject({ display_name: 'Ann Lee', given_name: 'Ann', family_name: 'Lee', nicknames: ['Annie'] });
    expect(person.addresses[0]).toMatchObject({ label: 'home', city: 'Springfield' });
    expect(person.urls).toEqual([{ label: 'site', url: 'https://ann.example' }]);
    expect(person.sources).toEqual([{ source: 'host_contacts', external_id: 'AB-ann', deleted: false }]);
  });

  it('changes nothing when the same cards are synced again', async () => {
    const docsBefore = await gw.db.query('SELECT count(*)::int AS n FROM documents');
    const peopleBefore = await gw.db.query('SELECT person_id, updated_at FROM people ORDER BY person_id');
    const res = await syncContacts(gw, [ann(), bob()], { since_token: 'tok-2' });
    expect(res).toEqual({ accepted: 2, upserts: 0, deletes: 0, conflicts: 0, skipped: 2, blocked: [], since_token_next: 'tok-2' });
    const again = await syncContacts(gw, [ann(), bob()]);
    expect(again.skipped).toBe(2);
    expect((await gw.db.query('SELECT count(*)::int AS n FROM documents')).rows).toEqual(docsBefore.rows);
    expect((await gw.db.query('SELECT person_id, updated_at FROM people ORDER BY person_id')).rows).toEqual(peopleBefore.rows);
    expect(await contactDocs('AB-ann')).toHaveLength(1);
  });

  it('makes a new document version when a card changes, and refuses an older version', async () => {
    const changed = { ...ann(), organization: 'Acme Holdings', version: 3, change_token: 'tok-3' };
    expect(await syncContacts(gw, [changed])).toMatchObject({ upserts: 1, skipped: 0, conflicts: 0, since_token_next: 'tok-3' });
    const docs = await contactDocs('AB-ann');
    expect(docs.map((d) => [d.version_number, d.is_active_version])).toEqual([
      [1, false],
      [2, true],
    ]);
    expect(docs[1].text).toContain('Organization: Acme Holdings');

    const stale = { ...ann(), organization: 'Old Name', version: 2 };
    expect(await syncContacts(gw, [stale])).toMatchObject({ accepted: 1, upserts: 0, conflicts: 1 });
    const hit = (await gw.request('GET', '/search/people?q=ann%20lee')).json().results[0];
    expect(hit.organization).toBe('Acme Holdings');
  });

  it('deletes a card (soft delete of its document) and re-adds it later', async () => {
    const before = await livePeopleCount(gw);
    const del = await syncContacts(gw, [{ ...bob(), deleted: true, version: 2 }]);
    expect(del).toMatchObject({ accepted: 1, deletes: 1, upserts: 0, skipped: 0, conflicts: 0 });
    expect((await contactDocs('AB-bob')).every((d) => !d.is_active_version)).toBe(true);
    expect(await livePeopleCount(gw)).toBe(before - 1);
    expect((await gw.request('GET', '/search/people?q=bob')).json().results).toEqual([]);

    // Deleting again, or deleting a card never seen, changes nothing.
    expect(await syncContacts(gw, [{ ...bob(), deleted: true, version: 2 }, card({ external_id: 'never-seen', deleted: true })])).toMatchObject({
      deletes: 0,
      skipped: 2,
    });

    const readd = await syncContacts(gw, [{ ...bob(), version: 3 }]);
    expect(readd).toMatchObject({ upserts: 1, deletes: 0 });
    const docs = await contactDocs('AB-bob');
    expect(docs.filter((d) => d.is_active_version)).toHaveLength(1);
    const hits = (await gw.request('GET', '/search/people?q=bob')).json().results;
    expect(hits.map((h: any) => [h.display_name, h.emails])).toEqual([['Bob Stone', ['bob@stone.example']]]);
    expect(await livePeopleCount(gw)).toBe(before);
  });

  it('keeps a deleted card’s person when other sources know it', async () => {
    await syncContacts(gw, [card({ external_id: 'eve', display_name: 'Eve', emails: [{ value: 'eve@x.example' }] })]);
    const mail = await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'eve-mail-1',
      content: { data: 'Lunch on Friday?' },
      people: [{ identifier: 'eve@x.example', identifier_type: 'email', role: 'sender' }],
    });
    expect(mail.statusCode).toBe(202);
    const del = await syncContacts(gw, [card({ external_id: 'eve', display_name: 'Eve', emails: [{ value: 'eve@x.example' }], deleted: true })]);
    expect(del.deletes).toBe(1);
    const hits = (await gw.request('GET', '/search/people?q=eve%40x.example')).json().results;
    expect(hits).toHaveLength(1);
  });

  it('stores the change token per (source, device) and returns the request token when no card has one', async () => {
    await syncContacts(gw, [card({ change_token: 'dev2-a' })], { device_id: 'phone-2' });
    const empty = await syncContacts(gw, [], { device_id: 'phone-2', since_token: 'dev2-b' });
    expect(empty).toEqual({ accepted: 0, upserts: 0, deletes: 0, conflicts: 0, skipped: 0, blocked: [], since_token_next: 'dev2-b' });
    const noTok = await syncContacts(gw, [card()], { device_id: 'phone-3', since_token: 'given' });
    expect(noTok.since_token_next).toBe('given');

    const t2 = (await gw.request('GET', '/catalog/contacts/change-token?device_id=phone-2')).json();
    expect(t2).toMatchObject({ source: 'host_contacts', device_id: 'phone-2', change_token: 'dev2-b' });
    // A later sync without any token keeps the stored one.
    await syncContacts(gw, [card()], { device_id: 'phone-2' });
    const kept = (await gw.request('GET', '/catalog/contacts/change-token?device_id=phone-2')).json();
    expect(kept.change_token).toBe('dev2-b');
    const other = (await gw.request('GET', '/catalog/contacts/change-token?device_id=phone-2&source=other')).json();
    expect(other.change_token).toBeNull();
  });

  it('rejects invalid requests with 422 and keeps nothing of them', async () => {
    const noDevice = await gw.request('POST', '/catalog/contacts/ingest', { batch_id: 'x', people: [] });
    expect(noDevice.statusCode).toBe(422);
    expect(noDevice.json().detail[0].loc).toEqual(['body', 'device_id']);
    const noExternal = await gw.request('POST', '/catalog/contacts/ingest', {
      device_id: 'd',
      batch_id: 'x',
      people: [{ display_name: 'X' }],
    });
    expect(noExternal.statusCode).toBe(422);
  });
});

describe('contact ingest authentication', () => {
  let guarded: TestGateway;
  beforeAll(async () => {
    guarded = await startTestGateway({ config: { catalogToken: 'catalog-secret-42' } });
  });
  afterAll(async () => {
    await guarded?.close();
  });
  const body = { device_id: 'd', batch_id: 'b', people: [] };

  it('takes the gateway token (spec 4.4, 5) and the catalog token when one is configured', async () => {
    const missing = await guarded.request('POST', '/catalog/contacts/ingest', body, { authorization: '' });
    expect(missing.statusCode).toBe(401);
    expect(missing.json()).toEqual({ detail: 'Missing token' });
    for (const token of [TEST_TOKEN, 'catalog-secret-42']) {
      const auth = { authorization: `Bearer ${token}` };
      expect((await guarded.request('POST', '/catalog/contacts/ingest', body, auth)).statusCode, token).toBe(200);
      expect((await guarded.request('GET', '/catalog/contacts/change-token?device_id=d', undefined, auth)).statusCode, token).toBe(200);
      expect((await guarded.request('GET', '/catalog/contacts/export?full=true', undefined, auth)).statusCode, token).toBe(200);
    }
    const wrong = await guarded.request('GET', '/catalog/contacts/export', undefined, { authorization: 'Bearer nope' });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json()).toEqual({ detail: 'Invalid token' });
    // The other catalog routes keep the catalog token only.
    const catalogRoute = await guarded.request('POST', '/v1/catalog/documents', {}, {
      authorization: `Bearer ${TEST_TOKEN}`,
    });
    expect(catalogRoute.statusCode).toBe(403);
  });

  it('falls back to the gateway token when no catalog token is configured', async () => {
    const missing = await gw.request('POST', '/catalog/contacts/ingest', body, { authorization: '' });
    expect(missing.statusCode).toBe(401);
    const wrong = await gw.request('POST', '/catalog/contacts/ingest', body, { authorization: 'Bearer nope' });
    expect(wrong.statusCode).toBe(403);
  });
});
