/**
 * Thread upserts at ingest (spec 2.2; rules of spec-notes A2.2): new non-null values win, the
 * participant list is replaced only by a non-empty one, metadata is merged, and the first/last
 * message times widen to cover the new documents. Set-based: one statement for all threads of a
 * batch, in a stable order so concurrent batches lock rows in the same order.
 */
import type { Queryable } from '../db/types.ts';
import { baseSubject, emailThreadExternalId } from '../mail/thread.ts';
import { isUuid, newId } from '../util/ids.ts';
import { emailLinksOf, linkEmailMessages, mergeThreads } from './email-threads.ts';
import type { CatalogDocumentRequest } from './types.ts';

interface ThreadRow {
  thread_id: string;
  source_type: string;
  source_provider: string | null;
  source_account_id: string | null;
  external_id: string;
  title: string | null;
  participants: unknown[];
  thread_type: string | null;
  is_group: boolean | null;
  participant_count: number | null;
  metadata: Record<string, unknown>;
  first_message_at: string;
  last_message_at: string;
}

const identityKey = (t: { source_type: string; source_provider: string | null; source_account_id: string | null; external_id: string }) =>
  [t.source_type, t.source_provider ?? '', t.source_account_id ?? '', t.external_id].join('\u001f');

const minIso = (a: string, b: string) => (Date.parse(a) <= Date.parse(b) ? a : b);
const maxIso = (a: string, b: string) => (Date.parse(a) >= Date.parse(b) ? a : b);

/**
 * The thread id of each request (null when it has none or names an unknown thread), and the email
 * threads touched (their counts and participants are refreshed once the documents are stored). Email
 * documents get the conversation the catalog links them into (email-threads.ts), whatever thread the
 * client proposed.
 */
export async function resolveThreads(tx: Queryable, input: CatalogDocumentRequest[]): Promise<{ ids: (string | null)[]; emailThreads: string[] }> {
  const { assigned, merged } = await linkEmailMessages(tx, input.map((r) => emailLinksOf(r.source_type, r.metadata)));
  const reqs = input.map((req, i) => {
    const a = assigned[i];
    if (!a) return req;
    return {
      ...req,
      thread_id: a.threadId,
      thread: {
        external_id: emailThreadExternalId(a.root),
        source_type: 'email',
        source_provider: null,
        source_account_id: null,
        title: baseSubject(req.title ?? null),
        participants: req.thread?.participants ?? [],
        metadata: { root_message_id: a.root },
      },
    } satisfies CatalogDocumentRequest;
  });
  const out: (string | null)[] = reqs.map(() => null);
  const rows = new Map<string, ThreadRow>();
  const rowOfReq: (string | null)[] = reqs.map(() => null);
  const byIdOnly = new Map<string, { first: string; last: string }>();

  reqs.forEach((req, i) => {
    const t = req.thread;
    const ts = req.content_timestamp;
    const email = assigned[i] !== null;
    if (!t) {
      if (req.thread_id && isUuid(req.thread_id)) {
        const cur = byIdOnly.get(req.thread_id);
        byIdOnly.set(req.thread_id, cur ? { first: minIso(cur.first, ts), last: maxIso(cur.last, ts) } : { first: ts, last: ts });
      }
      return;
    }
    const participants = t.participants ?? [];
    const next: ThreadRow = {
      thread_id: req.thread_id && isUuid(req.thread_id) ? req.thread_id : newId(),
      source_type: t.source_type ?? req.source_type,
      source_provider: email ? null : (t.source_provider ?? req.source_provider ?? null),
      source_account_id: email ? null : (t.source_account_id ?? req.source_account_id ?? null),
      external_id: t.external_id,
      title: t.title ?? null,
      participants,
      thread_type: t.thread_type ?? null,
      is_group: t.is_group ?? null,
      participant_count: t.participant_count ?? (participants.length > 0 ? participants.length : null),
      metadata: t.metadata ?? {},
      first_message_at: t.first_message_at ?? ts,
      last_message_at: t.last_message_at ?? ts,
    };
    const key = identityKey(next);
    const cur = rows.get(key);
    // Several documents of one thread in a batch: combine them the way successive upserts would.
    rows.set(
      key,
      cur
        ? {
            ...cur,
            title: next.title ?? cur.title,
            participants: next.participants.length > 0 ? next.participants : cur.participants,
            thread_type: next.thread_type ?? cur.thread_type,
            is_group: next.is_group ?? cur.is_group,
            participant_count: next.participant_count ?? cur.participant_count,
            metadata: { ...cur.metadata, ...next.metadata },
            first_message_at: minIso(cur.first_message_at, next.first_message_at),
            last_message_at: maxIso(cur.last_message_at, next.last_message_at),
          }
        : next,
    );
    rowOfReq[i] = key;
  });

  if (rows.size > 0) {
    const sorted = [...rows.entries()].sort((a, b) => (a[0] < b[0] ? -1 : 1)).map(([, r]) => r);
    const r = await tx.query<{ thread_id: string; k: string }>(
      `INSERT INTO threads AS t (thread_id, source_type, source_provider, source_account_id, external_id, title,
                                 participants, thread_type, is_group, participant_count, metadata, first_message_at,
                                 last_message_at)
       SELECT thread_id, source_type, source_provider, source_account_id, external_id, title, participants,
              thread_type, is_group, participant_count, metadata, first_message_at, last_message_at
         FROM jsonb_to_recordset($1::jsonb) AS x(thread_id uuid, source_type text, source_provider text,
              source_account_id text, external_id text, title text, participants jsonb, thread_type text,
              is_group boolean, participant_count int, metadata jsonb, first_message_at timestamptz,
              last_message_at timestamptz)
       ON CONFLICT (source_type, (coalesce(source_provider, '')), (coalesce(source_account_id, '')), external_id)
       DO UPDATE SET
         title = coalesce(EXCLUDED.title, t.title),
         participants = CASE WHEN jsonb_array_length(EXCLUDED.participants) > 0 THEN EXCLUDED.participants
                             ELSE t.participants END,
         thread_type = coalesce(EXCLUDED.thread_type, t.thread_type),
         is_group = coalesce(EXCLUDED.is_group, t.is_group),
         participant_count = coalesce(EXCLUDED.participant_count, t.participant_count),
         metadata = t.metadata || EXCLUDED.metadata,
         first_message_at = LEAST(t.first_message_at, EXCLUDED.first_message_at),
         last_message_at = GREATEST(t.last_message_at, EXCLUDED.last_message_at),
         updated_at = now()
       RETURNING thread_id, concat_ws(chr(31), source_type, coalesce(source_provider, ''),
                                      coalesce(source_account_id, ''), external_id) AS k`,
      [JSON.stringify(sorted)],
    );
    const idOf = new Map(r.rows.map((row) => [row.k, row.thread_id]));
    rowOfReq.forEach((key, i) => {
      if (key) out[i] = idOf.get(key) ?? null;
    });
  }

  if (byIdOnly.size > 0) {
    const ids = [...byIdOnly.keys()].sort();
    const r = await tx.query<{ thread_id: string }>(
      `UPDATE threads t SET first_message_at = LEAST(t.first_message_at, x.first),
              last_message_at = GREATEST(t.last_message_at, x.last), updated_at = now()
         FROM unnest($1::uuid[], $2::timestamptz[], $3::timestamptz[]) AS x(id, first, last)
        WHERE t.thread_id = x.id RETURNING t.thread_id`,
      [ids, ids.map((id) => byIdOnly.get(id)!.first), ids.map((id) => byIdOnly.get(id)!.last)],
    );
    // A thread id the catalog does not know is dropped rather than invented.
    const known = new Set(r.rows.map((row) => row.thread_id));
    reqs.forEach((req, i) => {
      if (!req.thread && req.thread_id && known.has(req.thread_id)) out[i] = req.thread_id;
    });
  }
  // Threads a new message linked together: their documents move to the surviving thread.
  await mergeThreads(tx, merged);
  const emailThreads = [...new Set(assigned.filter((a) => a !== null).map((a) => a!.threadId))];
  return { ids: out, emailThreads };
}
