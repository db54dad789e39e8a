/**
 * A block holds on every path that creates or links a person (issue 33 item 2): after
 * `forget {person_id | identifier | source_type, block: true}`, contact sync (POST /catalog/contacts/ingest),
 * v2 person envelopes (single and batch) and documents answer `skipped` with the reason and store
 * nothing of the person; deleting a card stays possible.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;

const card = (externalId: string, name: string, emails: string[], phones: string[] = [], extra: Record<string, unknown> = {}) => ({
  external_id: externalId,
  display_name: name,
  emails: emails.map((value) => ({ value })),
  phones: phones.map((value) => ({ value })),
  ...extra,
});

const sync = (people: unknown[], batch = Math.random().toString(36)) =>
  gw.request('POST', '/catalog/contacts/ingest', { source: 'host_contacts', device_id: 'phone-1', batch_id: batch, since_token: null, people });

const personEnvelope = (externalId: string, identifiers: { kind: string; value_raw: string }[], sourceType = 'contacts') => ({
  schema_version: '2.0',
  kind: 'person',
  source: { source_type: sourceType, source_provider: 'carddav' },
  payload: { external_id: externalId, display_name: 'Viktor Vane', identifiers },
});

async function peopleCount(value: string): Promise<number> {
  const r = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM person_identifiers WHERE value_canonical = $1', [value]);
  return r.rows[0].n;
}
async function peopleSearch(q: string): Promise<unknown[]> {
  return (await gw.request('GET', `/search/people?q=${encodeURIComponent(q)}`)).json().results;
}

beforeAll(async () => {
  gw = await startTestGateway();
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

describe('after forget {person_id, block: true}', () => {
  it('contact sync, v2 person envelopes and documents keep the person out, with the reason', async () => {
    expect((await sync([card('c-viktor', 'Viktor Vane', ['viktor@vane.example'], ['+1 415 555 0177'])])).json()).toMatchObject({ upserts: 1 });
    const viktor = ((await peopleSearch('Viktor')) as { person_id: string }[])[0].person_id;
    const forgot = await gw.request('POST', '/v1/forget', { person_id: viktor, block: true });
    expect(forgot.json()).toMatchObject({ removed: { people: 1, identifiers: 2 }, blocked: 2 });

    // The phone's contact sync sends the card again.
    const again = await sync([card('c-viktor', 'Viktor Vane', ['viktor@vane.example'], ['(415) 555-0177'])]);
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ accepted: 1, upserts: 0, skipped: 1, blocked: [{ index: 0, external_id: 'c-viktor', skipped: 'blocked_identifier' }] });
    // A card of his under another id, with one blocked identifier and one new one: the same person.
    const other = await sync([card('c-new', 'V. Vane', ['vv@elsewhere.example'], ['+14155550177']), card('c-ok', 'Uma Unrelated', ['uma@ok.example'])]);
    expect(other.json()).toMatchObject({ accepted: 2, upserts: 1, skipped: 1, blocked: [{ index: 0, external_id: 'c-new', skipped: 'blocked_identifier' }] });

    const v2 = await gw.request('POST', '/v2/ingest/person', personEnvelope('p-viktor', [{ kind: 'email', value_raw: 'Viktor@Vane.example' }]));
    expect(v2.statusCode).toBe(200);
    expect(v2.json()).toMatchObject({ person_id: null, status: 'skipped', skipped: 'blocked_identifier', deleted: false });
    const batch = await gw.request('POST', '/v2/ingest:batch', [personEnvelope('p-viktor-2', [{ kind: 'phone', value_raw: '415 555 0177' }])]);
    expect(batch.json().results[0]).toMatchObject({ status_code: 200, person: { status: 'skipped', skipped: 'blocked_identifier' } });

    const doc = await gw.request('POST', '/v1/ingest', {
      source_type: 'sms',
      source_id: 'sms-viktor',
      content: { data: 'Call me back' },
      content_timestamp: '2026-11-01T10:00:00Z',
      people: [{ identifier: '+1 (415) 555-0177', identifier_type: 'phone', role: 'sender' }],
    });
    expect(doc.json()).toMatchObject({ status: 'skipped', skipped: 'blocked_identifier' });

    for (const id of ['viktor@vane.example', '+14155550177', 'vv@elsewhere.example']) expect(await peopleCount(id)).toBe(0);
    expect(await peopleSearch('Vane')).toEqual([]);
    expect((await peopleSearch('Uma')).length).toBe(1);
    const contacts = await gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE source_type = 'contact' AND text LIKE '%Vane%'`);
    expect(contacts.rows[0].n).toBe(0);
  });

  it('still deletes a card', async () => {
    const del = await sync([card('c-viktor', 'Viktor Vane', ['viktor@vane.example'], [], { deleted: true, version: 5 })]);
    expect(del.statusCode).toBe(200);
    expect(del.json().blocked).toEqual([]);
  });
});

describe('after forget {identifier, block: true} and {source_type, block: true}', () => {
  it('a card with the blocked phone is kept out; a blocked source keeps every card out', async () => {
    expect((await sync([card('c-wren', 'Wren Wilde', ['wren@wilde.example'], ['+1 415 555 0166'])])).json().upserts).toBe(1);
    const res = await gw.request('POST', '/v1/forget', { identifier: '+1 415 555 0166', block: true });
    expect(res.statusCode).toBe(200);
    const again = await sync([card('c-wren-2', 'Wren Wilde', ['wren.new@wilde.example'], ['415-555-0166'])]);
    expect(again.json()).toMatchObject({ upserts: 0, blocked: [{ external_id: 'c-wren-2', skipped: 'blocked_identifier' }] });
    expect(await peopleCount('wren.new@wilde.example')).toBe(0);

    const v2 = await gw.request('POST', '/v2/ingest/person', personEnvelope('p-src', [{ kind: 'email', value_raw: 'x@src.example' }], 'chatapp'));
    expect(v2.json().status).toBe('upserted');
    await gw.request('POST', '/v1/forget', { source_type: 'contact', block: true });
    const cards = await sync([card('c-later', 'Later Person', ['later@cards.example'])]);
    expect(cards.json()).toMatchObject({ upserts: 0, blocked: [{ skipped: 'blocked_source' }] });
    await gw.request('POST', '/v1/forget', { source_type: 'chatapp', block: true });
    const blockedV2 = await gw.request('POST', '/v2/ingest/person', personEnvelope('p-src-2', [{ kind: 'email', value_raw: 'y@src.example' }], 'chatapp'));
    expect(blockedV2.json()).toMatchObject({ status: 'skipped', skipped: 'blocked_source' });
    expect(await peopleCount('later@cards.example')).toBe(0);
    expect(await peopleCount('y@src.example')).toBe(0);
  });
});
