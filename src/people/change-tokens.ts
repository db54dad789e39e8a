/**
 * Change tokens of contact syncs (spec 4.4): the last token a device sent for a source, kept per
 * (source, device_id), so the host agent can ask for changes since then.
 */
import type { Queryable } from '../db/types.ts';

export async function getChangeToken(db: Queryable, source: string, deviceId: string) {
  const r = await db.query<{ change_token_b64: string | null; updated_at: Date }>(
    'SELECT change_token_b64, updated_at FROM source_change_tokens WHERE source = $1 AND device_id = $2',
    [source, deviceId],
  );
  const row = r.rows[0];
  return row ? { change_token: row.change_token_b64, updated_at: new Date(row.updated_at).toISOString() } : null;
}

/** Stores a sync's token for (source, device_id); a null never erases the one stored before. */
export async function saveChangeToken(db: Queryable, source: string, deviceId: string, token: string | null): Promise<void> {
  await db.query(
    `INSERT INTO source_change_tokens (source, device_id, change_token_b64, updated_at) VALUES ($1, $2, $3, now())
     ON CONFLICT (source, device_id) DO UPDATE
       SET change_token_b64 = coalesce(EXCLUDED.change_token_b64, source_change_tokens.change_token_b64),
           updated_at = now()`,
    [source, deviceId, token],
  );
}
