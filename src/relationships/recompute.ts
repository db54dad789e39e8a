/**
 * The edge features job (spec 2.6, spec-notes 4.5), set-based: one statement computes the features
 * of every edge self -> person (or of a given set of persons), one statement upserts them.
 *
 * Events: active, non-failed, non-deleted documents of source types chatapp, sms, email and
 * email_local dated at or before `now`, with a `sender` link and recipient links (roles recipient,
 * participant, contact). Person ids are first resolved through merges. A document sent by the
 * self person yields an outbound event for each recipient; a document the self person received
 * yields an inbound event for its sender. Inbound email that the noise rules flag (host-agent spec
 * 2.3: List-Unsubscribe +3, promotional subject word +2, no-reply style sender +2, noise at >= 2;
 * or metadata.is_noise) is not an event. A person with a no-reply style email address, or who sent
 * noise mail and was never written to, gets no edge.
 *
 * Automated senders (issue 35) keep their edge but are marked, and the ranking leaves them out unless asked
 * (src/relationships/top.ts): `features.automated` lists the reasons, empty for a person. `automated_headers`:
 * they sent mail that says it came from a machine (Auto-Submitted other than "no", Precedence bulk/list/junk,
 * List-Id) and were never written to; `one_way`: at least ONE_WAY_MIN messages from them and never one to them.
 *
 * Features per person:
 *  - last contact: newest event; days_since_last_message = (now - last) in days, 2 decimals;
 *  - messages_30d / attachments_30d: events (attachment_count of documents with attachments) in
 *    [now - 30 days, now]; in a group thread (more than 2 distinct linked persons) an event counts
 *    only when the other direction has an event with that person in the same thread within ±48 h;
 *  - distinct_threads_90d: distinct non-null thread ids with an event in [now - 90 days, now];
 *  - avg_reply_latency_seconds: per thread, in time order, each outbound event that directly
 *    follows an inbound event from the person is a reply; its latency is the gap between the two;
 *    the mean over all replies, 2 decimals; null when there was none (thread-less events never
 *    count: a reply has to be in the same thread).
 */
import { isEmailAttachmentSql } from '../db/document-predicates.ts';
import type { Database, Queryable } from '../db/types.ts';
import { BULK_SENDER_WORDS, PROMO_SUBJECT_WORDS, SUBJECT_WORD_SEPARATOR } from '../mail/noise.ts';
import { DEFAULT_RELATIONSHIP_CONFIG } from './config.ts';
import { MERGED_CTE, resolvePerson, resolvePersons } from './people.ts';
import { decayBucket, relationshipScore, type EdgeFeatures, type ScoreComponents } from './score.ts';
import { MESSAGE_SOURCE_TYPES, resolveSelf, type SelfResolution } from './self.ts';

const LINK_ROLES = `('sender', 'recipient', 'participant', 'contact')`;
/** Messages from a person, never answered, that make the traffic one-way (an automated sender). */
export const ONE_WAY_MIN = 3;

/** A header of an email document: the collector's metadata field, else the raw `headers` object (any case). */
const header = (field: string, name: string) =>
  `coalesce(d.metadata->>'${field}', (SELECT h.v FROM jsonb_each_text(CASE WHEN jsonb_typeof(d.metadata->'headers') = 'object'
      THEN d.metadata->'headers' ELSE '{}'::jsonb END) AS h(k, v) WHERE lower(h.k) = '${name}' LIMIT 1))`;
const GROUP_WINDOW = `interval '48 hours'`;

export interface FeatureRow extends EdgeFeatures {
  person_id: string;
  last_contact_at: string;
  inbound_30d: number;
  outbound_30d: number;
  messages_total: number;
  replies_measured: number;
  /** Why this person looks like a machine (empty: a person). */
  automated: string[];
  /** Messages the self person sent them, ever, and days since the last (null: never) — the "gone quiet" view. */
  outbound_total: number;
  days_since_last_outbound: number | null;
}

interface RawRow {
  person_id: string;
  last_ts: Date | string;
  days_since: number;
  messages_30d: number;
  inbound_30d: number;
  outbound_30d: number;
  attachments_30d: number;
  threads_90d: number;
  messages_total: number;
  replies: number;
  avg_latency: number | null;
  auto_headers: boolean;
  inbound_total: number;
  outbound_total: number;
  last_out: Date | string | null;
}

/**
 * The feature statement. `$1` self (a live root id), `$2` now, `$3` the self person's member ids,
 * `$4` the promotional subject words and `$5` the bulk-sender words (src/mail/noise.ts, the
 * collectors' noise words); when `targeted`, `$6` the target persons (root ids) and `$7` their member
 * ids. Built from fixed fragments only; every value is a parameter.
 */
export function featureSql(targeted: boolean): string {
  // Member ids (a person and everyone merged into it) come in as arrays ($3 self, $7 targets), so
  // the planner sees real lists and starts from the smaller side through the person_id index.
  const cand = targeted
    ? `cand AS (
         SELECT DISTINCT dp.doc_id FROM document_people dp
          WHERE dp.person_id = ANY($7::uuid[]) AND dp.role IN ${LINK_ROLES}
            AND EXISTS (SELECT 1 FROM document_people s
                         WHERE s.doc_id = dp.doc_id AND s.person_id = ANY($3::uuid[]) AND s.role IN ${LINK_ROLES})
       )`
    : `cand AS (
         SELECT DISTINCT dp.doc_id FROM document_people dp
          WHERE dp.person_id = ANY($3::uuid[]) AND dp.role IN ${LINK_ROLES}
       )`;
  // Person ids resolve to their survivor with: LEFT JOIN merged m ON m.person_id = x.person_id,
  // JOIN people p ON p.person_id = coalesce(m.root, x.person_id) AND live. Each document's links
  // are aggregated once into sender and recipient arrays, so events need no self-joins.
  const live = (alias: string, col: string) =>
    `LEFT JOIN merged m_${alias} ON m_${alias}.person_id = ${col}
     JOIN people p_${alias} ON p_${alias}.person_id = coalesce(m_${alias}.root, ${col})
      AND p_${alias}.merged_into IS NULL AND NOT p_${alias}.deleted`;
  return `WITH RECURSIVE ${MERGED_CTE},
  ${cand},
  docs AS (
    SELECT d.doc_id, d.content_timestamp AS ts, d.thread_id,
           CASE WHEN d.has_attachments THEN d.attachment_count ELSE 0 END AS att,
           (d.source_type IN ('email', 'email_local') AND (
              coalesce(d.metadata->>'is_noise', '') = 'true'
              OR (CASE WHEN nullif(d.metadata->>'list_unsubscribe', '') IS NOT NULL
                         OR EXISTS (SELECT 1 FROM jsonb_object_keys(CASE WHEN jsonb_typeof(d.metadata->'headers') = 'object'
                                      THEN d.metadata->'headers' ELSE '{}'::jsonb END) AS h(k)
                                     WHERE lower(h.k) = 'list-unsubscribe')
                       THEN 3 ELSE 0 END
                + CASE WHEN regexp_split_to_array(lower(coalesce(d.metadata->>'subject', d.title, '')), '${SUBJECT_WORD_SEPARATOR}')
                              && $4::text[] THEN 2 ELSE 0 END
                + CASE WHEN EXISTS (SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array'
                                      THEN d.people ELSE '[]'::jsonb END) AS e
                                     WHERE e->>'role' = 'sender'
                                       AND EXISTS (SELECT 1 FROM unnest($5::text[]) AS w(word)
                                                    WHERE strpos(lower(coalesce(e->>'identifier', '') || ' '
                                                                       || coalesce(e->>'display_name', '')), w.word) > 0))
                       THEN 2 ELSE 0 END) >= 2)) AS noisy,
           (d.source_type IN ('email', 'email_local') AND (
              lower(trim(coalesce(${header('precedence', 'precedence')}, ''))) IN ('bulk', 'list', 'junk')
              OR lower(trim(coalesce(${header('auto_submitted', 'auto-submitted')}, 'no'))) NOT IN ('no', '')
              OR trim(coalesce(${header('list_id', 'list-id')}, '')) <> '')) AS automated
      FROM documents d JOIN cand c ON c.doc_id = d.doc_id
     WHERE d.is_active_version AND d.status <> 'failed' AND d.deleted_at IS NULL
       AND d.source_type IN (${MESSAGE_SOURCE_TYPES.map((t) => `'${t}'`).join(', ')})
       AND d.content_timestamp <= $2::timestamptz
       -- An email attachment shares its message's people: the message is the event.
       AND NOT ${isEmailAttachmentSql('d')}
  ),
  doc_links AS (
    SELECT d.doc_id, d.ts, d.thread_id, d.att, d.noisy, d.automated,
           array_agg(DISTINCT p_l.person_id) FILTER (WHERE dp.role = 'sender') AS senders,
           array_agg(DISTINCT p_l.person_id) FILTER (WHERE dp.role <> 'sender') AS recips
      FROM docs d JOIN document_people dp ON dp.doc_id = d.doc_id AND dp.role IN ${LINK_ROLES}
      ${live('l', 'dp.person_id')}
     GROUP BY d.doc_id, d.ts, d.thread_id, d.att, d.noisy, d.automated
  ),
  raw_events AS (
    SELECT dl.doc_id, dl.ts, dl.thread_id, dl.att, o.other, 'out'::text AS dir, false AS noisy, false AS automated
      FROM doc_links dl CROSS JOIN LATERAL unnest(dl.recips) AS o(other)
     WHERE $1::uuid = ANY(dl.senders) AND o.other <> $1::uuid
    UNION ALL
    SELECT dl.doc_id, dl.ts, dl.thread_id, dl.att, o.other, 'in', dl.noisy, dl.automated
      FROM doc_links dl CROSS JOIN LATERAL unnest(dl.senders) AS o(other)
     WHERE $1::uuid = ANY(dl.recips) AND o.other <> $1::uuid
  ),
  excluded AS (
    SELECT other FROM raw_events GROUP BY other
    HAVING bool_or(noisy) AND NOT bool_or(dir = 'out')
    UNION
    SELECT p_x.person_id FROM person_identifiers pi ${live('x', 'pi.person_id')}
     WHERE pi.kind = 'email'
       AND EXISTS (SELECT 1 FROM unnest($5::text[]) AS w(word) WHERE strpos(pi.value_canonical, w.word) > 0)
       AND p_x.person_id IN (SELECT other FROM raw_events)
  ),
  events AS (
    SELECT e.* FROM raw_events e
     WHERE NOT e.noisy AND e.other NOT IN (SELECT other FROM excluded)
       -- A mailing list (people.list_id, issue 40) is a venue, never a relationship.
       AND e.other NOT IN (SELECT person_id FROM people WHERE list_id IS NOT NULL)
       ${targeted ? 'AND e.other = ANY($6::uuid[])' : ''}
  ),
  thread_sizes AS (
    SELECT d.thread_id, count(DISTINCT p_t.person_id) AS n
      FROM documents d JOIN document_people dp ON dp.doc_id = d.doc_id
      ${live('t', 'dp.person_id')}
     WHERE d.thread_id IN (SELECT thread_id FROM events WHERE thread_id IS NOT NULL)
       AND d.is_active_version AND d.status <> 'failed' AND d.deleted_at IS NULL AND dp.role IN ${LINK_ROLES}
     GROUP BY d.thread_id
  ),
  ordered AS (
    SELECT e.*, coalesce(t.n, 0) > 2 AS in_group,
           max(CASE WHEN e.dir = 'out' THEN e.ts END) OVER w_before AS out_before,
           min(CASE WHEN e.dir = 'out' THEN e.ts END) OVER w_after AS out_after,
           max(CASE WHEN e.dir = 'in' THEN e.ts END) OVER w_before AS in_before,
           min(CASE WHEN e.dir = 'in' THEN e.ts END) OVER w_after AS in_after,
           lag(e.dir) OVER w_seq AS prev_dir,
           lag(e.ts) OVER w_seq AS prev_ts
      FROM events e LEFT JOIN thread_sizes t ON t.thread_id = e.thread_id
    WINDOW w_seq AS (PARTITION BY e.other, e.thread_id ORDER BY e.ts, e.dir, e.doc_id),
           w_before AS (PARTITION BY e.other, e.thread_id ORDER BY e.ts, e.dir, e.doc_id
                        ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW),
           w_after AS (PARTITION BY e.other, e.thread_id ORDER BY e.ts, e.dir, e.doc_id
                       ROWS BETWEEN CURRENT ROW AND UNBOUNDED FOLLOWING)
  ),
  runs AS (
    SELECT o.*,
           NOT o.in_group OR o.thread_id IS NULL
             OR (o.dir = 'in' AND (o.ts - o.out_before <= ${GROUP_WINDOW} OR o.out_after - o.ts <= ${GROUP_WINDOW}))
             OR (o.dir = 'out' AND (o.ts - o.in_before <= ${GROUP_WINDOW} OR o.in_after - o.ts <= ${GROUP_WINDOW}))
             AS counted
      FROM ordered o
  )
  SELECT other AS person_id,
         max(ts) AS last_ts,
         (extract(epoch FROM ($2::timestamptz - max(ts))) / 86400.0)::float8 AS days_since,
         (count(*) FILTER (WHERE counted AND ts >= $2::timestamptz - interval '30 days'))::int AS messages_30d,
         (count(*) FILTER (WHERE counted AND dir = 'in' AND ts >= $2::timestamptz - interval '30 days'))::int AS inbound_30d,
         (count(*) FILTER (WHERE counted AND dir = 'out' AND ts >= $2::timestamptz - interval '30 days'))::int AS outbound_30d,
         (coalesce(sum(att) FILTER (WHERE counted AND ts >= $2::timestamptz - interval '30 days'), 0))::int AS attachments_30d,
         (count(DISTINCT thread_id) FILTER (WHERE ts >= $2::timestamptz - interval '90 days'))::int AS threads_90d,
         count(*)::int AS messages_total,
         (count(*) FILTER (WHERE dir = 'out' AND prev_dir = 'in' AND thread_id IS NOT NULL))::int AS replies,
         (avg(extract(epoch FROM (ts - prev_ts)))
            FILTER (WHERE dir = 'out' AND prev_dir = 'in' AND thread_id IS NOT NULL))::float8 AS avg_latency,
         bool_or(dir = 'in' AND automated) AS auto_headers,
         (count(*) FILTER (WHERE dir = 'in'))::int AS inbound_total,
         (count(*) FILTER (WHERE dir = 'out'))::int AS outbound_total,
         max(ts) FILTER (WHERE dir = 'out') AS last_out
    FROM runs
   GROUP BY other`;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

/** The ids of live persons and of everyone merged into them, through chains (UNION stops cycles). */
async function memberIds(db: Queryable, roots: string[]): Promise<string[]> {
  const r = await db.query<{ pid: string }>(
    `WITH RECURSIVE m(pid) AS (
        SELECT x FROM unnest($1::uuid[]) AS x
        UNION
        SELECT p.person_id FROM people p JOIN m ON p.merged_into = m.pid
      )
      SELECT pid FROM m`,
    [roots],
  );
  return r.rows.map((x) => x.pid);
}

/** Features of the edges self -> person (all persons, or `persons` only) at `now`. */
export async function computeFeatures(
  db: Queryable,
  selfId: string,
  opts: { now?: Date; persons?: string[] } = {},
): Promise<FeatureRow[]> {
  const now = opts.now ?? new Date();
  const targeted = opts.persons !== undefined;
  if (targeted && opts.persons!.length === 0) return [];
  const params: unknown[] = [selfId, now.toISOString(), await memberIds(db, [selfId]), PROMO_SUBJECT_WORDS, BULK_SENDER_WORDS];
  if (targeted) params.push(opts.persons, await memberIds(db, opts.persons!));
  const r = await db.query<RawRow>(featureSql(targeted), params);
  return r.rows.map((x) => ({
    person_id: x.person_id,
    last_contact_at: new Date(x.last_ts).toISOString(),
    days_since_last_message: round2(Number(x.days_since)),
    messages_30d: Number(x.messages_30d),
    distinct_threads_90d: Number(x.threads_90d),
    attachments_30d: Number(x.attachments_30d),
    avg_reply_latency_seconds: x.avg_latency === null ? null : round2(Number(x.avg_latency)),
    inbound_30d: Number(x.inbound_30d),
    outbound_30d: Number(x.outbound_30d),
    messages_total: Number(x.messages_total),
    replies_measured: Number(x.replies),
    automated: automatedReasons(x),
    outbound_total: Number(x.outbound_total),
    days_since_last_outbound: x.last_out === null ? null : round2((now.getTime() - new Date(x.last_out).getTime()) / 86400_000),
  }));
}

/** Why a correspondent looks automated: only ever writing, by machine headers or by sheer one-way volume. */
function automatedReasons(x: Pick<RawRow, 'auto_headers' | 'inbound_total' | 'outbound_total'>): string[] {
  if (Number(x.outbound_total) > 0) return [];
  const reasons: string[] = [];
  if (x.auto_headers) reasons.push('automated_headers');
  if (Number(x.inbound_total) >= ONE_WAY_MIN) reasons.push('one_way');
  return reasons;
}

export interface EdgeRecord {
  person_id: string;
  score: number;
  last_contact_at: string;
  decay_bucket: number;
  features: Omit<FeatureRow, 'person_id' | 'last_contact_at'> & { score_components: ScoreComponents; computed_at: string };
}

export function toEdges(rows: FeatureRow[], halfLifeDays: number, now: Date): EdgeRecord[] {
  return rows.map((f) => {
    const { score, components } = relationshipScore(f, halfLifeDays);
    const { person_id, last_contact_at, ...rest } = f;
    return {
      person_id,
      score,
      last_contact_at,
      decay_bucket: decayBucket(f.days_since_last_message),
      features: { ...rest, score_components: components, computed_at: now.toISOString() },
    };
  });
}

export interface RecomputeOptions {
  /** Compute for this self person (resolved through merges) instead of the resolved self. */
  selfPersonId?: string;
  /** Only these persons' edges (resolved through merges); omit for a full recompute. */
  persons?: string[];
  /** Clock for the features (tests, backfills); default now. */
  now?: Date;
  halfLifeDays?: number;
  selfIdentifiers?: string[];
  phoneRegion?: string;
}

export interface RecomputeResult {
  self_person_id: string | null;
  self_source: SelfResolution['source'] | 'given' | null;
  mode: 'full' | 'incremental';
  edges_upserted: number;
  edges_removed: number;
  duration_ms: number;
}

/**
 * Recomputes relationship edges: all of them for the self person (full), or those of `persons`
 * only (incremental). Edges whose person no longer qualifies are removed, as are (full mode)
 * edges of merged or deleted persons. Used by the CLI verb `memex relationships --recompute`.
 */
export async function recomputeRelationships(db: Database, opts: RecomputeOptions = {}): Promise<RecomputeResult> {
  const started = Date.now();
  const now = opts.now ?? new Date();
  const halfLife = opts.halfLifeDays ?? DEFAULT_RELATIONSHIP_CONFIG.halfLifeDays;
  const mode = opts.persons === undefined ? 'full' : 'incremental';
  let selfId: string | null;
  let source: RecomputeResult['self_source'];
  if (opts.selfPersonId) {
    selfId = await resolvePerson(db, opts.selfPersonId);
    source = selfId ? 'given' : null;
  } else {
    const self = await resolveSelf(db, {
      selfIdentifiers: opts.selfIdentifiers ?? DEFAULT_RELATIONSHIP_CONFIG.selfIdentifiers,
      phoneRegion: opts.phoneRegion ?? DEFAULT_RELATIONSHIP_CONFIG.phoneRegion,
    });
    selfId = self?.person_id ?? null;
    source = self?.source ?? null;
  }
  const result: RecomputeResult = {
    self_person_id: selfId,
    self_source: source,
    mode,
    edges_upserted: 0,
    edges_removed: 0,
    duration_ms: 0,
  };
  if (!selfId) {
    result.duration_ms = Date.now() - started;
    return result;
  }
  const targets = opts.persons === undefined ? undefined : (await resolvePersons(db, opts.persons)).filter((p) => p !== selfId);
  const rows = await computeFeatures(db, selfId, { now, persons: targets });
  const edges = toEdges(rows, halfLife, now);
  await db.transaction(async (tx) => {
    if (edges.length > 0) {
      const payload = edges.map((e) => ({
        person_id: e.person_id,
        score: e.score,
        last_contact_at: e.last_contact_at,
        decay_bucket: e.decay_bucket,
        features: e.features,
      }));
      const up = await tx.query(
        `INSERT INTO relationship_edges (self_person_id, person_id, score, last_contact_at, decay_bucket, edge_features, updated_at)
         SELECT $1::uuid, x.person_id, x.score, x.last_contact_at, x.decay_bucket, x.features, now()
           FROM jsonb_to_recordset($2::jsonb)
             AS x(person_id uuid, score float8, last_contact_at timestamptz, decay_bucket int, features jsonb)
         ON CONFLICT (self_person_id, person_id) DO UPDATE
           SET score = EXCLUDED.score, last_contact_at = EXCLUDED.last_contact_at, decay_bucket = EXCLUDED.decay_bucket,
               edge_features = EXCLUDED.edge_features, updated_at = now()`,
        [selfId, JSON.stringify(payload)],
      );
      result.edges_upserted = up.rowCount || edges.length;
    }
    const kept = edges.map((e) => e.person_id);
    if (targets === undefined) {
      const del = await tx.query(
        `DELETE FROM relationship_edges WHERE self_person_id = $1 AND NOT (person_id = ANY($2::uuid[]))`,
        [selfId, kept],
      );
      const dead = await tx.query(
        `DELETE FROM relationship_edges e USING people p
          WHERE (p.person_id = e.person_id OR p.person_id = e.self_person_id) AND (p.merged_into IS NOT NULL OR p.deleted)`,
      );
      result.edges_removed = del.rowCount + dead.rowCount;
    } else if (targets.length > 0) {
      const del = await tx.query(
        `DELETE FROM relationship_edges WHERE self_person_id = $1 AND person_id = ANY($2::uuid[])
            AND NOT (person_id = ANY($3::uuid[]))`,
        [selfId, targets, kept],
      );
      result.edges_removed = del.rowCount;
    }
  });
  result.duration_ms = Date.now() - started;
  return result;
}
