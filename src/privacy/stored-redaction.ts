/**
 * Does this store hold redacted text? Before issue 30 the mail collectors and `memex import mail` replaced
 * addresses and numbers by markers before storing, by default; a store filled then still holds those
 * versions until the same mail is imported again (a new version each, src/agent/collectors/email). GET
 * /v1/status (and with it `memex status` and the web UI's Sources page) says how many active documents
 * hold a marker, by source, and what to do about it.
 *
 * The count reads only those rows: migration 147 keeps a partial index of them (its predicate is the WHERE
 * clause below, word for word, so the planner uses it).
 */
import type { Database } from '../db/types.ts';

export interface StoredRedaction {
  /** Active documents whose text holds [EMAIL_REDACTED], [PHONE_REDACTED], [ACCOUNT_REDACTED] or [SSN_REDACTED]. */
  documents: number;
  by_source: { source_type: string; count: number }[];
}

export async function storedRedaction(db: Database): Promise<StoredRedaction> {
  const rows = (
    await db.query<{ source_type: string; n: number }>(
      `SELECT source_type, count(*)::int AS n FROM documents
        WHERE is_active_version AND strpos(text, '_REDACTED]') > 0
        GROUP BY 1 ORDER BY 1`,
    )
  ).rows;
  const by_source = rows.map((r) => ({ source_type: r.source_type, count: Number(r.n) }));
  return { documents: by_source.reduce((s, r) => s + r.count, 0), by_source };
}
