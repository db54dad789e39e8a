/**
 * The self person: whose relationships the CRM ranks. Resolution order (first that yields a live
 * person wins; merged ids resolve to their survivor):
 *
 *  1. the stored override, system_settings key `self_person_id`, when set by hand
 *     (PUT /v1/admin/self-person, source `manual`);
 *  2. configured identifiers, env SELF_IDENTIFIERS (emails, phones or chat handles, in order): they
 *     beat a setting stored automatically (a contact sync's `self_identifier`), which comes next;
 *  3. a contact card marked as "me" (a `contact` document with metadata.contact.is_me / me = true,
 *     or metadata.is_me = true), the newest one;
 *  4. the identity that sent most outbound messages: among the latest 20 000 active message
 *     documents, in those a collector marked as sent by the user (metadata.message.is_from_me,
 *     metadata.is_from_me, a direction of outgoing/outbound) the person linked as `sender`, and in
 *     those with a people[] entry marked metadata.self = true the person of that identifier; the
 *     person counted most often wins (ties: the smaller person id);
 *  5. plain mail (imports and mail stores without any "from me" marker): the address that sends
 *     the messages filed in a Sent folder (metadata.mailbox) and, among several, receives the most
 *     messages elsewhere.
 */
import type { Queryable } from '../db/types.ts';
import { canonicalIdentifier, identifierKindOf, type IdentifierKind } from '../identity/identifiers.ts';
import { isUuid } from '../util/ids.ts';
import { resolvePerson, resolvePersons } from './people.ts';

export const SELF_SETTING_KEY = 'self_person_id';
export const MESSAGE_SOURCE_TYPES = ['chatapp', 'sms', 'email', 'email_local'] as const;
/** Detection looks at this many of the newest message documents (bounded cost on any archive). */
const DETECTION_SAMPLE = 20000;

export type SelfSource = 'setting' | 'config' | 'contact_card' | 'outbound_messages' | 'mailboxes';

export interface SelfResolution {
  person_id: string;
  source: SelfSource;
  /** What the detection saw (counts, identifier), for the admin route. */
  evidence?: Record<string, unknown>;
}

export interface SelfSetting {
  /** The id as stored (may since have been merged). */
  stored_person_id: string;
  source: string;
  updated_at: string | null;
}

/** Reads the override; accepts {self_person_id, ...} objects (Haven's shape) and bare uuid strings. */
export async function readSelfSetting(db: Queryable): Promise<SelfSetting | null> {
  const r = await db.query<{ value: unknown; updated_at: Date }>(
    'SELECT value, updated_at FROM system_settings WHERE key = $1',
    [SELF_SETTING_KEY],
  );
  const row = r.rows[0];
  if (!row) return null;
  const v = row.value as any;
  const id = typeof v === 'string' ? v : v && typeof v === 'object' ? v.self_person_id : null;
  if (!isUuid(id)) return null;
  return {
    stored_person_id: id.toLowerCase(),
    source: typeof v === 'object' && typeof v.source === 'string' ? v.source : 'manual',
    updated_at: row.updated_at instanceof Date ? row.updated_at.toISOString() : null,
  };
}

export async function writeSelfSetting(db: Queryable, personId: string, source = 'manual'): Promise<void> {
  await db.query(
    `INSERT INTO system_settings (key, value, updated_at) VALUES ($1, $2, now())
     ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
    [SELF_SETTING_KEY, JSON.stringify({ self_person_id: personId, source, updated_at: new Date().toISOString() })],
  );
}

export async function clearSelfSetting(db: Queryable): Promise<boolean> {
  const r = await db.query('DELETE FROM system_settings WHERE key = $1', [SELF_SETTING_KEY]);
  return r.rowCount > 0;
}

/** The live person an identifier (email, phone, handle) belongs to, or null. */
export async function personByIdentifier(
  db: Queryable,
  identifier: string,
  identifierType: string | null,
  region: string,
): Promise<string | null> {
  const kinds: IdentifierKind[] = [];
  const explicit = identifierType ? identifierKindOf(identifierType, identifier) : null;
  if (identifierType && !explicit) return null;
  if (explicit) kinds.push(explicit);
  else kinds.push(...(['email', 'phone', 'chatapp', 'social'] as IdentifierKind[]));
  const pairs: { kind: string; value: string }[] = [];
  for (const k of kinds) {
    const c = canonicalIdentifier(k, identifier, region);
    if (c) pairs.push(c);
  }
  if (pairs.length === 0) return null;
  const r = await db.query<{ person_id: string }>(
    `SELECT pi.person_id FROM person_identifiers pi JOIN people p ON p.person_id = pi.person_id
      WHERE (pi.kind, pi.value_canonical) IN (SELECT * FROM unnest($1::text[], $2::text[]))
      ORDER BY (p.merged_into IS NULL AND NOT p.deleted) DESC, pi.priority, p.created_at, pi.person_id`,
    [pairs.map((p) => p.kind), pairs.map((p) => p.value)],
  );
  for (const row of r.rows) {
    const root = await resolvePerson(db, row.person_id);
    if (root) return root;
  }
  return null;
}

export async function detectFromConfig(db: Queryable, identifiers: string[], region: string): Promise<SelfResolution | null> {
  for (const ident of identifiers) {
    const id = await personByIdentifier(db, ident, null, region);
    if (id) return { person_id: id, source: 'config', evidence: { identifier: ident } };
  }
  return null;
}

export async function detectFromContactCard(db: Queryable): Promise<SelfResolution | null> {
  const r = await db.query<{ person_id: string; doc_id: string }>(
    `SELECT dp.person_id, d.doc_id FROM documents d JOIN document_people dp ON dp.doc_id = d.doc_id
      WHERE d.source_type = 'contact' AND d.is_active_version AND d.deleted_at IS NULL AND d.status <> 'failed'
        AND (d.metadata @> '{"contact":{"is_me":true}}' OR d.metadata @> '{"contact":{"me":true}}'
             OR d.metadata @> '{"is_me":true}')
      ORDER BY d.content_timestamp DESC, (dp.role = 'contact') DESC, dp.person_id LIMIT 20`,
  );
  for (const row of r.rows) {
    const root = await resolvePerson(db, row.person_id);
    if (root) return { person_id: root, source: 'contact_card', evidence: { doc_id: row.doc_id } };
  }
  return null;
}

export async function detectFromOutbound(db: Queryable, region: string): Promise<SelfResolution | null> {
  const types = [...MESSAGE_SOURCE_TYPES];
  const senders = await db.query<{ person_id: string; n: number }>(
    `SELECT dp.person_id, count(*)::int AS n
       FROM (SELECT doc_id, metadata FROM documents
              WHERE is_active_version AND status <> 'failed' AND source_type = ANY($1::text[])
              ORDER BY content_timestamp DESC LIMIT ${DETECTION_SAMPLE}) d
       JOIN document_people dp ON dp.doc_id = d.doc_id AND dp.role = 'sender'
      WHERE d.metadata @> '{"message":{"is_from_me":true}}' OR d.metadata @> '{"is_from_me":true}'
         OR lower(coalesce(d.metadata->'message'->>'direction', d.metadata->>'direction', '')) IN ('outgoing', 'outbound')
      GROUP BY dp.person_id`,
    [types],
  );
  const marked = await db.query<{ identifier: string; identifier_type: string | null; n: number }>(
    `SELECT e->>'identifier' AS identifier, e->>'identifier_type' AS identifier_type, count(*)::int AS n
       FROM (SELECT people FROM documents
              WHERE is_active_version AND status <> 'failed' AND source_type = ANY($1::text[])
              ORDER BY content_timestamp DESC LIMIT ${DETECTION_SAMPLE}) d,
            jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) AS e
      WHERE e->'metadata'->>'self' = 'true' AND e->>'identifier' IS NOT NULL
      GROUP BY 1, 2 ORDER BY n DESC LIMIT 20`,
    [types],
  );
  const fromSenders = new Map<string, number>();
  for (const row of senders.rows) {
    const [root] = await resolvePersons(db, [row.person_id]);
    if (root) fromSenders.set(root, (fromSenders.get(root) ?? 0) + row.n);
  }
  const fromMarkers = new Map<string, number>();
  for (const row of marked.rows) {
    const root = await personByIdentifier(db, row.identifier, row.identifier_type, region);
    if (root) fromMarkers.set(root, (fromMarkers.get(root) ?? 0) + row.n);
  }
  // The two views overlap (a chat message sent by the user has both); take the larger count per person.
  const counts = new Map<string, number>();
  for (const [id, n] of [...fromSenders, ...fromMarkers]) counts.set(id, Math.max(counts.get(id) ?? 0, n));
  let best: [string, number] | null = null;
  for (const [id, n] of counts) if (!best || n > best[1] || (n === best[1] && id < best[0])) best = [id, n];
  if (!best) return null;
  return {
    person_id: best[0],
    source: 'outbound_messages',
    evidence: { outbound_messages: fromSenders.get(best[0]) ?? 0, self_markers: fromMarkers.get(best[0]) ?? 0 },
  };
}

/** Mailbox names of sent mail, in the languages mail clients use (IMAP folders, import folders). */
const SENT_MAILBOX_RE = '\\m(sent|gesendet|gesendete|envoy[ée]s|enviados|enviadas|inviata|inviati|verzonden|skickat|sendt|wys[łl]ane)\\M';

export async function detectFromMailboxes(db: Queryable): Promise<SelfResolution | null> {
  const r = await db.query<{ person_id: string; sent: number; received: number; total_received: number }>(
    `WITH d AS (
       SELECT doc_id, coalesce(metadata->>'mailbox', '') ~* $1 AS in_sent FROM documents
        WHERE is_active_version AND status <> 'failed' AND source_type IN ('email', 'email_local')
        ORDER BY content_timestamp DESC LIMIT ${DETECTION_SAMPLE}),
     counts AS (
       SELECT dp.person_id,
              count(DISTINCT d.doc_id) FILTER (WHERE d.in_sent AND dp.role = 'sender')::int AS sent,
              count(DISTINCT d.doc_id) FILTER (WHERE NOT d.in_sent AND dp.role IN ('recipient', 'participant'))::int AS received
         FROM d JOIN document_people dp ON dp.doc_id = d.doc_id
         -- A mailing list receives much too: it is never the owner (issue 40).
         JOIN people lp ON lp.person_id = dp.person_id AND lp.list_id IS NULL
        GROUP BY dp.person_id)
     SELECT person_id, sent, received, (SELECT count(*)::int FROM d WHERE NOT in_sent) AS total_received
       FROM counts WHERE sent > 0 OR received > 0`,
    [SENT_MAILBOX_RE],
  );
  const totals = new Map<string, { sent: number; received: number }>();
  for (const row of r.rows) {
    const [root] = await resolvePersons(db, [row.person_id]);
    if (!root) continue;
    const t = totals.get(root) ?? { sent: 0, received: 0 };
    t.sent += row.sent;
    t.received += row.received;
    totals.set(root, t);
  }
  const totalReceived = r.rows[0]?.total_received ?? 0;
  const better = (a: [string, { sent: number; received: number }], b: [string, { sent: number; received: number }] | null) =>
    !b || a[1].received > b[1].received || (a[1].received === b[1].received && (a[1].sent > b[1].sent || (a[1].sent === b[1].sent && a[0] < b[0])));
  let best: [string, { sent: number; received: number }] | null = null;
  // Who sends what the Sent folder holds; among several (aliases, delegates) the one who receives
  // most. Without a Sent folder nobody is guessed: receiving much alone also fits a mailing list.
  for (const e of totals) if (e[1].sent > 0 && better(e, best)) best = e;
  if (!best) return null;
  return {
    person_id: best[0],
    source: 'mailboxes',
    evidence: { sent_from_sent_folder: best[1].sent, received: best[1].received, received_messages: totalReceived },
  };
}

/** Detection without the stored override (paths 2–5). */
export async function detectSelf(db: Queryable, opts: { selfIdentifiers: string[]; phoneRegion: string }): Promise<SelfResolution | null> {
  return (
    (await detectFromConfig(db, opts.selfIdentifiers, opts.phoneRegion)) ??
    (await detectFromContactCard(db)) ??
    (await detectFromOutbound(db, opts.phoneRegion)) ??
    (await detectFromMailboxes(db))
  );
}

/**
 * The self person: a stored override set by hand, else SELF_IDENTIFIERS, else a setting stored
 * automatically, else detection.
 */
export async function resolveSelf(db: Queryable, opts: { selfIdentifiers: string[]; phoneRegion: string }): Promise<SelfResolution | null> {
  const setting = await readSelfSetting(db);
  const stored = setting ? await resolvePerson(db, setting.stored_person_id) : null;
  const fromSetting = (): SelfResolution | null =>
    stored ? { person_id: stored, source: 'setting', evidence: { stored_person_id: setting!.stored_person_id, stored_by: setting!.source } } : null;
  if (setting?.source === 'manual' && stored) return fromSetting();
  return (
    (await detectFromConfig(db, opts.selfIdentifiers, opts.phoneRegion)) ??
    fromSetting() ??
    (await detectSelf(db, { ...opts, selfIdentifiers: [] }))
  );
}
