/**
 * Thread upsert at ingest (spec 2.2; rules of spec-notes A2.2): new non-null values win, the
 * participant list is replaced only by a non-empty one, metadata is merged, and the first/last
 * message times widen to cover the new document.
 */
import type { Queryable } from '../db/types.ts';
import { isUuid, newId } from '../util/ids.ts';
import type { CatalogDocumentRequest } from './types.ts';

export async function upsertThread(tx: Queryable, req: CatalogDocumentRequest): Promise<string | null> {
  const t = req.thread;
  const ts = req.content_timestamp;
  if (!t) {
    if (!req.thread_id || !isUuid(req.thread_id)) return null;
    const r = await tx.query<{ thread_id: string }>(
      `UPDATE threads SET first_message_at = LEAST(first_message_at, $2::timestamptz),
              last_message_at = GREATEST(last_message_at, $2::timestamptz), updated_at = now()
        WHERE thread_id = $1 RETURNING thread_id`,
      [req.thread_id, ts],
    );
    // A thread id the catalog does not know is dropped rather than invented.
    return r.rows[0]?.thread_id ?? null;
  }
  const participants = t.participants ?? [];
  const values = [
    t.source_type ?? req.source_type,
    t.source_provider ?? req.source_provider ?? null,
    t.source_account_id ?? req.source_account_id ?? null,
    t.external_id,
    t.title ?? null,
    JSON.stringify(participants),
    t.thread_type ?? null,
    t.is_group ?? null,
    t.participant_count ?? (participants.length > 0 ? participants.length : null),
    JSON.stringify(t.metadata ?? {}),
    t.first_message_at ?? ts,
    t.last_message_at ?? ts,
  ];
  const set = `title = coalesce(EXCLUDED.title, threads.title),
      participants = CASE WHEN jsonb_array_length(EXCLUDED.participants) > 0 THEN EXCLUDED.participants
                          ELSE threads.participants END,
      thread_type = coalesce(EXCLUDED.thread_type, threads.thread_type),
      is_group = coalesce(EXCLUDED.is_group, threads.is_group),
      participant_count = coalesce(EXCLUDED.participant_count, threads.participant_count),
      metadata = threads.metadata || EXCLUDED.metadata,
      first_message_at = LEAST(threads.first_message_at, EXCLUDED.first_message_at),
      last_message_at = GREATEST(threads.last_message_at, EXCLUDED.last_message_at),
      updated_at = now()`;
  // A client-chosen id that already exists names the thread to update.
  if (req.thread_id && isUuid(req.thread_id)) {
    const known = await tx.query<{ thread_id: string }>('SELECT thread_id FROM threads WHERE thread_id = $1', [
      req.thread_id,
    ]);
    if (known.rows[0]) {
      await tx.query(
        `UPDATE threads AS threads SET ${set.replace(/EXCLUDED\./g, 'x.')}
           FROM (SELECT $2::text AS title, $3::jsonb AS participants, $4::text AS thread_type, $5::boolean AS is_group,
                        $6::int AS participant_count, $7::jsonb AS metadata, $8::timestamptz AS first_message_at,
                        $9::timestamptz AS last_message_at) x
          WHERE threads.thread_id = $1`,
        [req.thread_id, ...values.slice(4)],
      );
      return req.thread_id;
    }
  }
  const r = await tx.query<{ thread_id: string }>(
    `INSERT INTO threads (thread_id, source_type, source_provider, source_account_id, external_id, title,
                          participants, thread_type, is_group, participant_count, metadata, first_message_at,
                          last_message_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
     ON CONFLICT (source_type, (coalesce(source_provider, '')), (coalesce(source_account_id, '')), external_id)
     DO UPDATE SET ${set}
     RETURNING thread_id`,
    [req.thread_id && isUuid(req.thread_id) ? req.thread_id : newId(), ...values],
  );
  return r.rows[0].thread_id;
}
