/**
 * Email conversations in the catalog. The collectors send a provisional thread (the root their own
 * headers name, src/mail/thread.ts); here every Message-ID seen is recorded with its parent and its
 * thread in `email_thread_messages`, so a message that arrives before its parent, or one that links two
 * branches, merges the threads involved. A conversation is a connected component of the parent links;
 * its root is the Message-ID without a known parent (the smallest one when several, the smallest id
 * of all in a cycle), and its thread id is derived from that root: whatever the arrival order, the
 * same mail ends in the same threads with the same ids.
 */
import type { Database, Queryable } from '../db/types.ts';
import { emailThreadExternalId, emailThreadId, messageLinks, type MessageLinks } from '../mail/thread.ts';
import type { CatalogDocumentRequest } from './types.ts';

export const EMAIL_SOURCE_TYPES = ['email', 'email_local'];
/** One email linking runs at a time on a database (transaction-scoped; merges must see each other). */
const EMAIL_THREAD_LOCK_KEY = 70908117;
const RETHREAD_SETTING = 'email_rethread';

/** The parent links of an email document, from the message ids in its metadata; null for other documents. */
export function emailLinksOf(sourceType: string, metadata: Record<string, unknown> | null | undefined): MessageLinks | null {
  if (!EMAIL_SOURCE_TYPES.includes(sourceType) || !metadata) return null;
  const str = (v: unknown) => (typeof v === 'string' ? v : null);
  const refs = Array.isArray(metadata.references) ? metadata.references.filter((r): r is string => typeof r === 'string') : [];
  const links = messageLinks(str(metadata.message_id), str(metadata.in_reply_to), refs);
  return links.root ? links : null;
}

export interface EmailThreadAssignment {
  threadId: string;
  root: string;
}

interface LinkRow {
  message_id: string;
  parent_id: string | null;
  thread_id: string;
}

/**
 * Links the messages of `links` into the stored conversations and returns each one's thread (null where
 * `links[i]` is null) plus the threads that were merged away (old id -> new id). The caller stores the
 * thread rows, then moves documents with `mergeThreads`.
 */
export async function linkEmailMessages(
  tx: Queryable,
  links: (MessageLinks | null)[],
): Promise<{ assigned: (EmailThreadAssignment | null)[]; merged: Map<string, string> }> {
  const merged = new Map<string, string>();
  if (links.every((l) => l === null)) return { assigned: links.map(() => null), merged };
  await tx.query('SELECT pg_advisory_xact_lock($1)', [EMAIL_THREAD_LOCK_KEY]);

  const ids = new Set<string>();
  const newParent = new Map<string, string>();
  for (const l of links) {
    if (!l) continue;
    if (l.id) ids.add(l.id);
    ids.add(l.root!);
    for (const [child, parent] of l.edges) {
      ids.add(child);
      ids.add(parent);
      if (!newParent.has(child)) newParent.set(child, parent);
    }
  }
  // Every stored member of the threads these messages already belong to (which includes the messages).
  const members = (
    await tx.query<LinkRow>(
      `SELECT message_id, parent_id, thread_id FROM email_thread_messages
        WHERE thread_id IN (SELECT thread_id FROM email_thread_messages WHERE message_id = ANY($1::text[]))`,
      [[...ids]],
    )
  ).rows;

  // Union-find over stored members (joined per stored thread) and the new parent links.
  const up = new Map<string, string>();
  const find = (x: string): string => {
    let r = x;
    while (up.get(r) !== r) r = up.get(r)!;
    let c = x;
    while (c !== r) {
      const n = up.get(c)!;
      up.set(c, r);
      c = n;
    }
    return r;
  };
  const add = (x: string) => {
    if (!up.has(x)) up.set(x, x);
  };
  const union = (a: string, b: string) => {
    add(a);
    add(b);
    const ra = find(a), rb = find(b);
    if (ra !== rb) up.set(ra < rb ? rb : ra, ra < rb ? ra : rb);
  };
  const stored = new Map<string, LinkRow>();
  const firstOfThread = new Map<string, string>();
  for (const m of members) {
    stored.set(m.message_id, m);
    add(m.message_id);
    const first = firstOfThread.get(m.thread_id);
    if (first === undefined) firstOfThread.set(m.thread_id, m.message_id);
    else union(first, m.message_id);
    if (m.parent_id) union(m.message_id, m.parent_id);
  }
  for (const id of ids) add(id);
  for (const [child, parent] of newParent) union(child, parent);

  const parentOf = (id: string) => stored.get(id)?.parent_id ?? newParent.get(id) ?? null;
  const components = new Map<string, string[]>();
  for (const id of up.keys()) {
    const r = find(id);
    const list = components.get(r);
    if (list) list.push(id);
    else components.set(r, [id]);
  }
  const rootOf = new Map<string, string>(); // component representative -> conversation root
  for (const [rep, list] of components) {
    const parentless = list.filter((id) => parentOf(id) === null).sort();
    rootOf.set(rep, parentless[0] ?? [...list].sort()[0]);
  }

  const write: LinkRow[] = [];
  for (const id of up.keys()) {
    const root = rootOf.get(find(id))!;
    const threadId = emailThreadId(root);
    const before = stored.get(id);
    const parent = parentOf(id);
    if (before && before.thread_id !== threadId) merged.set(before.thread_id, threadId);
    if (!before || before.thread_id !== threadId || before.parent_id !== parent) write.push({ message_id: id, parent_id: parent, thread_id: threadId });
  }
  if (write.length) {
    write.sort((a, b) => (a.message_id < b.message_id ? -1 : 1));
    await tx.query(
      `INSERT INTO email_thread_messages AS t (message_id, parent_id, thread_id)
       SELECT * FROM unnest($1::text[], $2::text[], $3::uuid[])
       ON CONFLICT (message_id) DO UPDATE SET thread_id = EXCLUDED.thread_id,
              parent_id = coalesce(t.parent_id, EXCLUDED.parent_id)`,
      [write.map((w) => w.message_id), write.map((w) => w.parent_id), write.map((w) => w.thread_id)],
    );
  }
  const assigned = links.map((l) => {
    if (!l) return null;
    const root = rootOf.get(find(l.id ?? l.root!))!;
    return { threadId: emailThreadId(root), root };
  });
  return { assigned, merged };
}

/** Moves the documents of merged threads into the threads that absorbed them and drops the empty threads. */
export async function mergeThreads(tx: Queryable, merged: Map<string, string>): Promise<void> {
  if (merged.size === 0) return;
  const olds = [...merged.keys()].sort();
  await tx.query(
    `UPDATE documents d SET thread_id = x.new_id, updated_at = now()
       FROM unnest($1::uuid[], $2::uuid[]) AS x(old_id, new_id) WHERE d.thread_id = x.old_id`,
    [olds, olds.map((o) => merged.get(o)!)],
  );
  await tx.query('DELETE FROM threads WHERE thread_id = ANY($1::uuid[])', [olds]);
}

/**
 * Recomputes what a thread shows from its active documents: title (the root's subject, else the
 * earliest message's, without Re:/Fwd:), participants (everyone on any message, first appearance
 * wins the display name), participant count, message count, first and last message times.
 */
export async function refreshEmailThreads(tx: Queryable, threadIds: string[]): Promise<void> {
  if (threadIds.length === 0) return;
  await tx.query(
    `WITH d AS (
       SELECT thread_id, title, content_timestamp, people, metadata->>'message_id' AS mid, doc_id
         FROM documents WHERE thread_id = ANY($1::uuid[]) AND is_active_version),
     stats AS (
       SELECT thread_id, min(content_timestamp) AS first_at, max(content_timestamp) AS last_at, count(*)::int AS n
         FROM d GROUP BY thread_id),
     people AS (
       SELECT DISTINCT ON (d.thread_id, lower(p->>'identifier')) d.thread_id, d.content_timestamp, d.doc_id,
              jsonb_strip_nulls(jsonb_build_object('identifier', lower(p->>'identifier'),
                'identifier_type', p->>'identifier_type', 'display_name', p->>'display_name')) AS person
         FROM d, jsonb_array_elements(CASE WHEN jsonb_typeof(d.people) = 'array' THEN d.people ELSE '[]'::jsonb END) p
        WHERE p->>'identifier' IS NOT NULL
        ORDER BY d.thread_id, lower(p->>'identifier'), (p->>'display_name' IS NULL), d.content_timestamp, d.doc_id),
     parts AS (
       SELECT thread_id, jsonb_agg(person ORDER BY content_timestamp, doc_id, person->>'identifier') AS list, count(*)::int AS n
         FROM people GROUP BY thread_id),
     titles AS (
       -- The root's row by its key, per document: a join let the planner hash the whole threads table per batch.
       SELECT DISTINCT ON (d.thread_id) d.thread_id, d.title
         FROM d
        ORDER BY d.thread_id,
                 (d.mid IS NOT DISTINCT FROM (SELECT t.metadata->>'root_message_id' FROM threads t WHERE t.thread_id = d.thread_id)) DESC,
                 d.content_timestamp, d.doc_id)
     UPDATE threads t SET
       title = regexp_replace(coalesce(ti.title, t.title, ''), '^(\\s*(re|fwd?|aw|sv|antw|wg|tr|rif)(\\s*\\[[0-9]+\\])?\\s*:\\s*)+', '', 'i'),
       participants = coalesce(p.list, '[]'::jsonb),
       participant_count = coalesce(p.n, 0),
       first_message_at = s.first_at,
       last_message_at = s.last_at,
       metadata = t.metadata || jsonb_build_object('message_count', s.n),
       updated_at = now()
       FROM stats s LEFT JOIN parts p ON p.thread_id = s.thread_id LEFT JOIN titles ti ON ti.thread_id = s.thread_id
      WHERE t.thread_id = s.thread_id`,
    [[...new Set(threadIds)].sort()],
  );
}

/** True while stored email still has to be re-threaded (set by migration 090, cleared by rethreadEmail). */
export async function emailRethreadPending(db: Queryable): Promise<boolean> {
  const r = await db.query('SELECT 1 FROM system_settings WHERE key = $1', [RETHREAD_SETTING]);
  return r.rows.length > 0;
}

export interface RethreadProgress {
  done: number;
  total: number;
}

/**
 * Re-threads every stored email document (all versions) with the conversation rule, in pages of
 * `pageSize` documents, one transaction each, oldest first; then refreshes every email thread and
 * drops the threads left empty. Safe to run again (the result is the same), and beside ingestion.
 */
export async function rethreadEmail(
  db: Database,
  opts: { pageSize?: number; onProgress?: (p: RethreadProgress) => void; signal?: AbortSignal } = {},
): Promise<RethreadProgress & { threads: number; finished: boolean }> {
  const pageSize = opts.pageSize ?? 500;
  const total = Number(
    (await db.query<{ n: string }>('SELECT count(*) AS n FROM documents WHERE source_type = ANY($1::text[])', [EMAIL_SOURCE_TYPES])).rows[0].n,
  );
  let done = 0;
  let after: { ts: string; id: string } | null = null;
  const touched = new Set<string>();
  for (;;) {
    // Stopped (server shutting down): the marker stays, the next start continues from the beginning.
    if (opts.signal?.aborted) return { done, total, threads: touched.size, finished: false };
    const page: { doc_id: string; ts: string; source_type: string; metadata: Record<string, unknown>; thread_id: string | null }[] = (
      await db.query<{ doc_id: string; ts: string; source_type: string; metadata: Record<string, unknown>; thread_id: string | null }>(
        `SELECT doc_id, to_char(content_timestamp AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS ts, source_type,
                metadata, thread_id
           FROM documents
          WHERE source_type = ANY($1::text[])
            AND ($2::timestamptz IS NULL OR (content_timestamp, doc_id) > ($2::timestamptz, $3::uuid))
          ORDER BY content_timestamp, doc_id LIMIT $4`,
        [EMAIL_SOURCE_TYPES, after?.ts ?? null, after?.id ?? null, pageSize],
      )
    ).rows;
    if (page.length === 0) break;
    await db.transaction(async (tx) => {
      const { assigned, merged } = await linkEmailMessages(tx, page.map((d) => emailLinksOf(d.source_type, d.metadata)));
      const rows = page
        .map((d, i) => ({ d, a: assigned[i] }))
        .filter((x): x is { d: (typeof page)[number]; a: EmailThreadAssignment } => x.a !== null);
      await upsertEmailThreadRows(tx, rows.map((x) => x.a));
      await mergeThreads(tx, merged);
      const changed = rows.filter((x) => x.d.thread_id !== x.a.threadId);
      if (changed.length) {
        await tx.query(
          `UPDATE documents d SET thread_id = x.t, updated_at = now() FROM unnest($1::uuid[], $2::uuid[]) AS x(id, t)
            WHERE d.doc_id = x.id`,
          [changed.map((x) => x.d.doc_id), changed.map((x) => x.a.threadId)],
        );
      }
      for (const x of rows) touched.add(x.a.threadId);
      for (const [old, next] of merged) {
        touched.delete(old);
        touched.add(next);
      }
    });
    done += page.length;
    after = { ts: page[page.length - 1].ts, id: page[page.length - 1].doc_id };
    opts.onProgress?.({ done, total });
  }
  const ids = [...touched].sort();
  for (let i = 0; i < ids.length; i += 1000) {
    await db.transaction((tx) => refreshEmailThreads(tx, ids.slice(i, i + 1000)));
  }
  await db.query(
    `DELETE FROM threads t WHERE t.source_type = 'email' AND NOT EXISTS (SELECT 1 FROM documents d WHERE d.thread_id = t.thread_id)`,
  );
  await db.query('DELETE FROM system_settings WHERE key = $1', [RETHREAD_SETTING]);
  return { done, total, threads: ids.length, finished: true };
}

/** Thread rows for assignments that have no row yet (the catalog's usual path stores them at ingest). */
async function upsertEmailThreadRows(tx: Queryable, assigned: EmailThreadAssignment[]): Promise<void> {
  const byId = new Map(assigned.map((a) => [a.threadId, a.root]));
  if (byId.size === 0) return;
  const ids = [...byId.keys()].sort();
  await tx.query(
    `INSERT INTO threads (thread_id, external_id, source_type, metadata, first_message_at, last_message_at)
     SELECT x.id, x.ext, 'email', jsonb_build_object('root_message_id', x.root), now(), now()
       FROM unnest($1::uuid[], $2::text[], $3::text[]) AS x(id, ext, root)
     ON CONFLICT DO NOTHING`,
    [ids, ids.map((id) => emailThreadExternalId(byId.get(id)!)), ids.map((id) => byId.get(id)!)],
  );
}
