/**
 * What a hit says about the mail it belongs to (issue 31): an email attachment names its message
 * (`attached_to`) and ranks below it for the same match (ATTACHMENT_RANK_FACTOR, fusion.ts); with
 * group=thread the hits are conversations, one per thread, each with its best document, how many
 * documents of the thread match, its participants and its first and last dates. Also the thread
 * context a search in one thread shows around its hits.
 */
import { emailKeysOf, messagesOfAttachments } from '../catalog/attachments.ts';
import type { Queryable } from '../db/types.ts';
import { boostFactor, type FusedCandidate } from './fusion.ts';
import type { IndexMatches, LexicalIndex } from './index/lexical-index.ts';
import { listNameOf } from './lists.ts';
import { roundScore, toHit, type DocRow, type SearchRows } from './rows.ts';
import type { AttachedTo, Conversation, SearchHit, SearchRequest } from './types.ts';
import type { VectorCandidate } from './vector.ts';

/** group=thread: lexical candidates per hit asked for (k = 50 looks at the best 500 documents). */
export const GROUP_POOL_PER_HIT = 10;

/** Unthreaded mail documents of a match set looked up as attachments for total_groups at most (attachmentJoins). */
const GROUP_JOIN_MAX = 5000;
const EMAIL_SOURCE_TYPES = new Set(['email', 'email_local']);

/** Participants a conversation lists (participant_count counts them all). */
export const CONVERSATION_PEOPLE = 12;

/** Whether a document is an email attachment uploaded with its message's Message-ID. */
export function isEmailAttachment(row: { source_type: string; metadata?: Record<string, unknown> | null }): boolean {
  return emailKeysOf(row).attachment !== null;
}

/** The message each of these attachments belongs to, with its thread (from `threadOf`, the index). */
export async function attachedTo(
  db: Queryable,
  docIds: string[],
  threadOf: (docId: string) => string | null,
): Promise<Map<string, AttachedTo>> {
  const found = await messagesOfAttachments(db, docIds);
  return new Map([...found].map(([id, m]) => [id, { doc_id: m.doc_id, title: m.title, content_timestamp: m.content_timestamp, thread_id: threadOf(m.doc_id) }]));
}

type People = Conversation['participants'];

/**
 * The people of these threads' active documents, once each (by identifier, case-insensitive):
 * senders first in the order they first wrote, then the others in the order they first appeared.
 * A mailing list's address (marked by the collector, or owned by a list person: people.list_id) is no
 * participant: it is the conversation's venue (`lists`), as is the List-Id its mail came with (issue 40).
 */
export async function threadPeople(
  db: Queryable,
  threadIds: string[],
): Promise<Map<string, { people: People; count: number; lists: { list_id: string; name: string }[] }>> {
  const out = new Map<string, { people: People; count: number; lists: { list_id: string; name: string }[] }>();
  if (threadIds.length === 0) return out;
  const r = await db.query<{ thread_id: string; n: number; people: People | null; lists: string[] | null }>(
    `WITH e AS (
       SELECT d.thread_id, d.content_timestamp, pe, lower(pe->>'identifier') AS identifier,
              coalesce(pe->'metadata'->>'list',
                       (SELECT lp.list_id FROM person_identifiers pi JOIN people lp ON lp.person_id = pi.person_id
                         WHERE pi.kind = 'email' AND pi.value_canonical = lower(pe->>'identifier') AND lp.list_id IS NOT NULL
                         LIMIT 1)) AS list_id
         FROM documents d
         CROSS JOIN LATERAL jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) pe
        WHERE d.thread_id = ANY($1::uuid[]) AND d.is_active_version AND coalesce(pe->>'identifier', '') <> ''),
     p AS (
       SELECT thread_id, identifier,
              max(coalesce(pe->>'display_name', pe->>'name')) AS display_name,
              bool_or(pe->>'role' = 'sender') AS sender, min(pe->>'role') AS role, min(content_timestamp) AS first_at
         FROM e WHERE list_id IS NULL
        GROUP BY thread_id, identifier),
     l AS (
       SELECT thread_id, list_id FROM e WHERE list_id IS NOT NULL
       UNION
       SELECT d.thread_id, lower(coalesce(d.metadata->'list'->>'id', substring(d.metadata->>'list_id' from '<([^<>[:space:]]+)>')))
         FROM documents d
        WHERE d.thread_id = ANY($1::uuid[]) AND d.is_active_version
          AND coalesce(d.metadata->'list'->>'id', substring(d.metadata->>'list_id' from '<([^<>[:space:]]+)>')) IS NOT NULL)
     SELECT t.thread_id::text AS thread_id,
            (SELECT count(*)::int FROM p WHERE p.thread_id = t.thread_id) AS n,
            (SELECT json_agg(json_build_object('identifier', identifier, 'display_name', display_name,
                                               'role', CASE WHEN sender THEN 'sender' ELSE role END)
                             ORDER BY sender DESC, first_at, identifier)
               FROM p WHERE p.thread_id = t.thread_id) AS people,
            (SELECT array_agg(DISTINCT list_id ORDER BY list_id) FROM l WHERE l.thread_id = t.thread_id) AS lists
       FROM unnest($1::uuid[]) AS t(thread_id)`,
    [threadIds],
    { name: 'memex_search_thread_people' },
  );
  for (const row of r.rows) {
    const lists = (row.lists ?? []).map((id) => ({ list_id: id, name: listNameOf(id) }));
    if (!row.people && lists.length === 0) continue;
    out.set(row.thread_id, { people: (row.people ?? []).slice(0, CONVERSATION_PEOPLE), count: row.n, lists });
  }
  return out;
}

/** A fused candidate with its boosted score, as the page is ranked. */
export interface RankedCandidate {
  c: FusedCandidate;
  score: number;
  attachment: boolean;
  /** Its thread; with group=thread, an attachment's is its message's. */
  threadId: string | null;
  ts: number;
}

/** group=thread: the best candidate of each conversation (an attachment joins its message's), in rank order. */
export function onePerConversation(scored: RankedCandidate[], parents: Map<string, AttachedTo>): RankedCandidate[] {
  const seen = new Set<string>();
  return scored.filter((x) => {
    const thread = x.attachment ? (parents.get(x.c.doc_id)?.thread_id ?? null) : x.threadId;
    const key = thread === null ? `doc:${x.c.doc_id}` : `thread:${thread}`;
    if (seen.has(key)) return false;
    seen.add(key);
    x.threadId = thread;
    return true;
  });
}

/**
 * total_groups counts an email attachment with its message's conversation, not as one of its own (issue 48):
 * the unthreaded mail documents of the match set, those that are attachments, and where their messages are.
 * Past GROUP_JOIN_MAX such documents they are counted as before (one statement stays small).
 */
export async function attachmentJoins(db: Queryable, index: LexicalIndex, matches: IndexMatches, passing: VectorCandidate[]): Promise<Map<string, string>> {
  const ids = index.unthreadedOf(matches, passing.map((v) => v.doc_id), EMAIL_SOURCE_TYPES, GROUP_JOIN_MAX);
  const joins = new Map<string, string>();
  if (ids === null || ids.length === 0) return joins;
  for (const [id, m] of await messagesOfAttachments(db, ids)) joins.set(id, index.attributes(m.doc_id)?.threadId ?? `doc:${m.doc_id}`);
  return joins;
}

/** A conversation as a group=thread hit shows it: its documents in the index, `matching` of them in the match set. */
export function conversationOf(
  index: LexicalIndex,
  threadId: string,
  matching: number,
  people: { people: Conversation['participants']; count: number; lists: { list_id: string; name: string }[] } | undefined,
): Conversation {
  const order = index.threadOrder(threadId);
  const first = order.length > 0 ? index.attributes(order[0])!.contentTimestamp.toISOString() : '';
  const last = order.length > 0 ? index.attributes(order[order.length - 1])!.contentTimestamp.toISOString() : '';
  return {
    thread_id: threadId,
    matching,
    messages: order.length,
    participants: people?.people ?? [],
    participant_count: people?.count ?? 0,
    ...(people && people.lists.length > 0 ? { lists: people.lists } : {}),
    first,
    last,
  };
}

/** Neighbours of the hits in their thread: ±window positions in time order, once each. */
export async function threadContext(
  index: LexicalIndex,
  req: SearchRequest,
  hits: SearchHit[],
  rows: SearchRows,
  boost: { boosts: boolean; now: () => Date },
): Promise<SearchHit[]> {
  const threadId = req.filters.thread_id;
  if (!threadId || req.context_window <= 0 || hits.length === 0) return [];
  const order = index.threadOrder(threadId);
  const pos = new Map(order.map((id, i) => [id, i]));
  const hitIds = new Set(hits.map((h) => h.document_id));
  const ctx = new Map<string, Set<string>>();
  for (const h of hits) {
    const i = pos.get(h.document_id);
    if (i === undefined) continue;
    for (let j = Math.max(0, i - req.context_window); j <= Math.min(order.length - 1, i + req.context_window); j++) {
      const id = order[j];
      if (hitIds.has(id)) continue;
      if (!ctx.has(id)) ctx.set(id, new Set());
      ctx.get(id)!.add(h.document_id);
    }
  }
  const ids = [...ctx.keys()].sort((a, b) => pos.get(a)! - pos.get(b)!);
  const found: Map<string, DocRow> = (await rows.read(ids, [], [])).docs;
  const t = boost.now();
  return ids.flatMap((id) => {
    const row = found.get(id);
    if (!row) return [];
    const score = roundScore(0.1 * (boost.boosts ? boostFactor(row, t) : 1));
    return [
      toHit(row, row.text_head, {
        score,
        scores: { lexical: null, vector: null, fused: 0.1 },
        sources: ['context'],
        context: true,
        context_for: [...ctx.get(id)!],
      }),
    ];
  });
}
