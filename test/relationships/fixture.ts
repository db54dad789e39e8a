/**
 * A synthetic message history, ingested through the public API, with every expected feature
 * worked out by hand (see EXPECTED). Times are hours before NOW.
 *
 *  me      phone +15084109501 (chat, sms) and me@example.com (email; merged into the phone person,
 *          links moved as the people merge does)
 *  alice   phone +15084109502 (chat); alice@example.com (email) merged into alice.l@work.example,
 *          which is merged into the phone person (a chain; links NOT moved, so resolution must
 *          follow merged_into)
 *  bob     phone +15084109503: direct sms + a group chat with alice
 *  carol   email, one inbound mail exactly 100 days ago
 *  dan     sms, one outbound message 200 days ago
 *  eve     sms, one inbound message with an attachment 6 days ago, never answered
 *  frank   sms: a message re-versioned to 4 days ago (superseded version 2 days ago) and a failed
 *          document 12 hours ago
 *  news    newsletter (List-Unsubscribe), noreply@service.example (written to once), deals@shop2
 *          (one noise mail, one plain mail, never written to): no edges
 */
import { expect } from 'vitest';
import type { Database } from '../../src/db/types.ts';
import type { TestGateway } from '../helpers/gateway.ts';

export const ME_PHONE = '+15084109571';
export const ME_EMAIL = 'me@example.com';
export const ALICE_PHONE = '+15084109572';
export const ALICE_EMAIL = 'alice@example.com';
export const ALICE_WORK = 'alice.l@work.example';
export const BOB_PHONE = '+15084109573';
export const CAROL_EMAIL = 'carol@example.com';
export const DAN_PHONE = '+15084109574';
export const EVE_PHONE = '+15084109575';
export const FRANK_PHONE = '+15084109576';

export type Who = { id: string; type: 'phone' | 'email'; name?: string };
export const ME_P: Who = { id: ME_PHONE, type: 'phone', name: 'Me Myself' };
const ME_E: Who = { id: ME_EMAIL, type: 'email', name: 'Me Myself' };
const ALICE_P: Who = { id: ALICE_PHONE, type: 'phone', name: 'Alice Liddell' };
const ALICE_E: Who = { id: ALICE_EMAIL, type: 'email', name: 'Alice Liddell' };
const BOB: Who = { id: BOB_PHONE, type: 'phone', name: 'Bob Stone' };
const CAROL: Who = { id: CAROL_EMAIL, type: 'email', name: 'Carol Danvers' };
const DAN: Who = { id: DAN_PHONE, type: 'phone', name: 'Dan Brown' };
export const EVE: Who = { id: EVE_PHONE, type: 'phone', name: 'Eve Moneypenny' };
const FRANK: Who = { id: FRANK_PHONE, type: 'phone', name: 'Frank Castle' };
const NEWS: Who = { id: 'news@shop.example', type: 'email', name: 'Shop News' };
const NOREPLY: Who = { id: 'noreply@service.example', type: 'email', name: 'Service' };
const DEALS: Who = { id: 'hello@shop2.example', type: 'email', name: 'Shop Two' };

export interface Msg {
  key: string;
  source_type: 'chatapp' | 'sms' | 'email';
  hoursAgo: number;
  from: Who;
  to: Who[];
  thread?: string;
  attachments?: number;
  subject?: string;
  metadata?: Record<string, unknown>;
  text?: string;
}

const isMe = (w: Who) => w === ME_P || w === ME_E;

export function ingestBody(m: Msg, now: Date): Record<string, unknown> {
  const ts = new Date(now.getTime() - m.hoursAgo * 3600_000).toISOString();
  const fromMe = isMe(m.from);
  const person = (w: Who, role: string) => ({
    identifier: w.id,
    identifier_type: w.type,
    role,
    display_name: w.name,
    ...(isMe(w) ? { metadata: { self: true } } : {}),
  });
  const metadata: Record<string, unknown> = { ...(m.metadata ?? {}) };
  if (m.source_type !== 'email') metadata.message = { is_from_me: fromMe, direction: fromMe ? 'outgoing' : 'incoming' };
  if (m.subject) metadata.subject = m.subject;
  if (m.attachments) {
    metadata.has_attachments = true;
    metadata.attachment_count = m.attachments;
  }
  return {
    source_type: m.source_type,
    source_id: `${m.source_type}:${m.key}`,
    title: m.subject ?? null,
    content: { mime_type: 'text/plain', data: m.text ?? `message ${m.key}` },
    content_timestamp: ts,
    content_timestamp_type: fromMe ? 'sent' : 'received',
    metadata,
    people: [person(m.from, 'sender'), ...m.to.map((w) => person(w, 'recipient'))],
    ...(m.thread ? { thread: { external_id: m.thread, source_type: m.source_type } } : {}),
  };
}

export const HISTORY: Msg[] = [
  // alice, direct chat (2 persons): replies 3600 s (a2 -> a3) and 1800 s (a5 -> a6)
  { key: 'a1', source_type: 'chatapp', hoursAgo: 50, from: ALICE_P, to: [ME_P], thread: 'chat-alice', attachments: 2 },
  { key: 'a2', source_type: 'chatapp', hoursAgo: 49, from: ALICE_P, to: [ME_P], thread: 'chat-alice' },
  { key: 'a3', source_type: 'chatapp', hoursAgo: 48, from: ME_P, to: [ALICE_P], thread: 'chat-alice' },
  { key: 'a4', source_type: 'chatapp', hoursAgo: 47, from: ME_P, to: [ALICE_P], thread: 'chat-alice' },
  { key: 'a5', source_type: 'chatapp', hoursAgo: 30, from: ALICE_P, to: [ME_P], thread: 'chat-alice' },
  { key: 'a6', source_type: 'chatapp', hoursAgo: 29.5, from: ME_P, to: [ALICE_P], thread: 'chat-alice' },
  // alice, email thread (merged identities on both sides): reply after 24 h
  { key: 'e1', source_type: 'email', hoursAgo: 240, from: ME_E, to: [ALICE_E], thread: 'mail-alice', subject: 'Photos', attachments: 1 },
  { key: 'e2', source_type: 'email', hoursAgo: 216, from: ALICE_E, to: [ME_E], thread: 'mail-alice', subject: 'Re: Photos' },
  { key: 'e3', source_type: 'email', hoursAgo: 192, from: ME_E, to: [ALICE_E], thread: 'mail-alice', subject: 'Re: Photos' },
  // group chat (me, alice, bob): g1 -> g2 counts for alice (other direction within 48 h); bob's
  // g3 has no outbound within 48 h so neither g3 nor g2 counts in bob's messages_30d
  { key: 'g4', source_type: 'chatapp', hoursAgo: 1440, from: ALICE_P, to: [ME_P, BOB], thread: 'chat-group' },
  { key: 'g3', source_type: 'chatapp', hoursAgo: 480, from: BOB, to: [ME_P, ALICE_P], thread: 'chat-group' },
  { key: 'g1', source_type: 'chatapp', hoursAgo: 120, from: ALICE_P, to: [ME_P, BOB], thread: 'chat-group' },
  { key: 'g2', source_type: 'chatapp', hoursAgo: 119, from: ME_P, to: [ALICE_P, BOB], thread: 'chat-group' },
  // bob, direct sms: reply after 1800 s
  { key: 'b1', source_type: 'sms', hoursAgo: 72, from: BOB, to: [ME_P], thread: 'sms-bob' },
  { key: 'b2', source_type: 'sms', hoursAgo: 71.5, from: ME_P, to: [BOB], thread: 'sms-bob' },
  // carol: one inbound mail exactly 100 days ago
  { key: 'c1', source_type: 'email', hoursAgo: 2400, from: CAROL, to: [ME_E], thread: 'mail-carol', subject: 'Long time' },
  // dan: one outbound sms 200 days ago
  { key: 'd1', source_type: 'sms', hoursAgo: 4800, from: ME_P, to: [DAN], thread: 'sms-dan' },
  // eve: inbound sms with one attachment, never answered
  { key: 'v1', source_type: 'sms', hoursAgo: 144, from: EVE, to: [ME_P], thread: 'sms-eve', attachments: 1 },
  // frank: f1 is re-versioned to 96 h ago by the test; f2 is marked failed
  { key: 'f1', source_type: 'sms', hoursAgo: 48, from: FRANK, to: [ME_P], thread: 'sms-frank' },
  { key: 'f2', source_type: 'sms', hoursAgo: 12, from: FRANK, to: [ME_P], thread: 'sms-frank' },
  // noise
  { key: 'n1', source_type: 'email', hoursAgo: 5, from: NEWS, to: [ME_E], subject: 'Spring collection', metadata: { list_unsubscribe: '<mailto:u@shop.example>' } },
  { key: 'n2', source_type: 'email', hoursAgo: 29, from: NEWS, to: [ME_E], subject: 'This week', metadata: { headers: { 'List-Unsubscribe': '<https://shop.example/u>' } } },
  { key: 'r1', source_type: 'email', hoursAgo: 6, from: NOREPLY, to: [ME_E], subject: 'Your code' },
  { key: 'r2', source_type: 'email', hoursAgo: 5.5, from: ME_E, to: [NOREPLY], subject: 'Re: Your code' },
  { key: 's1', source_type: 'email', hoursAgo: 7, from: DEALS, to: [ME_E], subject: 'Big sale today', metadata: { list_unsubscribe: '<mailto:x@shop2.example>' } },
  { key: 's2', source_type: 'email', hoursAgo: 8, from: DEALS, to: [ME_E], subject: 'Your account' },
];

export interface Expected {
  days_since_last_message: number;
  messages_30d: number;
  distinct_threads_90d: number;
  attachments_30d: number;
  avg_reply_latency_seconds: number | null;
  decay_bucket: number;
  last_hours_ago: number;
  inbound_30d: number;
  outbound_30d: number;
}

export const EXPECTED: Record<'alice' | 'bob' | 'carol' | 'dan' | 'eve' | 'frank', Expected> = {
  // 29.5 h = 1.229 days; 11 of 12 events in 30 d (g4 is 60 days old); a1 (2) + e1 (1) attachments;
  // threads chat-alice, mail-alice, chat-group; replies 3600, 1800, 86400, 3600 -> 23850
  alice: { days_since_last_message: 1.23, messages_30d: 11, distinct_threads_90d: 3, attachments_30d: 3, avg_reply_latency_seconds: 23850, decay_bucket: 0, last_hours_ago: 29.5, inbound_30d: 5, outbound_30d: 6 },
  // 71.5 h = 2.979 days (floor 2 -> bucket 1); b1, b2 count, g2/g3 do not (group rule);
  // replies 1800 (sms) and 480 h - 119 h = 1299600 (group) -> 650700
  bob: { days_since_last_message: 2.98, messages_30d: 2, distinct_threads_90d: 2, attachments_30d: 0, avg_reply_latency_seconds: 650700, decay_bucket: 1, last_hours_ago: 71.5, inbound_30d: 1, outbound_30d: 1 },
  carol: { days_since_last_message: 100, messages_30d: 0, distinct_threads_90d: 0, attachments_30d: 0, avg_reply_latency_seconds: null, decay_bucket: 4, last_hours_ago: 2400, inbound_30d: 0, outbound_30d: 0 },
  dan: { days_since_last_message: 200, messages_30d: 0, distinct_threads_90d: 0, attachments_30d: 0, avg_reply_latency_seconds: null, decay_bucket: 5, last_hours_ago: 4800, inbound_30d: 0, outbound_30d: 0 },
  eve: { days_since_last_message: 6, messages_30d: 1, distinct_threads_90d: 1, attachments_30d: 1, avg_reply_latency_seconds: null, decay_bucket: 1, last_hours_ago: 144, inbound_30d: 1, outbound_30d: 0 },
  frank: { days_since_last_message: 4, messages_30d: 1, distinct_threads_90d: 1, attachments_30d: 0, avg_reply_latency_seconds: null, decay_bucket: 1, last_hours_ago: 96, inbound_30d: 1, outbound_30d: 0 },
};

export interface Loaded {
  now: Date;
  ids: Record<string, string>;
}

async function personOf(db: Database, kind: string, value: string): Promise<string> {
  const r = await db.query<{ person_id: string }>(
    'SELECT person_id FROM person_identifiers WHERE kind = $1 AND value_canonical = $2',
    [kind, value],
  );
  expect(r.rows).toHaveLength(1);
  return r.rows[0].person_id;
}

/** Ingests HISTORY, re-versions f1, fails f2 and merges identities; returns the person ids. */
export async function loadHistory(gw: TestGateway, now: Date): Promise<Loaded> {
  const docIds: Record<string, string> = {};
  for (const m of HISTORY) {
    const res = await gw.request('POST', '/v1/ingest', ingestBody(m, now));
    expect(res.statusCode, res.body).toBe(202);
    docIds[m.key] = res.json().doc_id;
  }
  // f1 gets a new version, dated 96 h ago: only that version may count.
  const f1 = HISTORY.find((m) => m.key === 'f1')!;
  const again = await gw.request('POST', '/v1/ingest', ingestBody({ ...f1, hoursAgo: 96, text: 'message f1, edited' }, now));
  expect(again.statusCode, again.body).toBe(202);
  expect(again.json().version_number).toBe(2);
  // f2 failed processing.
  await gw.db.query(`UPDATE documents SET status = 'failed' WHERE doc_id = $1`, [docIds.f2]);

  const db = gw.db;
  const ids: Record<string, string> = {
    me: await personOf(db, 'phone', ME_PHONE),
    meEmail: await personOf(db, 'email', ME_EMAIL),
    alice: await personOf(db, 'phone', ALICE_PHONE),
    aliceEmail: await personOf(db, 'email', ALICE_EMAIL),
    bob: await personOf(db, 'phone', BOB_PHONE),
    carol: await personOf(db, 'email', CAROL_EMAIL),
    dan: await personOf(db, 'phone', DAN_PHONE),
    eve: await personOf(db, 'phone', EVE_PHONE),
    frank: await personOf(db, 'phone', FRANK_PHONE),
    news: await personOf(db, 'email', 'news@shop.example'),
    noreply: await personOf(db, 'email', 'noreply@service.example'),
    deals: await personOf(db, 'email', 'hello@shop2.example'),
  };
  // The self merge, as the people merge does it: links and identifiers move to the survivor.
  await db.query('UPDATE people SET merged_into = $2 WHERE person_id = $1', [ids.meEmail, ids.me]);
  await db.query('UPDATE document_people SET person_id = $2 WHERE person_id = $1', [ids.meEmail, ids.me]);
  await db.query('UPDATE person_identifiers SET person_id = $2 WHERE person_id = $1', [ids.meEmail, ids.me]);
  // Alice: a chain email -> work identity -> phone person, links left where they are.
  ids.aliceWork = '0190a000-0000-7000-8000-00000000a11c';
  await db.query(`INSERT INTO people (person_id, display_name, source, merged_into) VALUES ($1, 'A. Liddell', 'contact', $2)`, [
    ids.aliceWork,
    ids.alice,
  ]);
  await db.query(
    `INSERT INTO person_identifiers (person_id, kind, value_raw, value_canonical) VALUES ($1, 'email', $2, $2)`,
    [ids.aliceWork, ALICE_WORK],
  );
  await db.query('UPDATE people SET merged_into = $2 WHERE person_id = $1', [ids.aliceEmail, ids.aliceWork]);
  return { now, ids };
}
