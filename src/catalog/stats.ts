/**
 * Counts over active documents for the web UI's timeline and sources pages: activity per time
 * bucket and source, and documents per source and account with their last ingest. Read-only.
 */
import type { Queryable } from '../db/types.ts';
import type { TimelineBucket } from '../schemas/stats.ts';

export interface TimelineOptions {
  bucket: TimelineBucket;
  /** Inclusive start, exclusive end (ISO); both optional. */
  start?: string;
  end?: string;
}

export async function timeline(db: Queryable, o: TimelineOptions) {
  const params: unknown[] = [o.bucket];
  const where = ['is_active_version', 'deleted_at IS NULL'];
  const occ: string[] = [];
  if (o.start) {
    params.push(o.start);
    where.push(`content_timestamp >= $${params.length}::timestamptz`);
    occ.push(`o.starts_at >= $${params.length}::timestamptz`);
  }
  if (o.end) {
    params.push(o.end);
    where.push(`content_timestamp < $${params.length}::timestamptz`);
    occ.push(`o.starts_at < $${params.length}::timestamptz`);
  }
  // A recurring event counts on each day it occurs (calendar_occurrences, issue 42); its first start is the
  // document's own content_timestamp, counted once.
  const r = await db.query<{ start: string; source_type: string; count: number }>(
    `WITH at AS (
       SELECT content_timestamp AS t, source_type FROM documents WHERE ${where.join(' AND ')}
       UNION ALL
       SELECT o.starts_at, d.source_type FROM calendar_occurrences o JOIN documents d ON d.doc_id = o.doc_id
        WHERE d.is_active_version AND d.deleted_at IS NULL AND o.starts_at <> d.content_timestamp${occ.map((c) => ` AND ${c}`).join('')})
     SELECT to_char(date_trunc($1, t AT TIME ZONE 'UTC'), 'YYYY-MM-DD"T"HH24:MI:SS.000"Z"') AS start,
            source_type, count(*)::int AS count
       FROM at GROUP BY 1, 2 ORDER BY 1, 2`,
    params,
  );
  // Bucket starts are formatted by the database (UTC wall clock), so no driver reads a zone-less timestamp.
  return r.rows;
}

export async function sourceSummary(db: Queryable) {
  const r = await db.query<{
    source_type: string;
    source_account_id: string | null;
    documents: number;
    with_attachments: number;
    last_ingested_at: Date | null;
    last_content_at: Date | null;
  }>(
    `SELECT source_type, source_account_id, count(*)::int AS documents,
            count(*) FILTER (WHERE has_attachments)::int AS with_attachments,
            max(ingested_at) AS last_ingested_at, max(content_timestamp) AS last_content_at
       FROM documents WHERE is_active_version AND deleted_at IS NULL
      GROUP BY 1, 2 ORDER BY 3 DESC, 1, 2`,
  );
  const iso = (d: Date | null) => (d ? new Date(d).toISOString() : null);
  return r.rows.map((x) => ({ ...x, last_ingested_at: iso(x.last_ingested_at), last_content_at: iso(x.last_content_at) }));
}
