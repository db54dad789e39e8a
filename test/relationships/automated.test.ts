/**
 * Machines among the people (issue 35, item 6): a bank's statements (Auto-Submitted, Precedence: bulk) and a school
 * office that writes every week but was never written to are marked automated, with the reason, and kept out of the
 * relationship ranking; include_automated=true brings them back. A correspondent who was answered stays ranked.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recomputeRelationships } from '../../src/relationships/recompute.ts';
import { backend } from '../helpers/db.ts';
import { ingestBody, ME_P, type Msg, type Who } from './fixture.ts';
import { startRelGateway, type RelGateway } from './helpers.ts';

const NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000);
const FRIEND: Who = { id: 'ines@people.example', type: 'email', name: 'Ines Duarte' };
const BANK: Who = { id: 'statements@harbourbank.example', type: 'email', name: 'Harbour Bank (statements)' };
const LISTS: Who = { id: 'updates@club.example', type: 'email', name: 'Rowing Club' };
const OLD_FRIEND: Who = { id: 'tomas@people.example', type: 'email', name: 'Tomas Berg' };
const SCHOOL: Who = { id: 'office@stannes.example', type: 'email', name: "St Anne's Primary Office" };

const history: Msg[] = [
  { key: 'f1', source_type: 'email', hoursAgo: 200, from: FRIEND, to: [ME_P], thread: 'f', subject: 'Lisbon?' },
  { key: 'f2', source_type: 'email', hoursAgo: 190, from: ME_P, to: [FRIEND], thread: 'f', subject: 'Re: Lisbon?' },
  { key: 'f3', source_type: 'email', hoursAgo: 100, from: FRIEND, to: [ME_P], thread: 'f', subject: 'Re: Lisbon?' },
  ...[1, 2, 3].map((i): Msg => ({
    key: `b${i}`, source_type: 'email', hoursAgo: 24 * 7 * i, from: BANK, to: [ME_P], subject: `Your statement ${i}`,
    metadata: i === 1 ? { auto_submitted: 'auto-generated' } : { headers: { 'Auto-Submitted': 'auto-generated' } },
  })),
  { key: 'l1', source_type: 'email', hoursAgo: 30, from: LISTS, to: [ME_P], subject: 'Regatta results', metadata: { precedence: 'bulk' } },
  // Written to six times half a year ago, one answer since: gone quiet. Ines was written to once: not.
  ...[1, 2, 3, 4, 5, 6].map((i): Msg => ({ key: `o${i}`, source_type: 'email', hoursAgo: 24 * (180 + i), from: ME_P, to: [OLD_FRIEND], thread: 'o', subject: `Tuesday ${i}` })),
  { key: 'o7', source_type: 'email', hoursAgo: 24 * 150, from: OLD_FRIEND, to: [ME_P], thread: 'o', subject: 'Re: Tuesday' },
  ...[1, 2, 3, 4].map((i): Msg => ({ key: `s${i}`, source_type: 'email', hoursAgo: 24 * 7 * i + 3, from: SCHOOL, to: [ME_P], subject: `Week ${i} at school` })),
];

let gw: RelGateway;
let meId: string;

beforeAll(async () => {
  gw = await startRelGateway();
  for (const m of history) {
    const res = await gw.request('POST', '/v1/ingest', ingestBody(m, NOW));
    expect(res.statusCode, res.body).toBe(202);
  }
  meId = (
    await gw.db.query<{ person_id: string }>("SELECT person_id FROM person_identifiers WHERE kind = 'phone' AND value_canonical = $1", [ME_P.id])
  ).rows[0].person_id;
  await recomputeRelationships(gw.db, { now: NOW, selfPersonId: meId });
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

async function top(query: string, window = '365d') {
  const res = await gw.request('GET', `/v1/crm/relationships/top?self_person_id=${meId}&window=${window}${query}`);
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as { total_count: number; relationships: { display_name: string; features: { automated?: string[] } }[] };
}

describe(`automated senders on ${backend}`, () => {
  it('keeps them out of the ranking by default', async () => {
    const r = await top('');
    expect(r.relationships.map((e) => e.display_name).sort()).toEqual(['Ines Duarte', 'Tomas Berg']);
    expect(r.total_count).toBe(2);
  });

  it('brings them back, marked with the reason, when asked', async () => {
    const r = await top('&include_automated=true');
    const byName = new Map(r.relationships.map((e) => [e.display_name, e.features.automated ?? []]));
    expect([...byName.keys()].sort()).toEqual(['Harbour Bank (statements)', 'Ines Duarte', 'Rowing Club', "St Anne's Primary Office", 'Tomas Berg']);
    expect(byName.get('Ines Duarte')).toEqual([]);
    expect(byName.get('Harbour Bank (statements)')).toContain('automated_headers');
    expect(byName.get('Rowing Club')).toEqual(['automated_headers']);
    expect(byName.get("St Anne's Primary Office")).toEqual(['one_way']);
  });

  it('"gone quiet" lists the people written to often and not for a while', async () => {
    const r = await top('&gone_quiet=true', '3650d');
    expect(r.relationships.map((e) => e.display_name)).toEqual(['Tomas Berg']);
    expect(r.relationships[0].features).toMatchObject({ outbound_total: 6 });
  });

  it('refuses a malformed include_automated', async () => {
    const res = await gw.request('GET', `/v1/crm/relationships/top?include_automated=perhaps`);
    expect(res.statusCode).toBe(422);
  });
});
