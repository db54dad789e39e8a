import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { resolvePersonId } from '../../src/identity/merge.ts';
import { card, ingestMessage, livePeopleCount, personOfDoc, syncContacts } from './helpers.ts';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw?.close();
});

describe('merging people that share a phone or an email', () => {
  it('merges the person of an email and the person of a phone when one contact card names both', async () => {
    const mail = await ingestMessage(gw, 'Ann.Lee@Example.com', 'email', 'Ann Lee');
    const sms = await ingestMessage(gw, '(508) 410-9572', 'phone');
    const pEmail = await personOfDoc(gw, mail.doc_id);
    const pPhone = await personOfDoc(gw, sms.doc_id);
    expect(pEmail).not.toBe(pPhone);

    const counts = await syncContacts(gw, [
      card({ external_id: 'ann', display_name: 'Ann Lee', emails: [{ value: 'ann.lee@example.com' }], phones: [{ value: '+1 508-410-9572', label: 'Mobile' }] }),
    ]);
    expect(counts).toMatchObject({ accepted: 1, upserts: 1, conflicts: 0 });

    // Both message documents now point at one live person that holds both identifiers.
    const a = await personOfDoc(gw, mail.doc_id);
    const b = await personOfDoc(gw, sms.doc_id);
    expect(a).toBe(b);
    expect(a).toBe(pEmail); // the older person survives
    const person = (await gw.request('GET', `/v1/people/${pPhone}`)).json();
    expect(person.person_id).toBe(pEmail);
    expect(person.requested_id).toBe(pPhone);
    expect(person.merged_from).toContain(pPhone);
    expect(person.display_name).toBe('Ann Lee');
    expect(person.emails).toEqual(['ann.lee@example.com']);
    expect(person.phones).toEqual(['+15084109572']);
    expect(person.identifiers.find((i: any) => i.kind === 'phone').label).toBe('mobile');

    const merges = (await gw.request('GET', `/v1/people/merges?person_id=${pEmail}`)).json();
    expect(merges.total).toBe(1);
    expect(merges.merges[0]).toMatchObject({
      target_person_id: pEmail,
      source_person_id: pPhone,
      reason: 'shared_phone:+15084109572',
    });
  });

  it('merges on a shared email when a card adds an email another person owns', async () => {
    await syncContacts(gw, [card({ external_id: 'bob-work', display_name: 'Robert Diaz', phones: [{ value: '617-555-0143' }] })]);
    const mail = await ingestMessage(gw, 'bob@diaz.example', 'email', 'Bob');
    const pMail = await personOfDoc(gw, mail.doc_id);
    const before = await livePeopleCount(gw);

    await syncContacts(gw, [
      card({ external_id: 'bob-work', display_name: 'Robert Diaz', phones: [{ value: '617-555-0143' }], emails: [{ value: 'BOB@diaz.example' }], version: 2 }),
    ]);
    expect(await livePeopleCount(gw)).toBe(before - 1);
    const survivor = await personOfDoc(gw, mail.doc_id);
    expect(survivor).not.toBe(pMail);
    expect(await resolvePersonId(gw.db, pMail)).toBe(survivor);
    const merges = (await gw.request('GET', `/v1/people/merges?person_id=${survivor}`)).json();
    expect(merges.merges.map((m: any) => m.reason)).toContain('shared_email:bob@diaz.example');
    // Relationship edges follow the survivor too.
  });

  it('resolves chains of merges to the final survivor', async () => {
    const m1 = await ingestMessage(gw, 'carol@one.example', 'email');
    const m2 = await ingestMessage(gw, '+44 20 7946 0958', 'phone');
    const m3 = await ingestMessage(gw, 'carol@three.example', 'email');
    const [p1, p2, p3] = [await personOfDoc(gw, m1.doc_id), await personOfDoc(gw, m2.doc_id), await personOfDoc(gw, m3.doc_id)];
    // An edge on the third person, to see it move.
    await gw.db.query(
      `INSERT INTO relationship_edges (self_person_id, person_id, score, decay_bucket) VALUES ($1, $2, 5, 1)`,
      [p1, p3],
    );

    // p3 into p2 (card: phone + third email), then p2 into p1 (card: first email + phone).
    await syncContacts(gw, [card({ external_id: 'carol-a', display_name: 'Carol', phones: [{ value: '+442079460958' }], emails: [{ value: 'carol@three.example' }] })]);
    expect(await resolvePersonId(gw.db, p3)).toBe(p2);
    await syncContacts(gw, [card({ external_id: 'carol-b', display_name: 'Carol K', emails: [{ value: 'carol@one.example' }], phones: [{ value: '+44 20 7946 0958' }] })]);

    for (const p of [p1, p2, p3]) expect(await resolvePersonId(gw.db, p)).toBe(p1);
    const viaOld = (await gw.request('GET', `/v1/people/${p3}`)).json();
    expect(viaOld.person_id).toBe(p1);
    expect(viaOld.merged_from.sort()).toEqual([p2, p3].sort());
    expect(viaOld.emails.sort()).toEqual(['carol@one.example', 'carol@three.example']);
    expect(viaOld.sources.map((s: any) => s.external_id).sort()).toEqual(['carol-a', 'carol-b']);
    for (const m of [m1, m2, m3]) expect(await personOfDoc(gw, m.doc_id)).toBe(p1);
    // The self-loop edge p1 -> p3 is gone rather than turned into p1 -> p1.
    const edges = await gw.db.query('SELECT * FROM relationship_edges WHERE self_person_id = $1 OR person_id = $1', [p1]);
    expect(edges.rows).toEqual([]);
    const merges = (await gw.request('GET', `/v1/people/merges?person_id=${p1}`)).json();
    expect(merges.total).toBe(2);
  });

  it('moves relationship edges on both ends to the survivor', async () => {
    const self = await personOfDoc(gw, (await ingestMessage(gw, 'me@self.example', 'email')).doc_id);
    const a = await personOfDoc(gw, (await ingestMessage(gw, 'dan@x.example', 'email')).doc_id);
    const b = await personOfDoc(gw, (await ingestMessage(gw, '+1 212 555 0199', 'phone')).doc_id);
    await gw.db.query(
      `INSERT INTO relationship_edges (self_person_id, person_id, score, decay_bucket) VALUES ($1, $2, 3, 2), ($1, $3, 7, 1),
              ($3, $1, 4, 1)`,
      [self, a, b],
    );
    await syncContacts(gw, [card({ external_id: 'dan', display_name: 'Dan', emails: [{ value: 'dan@x.example' }], phones: [{ value: '212-555-0199' }] })]);
    const edges = await gw.db.query<{ self_person_id: string; person_id: string; score: number }>(
      'SELECT self_person_id, person_id, score FROM relationship_edges WHERE $1 IN (self_person_id, person_id) ORDER BY self_person_id = $1 DESC',
      [a],
    );
    expect(edges.rows).toEqual([
      { self_person_id: a, person_id: self, score: 4 },
      { self_person_id: self, person_id: a, score: 7 },
    ]);
  });

  it('links documents that arrive later with a merged identifier to the survivor', async () => {
    const later = await ingestMessage(gw, '508.410.9572', 'phone');
    const ann = (await gw.request('GET', '/search/people?q=ann%20lee')).json().results[0].person_id;
    expect(await personOfDoc(gw, later.doc_id)).toBe(ann);
  });

  it('creates one person when two ingests introduce the same new address at once', async () => {
    const before = await livePeopleCount(gw);
    const docs = await Promise.all(
      Array.from({ length: 6 }, (_, i) => ingestMessage(gw, 'Race@Same.example', 'email', undefined, `message number ${i}`)),
    );
    const persons = new Set(await Promise.all(docs.map((d) => personOfDoc(gw, d.doc_id))));
    expect(persons.size).toBe(1);
    expect(await livePeopleCount(gw)).toBe(before + 1);
  });

  it('ends with one person when several sources sync overlapping cards at the same time', async () => {
    const before = await livePeopleCount(gw);
    const cards = (source: string) => [
      card({ external_id: `${source}-h`, display_name: 'Hal', emails: [{ value: 'hal@par.example' }], phones: [{ value: '+1 303 555 0111' }] }),
      card({ external_id: `${source}-i`, display_name: 'Ivy', emails: [{ value: 'ivy@par.example' }] }),
    ];
    const results = await Promise.all(
      ['src-a', 'src-b', 'src-c', 'src-d'].map((source) => syncContacts(gw, cards(source), { source, device_id: source })),
    );
    for (const r of results) expect(r.conflicts).toBe(0);
    expect(await livePeopleCount(gw)).toBe(before + 2);
    const hal = (await gw.request('GET', '/search/people?q=hal%40par.example')).json().results;
    expect(hal).toHaveLength(1);
    expect(hal[0].phones).toEqual(['+13035550111']);
  });

  it('keeps the union of two cards that share a phone, and a later card version changes only its own part', async () => {
    const carol = card({
      external_id: 'carol',
      display_name: 'Carol Danvers',
      given_name: 'Carol',
      family_name: 'Danvers',
      organization: 'Starforce Inc',
      notes: 'Pilot',
      emails: [{ value: 'carol@starforce.example' }],
      phones: [{ value: '+1 508 201 7788' }],
    });
    const dave = card({
      external_id: 'dave',
      display_name: 'Dave Duplicate',
      organization: 'Dup Holdings',
      notes: 'Second card',
      nicknames: ['DD'],
      phones: [{ value: '(508) 201-7788' }],
      emails: [{ value: 'dave@dup.example' }],
    });
    await syncContacts(gw, [carol]);
    await syncContacts(gw, [dave]);

    const find = async (q: string) => (await gw.request('GET', `/search/people?q=${encodeURIComponent(q)}`)).json().results;
    const hits = await find('Danvers');
    expect(hits).toHaveLength(1);
    const id = hits[0].person_id;
    for (const q of ['Starforce', 'Dave Duplicate', 'DD', 'Dup Holdings', 'dave@dup.example', 'carol@starforce.example']) {
      const r = await find(q);
      expect(r.map((h: any) => h.person_id), q).toEqual([id]);
    }
    const person = (await gw.request('GET', `/v1/people/${id}`)).json();
    expect(person).toMatchObject({ display_name: 'Carol Danvers', given_name: 'Carol', family_name: 'Danvers', organization: 'Starforce Inc' });
    expect(person.nicknames.sort()).toEqual(['DD', 'Dave Duplicate']);
    expect(person.notes.split('\n').sort()).toEqual(['Pilot', 'Second card']);
    expect(person.emails.sort()).toEqual(['carol@starforce.example', 'dave@dup.example']);
    expect(person.phones).toEqual(['+15082017788']);
    const merges = (await gw.request('GET', `/v1/people/merges?person_id=${id}`)).json();
    expect(merges.merges.map((m: any) => m.reason)).toContain('shared_phone:+15082017788');

    // Dave's card changes: only what it gave moves; Carol's card's fields stay.
    await syncContacts(gw, [{ ...dave, display_name: 'David Dupont', nicknames: [], notes: 'Renamed', version: 2 }]);
    const after = (await gw.request('GET', `/v1/people/${id}`)).json();
    expect(after).toMatchObject({ display_name: 'Carol Danvers', organization: 'Starforce Inc', given_name: 'Carol' });
    expect(after.nicknames).toEqual(['David Dupont']);
    expect(after.notes.split('\n').sort()).toEqual(['Pilot', 'Renamed']);
    expect(await find('Dave Duplicate')).toEqual([]);
    // Carol's card changes its organisation: the person follows, Dave's part stays.
    await syncContacts(gw, [{ ...carol, organization: 'Starforce Corp', version: 2 }]);
    const last = (await gw.request('GET', `/v1/people/${id}`)).json();
    expect(last).toMatchObject({ display_name: 'Carol Danvers', organization: 'Starforce Corp' });
    expect(last.nicknames).toEqual(['David Dupont']);
  });

  it('answers 404 for an unknown person and 422 for a malformed id', async () => {
    expect((await gw.request('GET', '/v1/people/00000000-0000-4000-8000-000000000000')).statusCode).toBe(404);
    expect((await gw.request('GET', '/v1/people/not-a-uuid')).statusCode).toBe(422);
  });
});
