/**
 * What a hit says about the mail it belongs to (issue 31): an email attachment names its message
 * (`attached_to`) and ranks below it for the same match (ATTACHMENT_RANK_FACTOR, fusion.ts); with
 * group=thread the hits are conversations, one per thread, each with its best document, how many
 * documents of the thread match, its participants and its first and last dates.
 */
import { emailKeysOf, messagesOfAttachments } from '../catalog/attachments.ts';
import type { Queryable } from '../db/types.ts';
import { listNameOf } from './lists.ts';
import type { AttachedTo, Conversation } from './types.ts';

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
