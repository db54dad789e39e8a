/**
 * The collectors' noise score and the relationship job's SQL noise rule decide alike: one inbound email
 * a sender, over every noise word and some look-alikes; a sender gets an edge exactly when the collectors
 * would not call the mail noise, and no sender of a noise word gets one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isNoiseEmail } from '../../src/mail/analyze.ts';
import { recomputeRelationships } from '../../src/relationships/recompute.ts';
import { BULK_SENDER_WORDS, PROMO_SUBJECT_WORDS } from '../../src/mail/noise.ts';
import { backend } from '../helpers/db.ts';
import { ingestBody, ME_P, type Who } from './fixture.ts';
import { startRelGateway, type RelGateway } from './helpers.ts';

const NOW = new Date(Math.floor(Date.now() / 60_000) * 60_000);

interface Sample {
  subject: string;
  address: string;
}

const samples: Sample[] = [
  ...PROMO_SUBJECT_WORDS.map((w, i) => ({ subject: `Our ${w.toUpperCase()}, this week`, address: `promo${i}@people.example` })),
  ...BULK_SENDER_WORDS.map((w, i) => ({ subject: 'Your code', address: `team.${w}${i}@service.example` })),
  // Look-alikes that are not noise: a noise word inside another word, or a neighbour of one.
  { subject: 'An ideal plan for Tuesday', address: 'ideal@people.example' },
  { subject: 'Wholesaler meeting, resubscribed', address: 'wholesale@people.example' },
  { subject: 'Salesforce notes and promotions', address: 'crm@people.example' },
  { subject: 'Lunch?', address: 'friend@people.example' },
];

let gw: RelGateway;
let meId: string;
const edgeOf = new Map<string, boolean>();

beforeAll(async () => {
  gw = await startRelGateway();
  let n = 0;
  for (const s of samples) {
    const from: Who = { id: s.address, type: 'email', name: 'Someone' };
    const body = ingestBody({ key: `noise-${n++}`, source_type: 'email', hoursAgo: 2, from, to: [ME_P], subject: s.subject }, NOW);
    const res = await gw.request('POST', '/v1/ingest', body);
    expect(res.statusCode, res.body).toBe(202);
  }
  const ids = async (kind: string, value: string) =>
    (await gw.db.query<{ person_id: string }>('SELECT person_id FROM person_identifiers WHERE kind = $1 AND value_canonical = $2', [kind, value]))
      .rows[0].person_id;
  meId = await ids('phone', ME_P.id);
  await recomputeRelationships(gw.db, { now: NOW, selfPersonId: meId });
  const edges = new Set(
    (await gw.db.query<{ person_id: string }>('SELECT person_id FROM relationship_edges WHERE self_person_id = $1', [meId])).rows.map((r) => r.person_id),
  );
  for (const s of samples) edgeOf.set(s.address, edges.has(await ids('email', s.address)));
}, 120_000);
afterAll(async () => {
  await gw?.close();
});

describe(`noise words on ${backend}`, () => {
  it('gives an edge exactly to the senders whose mail the collectors do not call noise', () => {
    const decided = samples.map((s) => ({ ...s, edge: edgeOf.get(s.address), noise: isNoiseEmail({ subject: s.subject, from: [s.address] }) }));
    for (const d of decided) expect(d.edge, `${d.subject} from ${d.address}`).toBe(!d.noise);
  });

  it('counts no sender of a noise word, and every look-alike', () => {
    const counted = samples.filter((s) => edgeOf.get(s.address)).map((s) => s.address);
    expect(counted.sort()).toEqual(['crm@people.example', 'friend@people.example', 'ideal@people.example', 'wholesale@people.example']);
  });
});
