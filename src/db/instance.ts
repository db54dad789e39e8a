/**
 * The id of this memex instance: a random UUID made the first time a database is used and kept in it
 * (system_settings key `instance_id`). A new data directory or a new PostgreSQL database is a new instance, so a
 * client's memory of "already uploaded" (memex ingest's state file) is only trusted for the instance it was made
 * against.
 */
import crypto from 'node:crypto';
import type { Queryable } from './types.ts';

const KEY = 'instance_id';

export async function serverInstanceId(db: Queryable): Promise<string> {
  await db.query(
    `INSERT INTO system_settings (key, value) VALUES ($1, to_jsonb($2::text)) ON CONFLICT (key) DO NOTHING`,
    [KEY, crypto.randomUUID()],
  );
  const r = await db.query<{ id: string }>(`SELECT value #>> '{}' AS id FROM system_settings WHERE key = $1`, [KEY]);
  return r.rows[0].id;
}
