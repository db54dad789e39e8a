/**
 * GET /v1/context/general (spec 4.3 rule 6, spec-notes 4.3): counts over active documents, the
 * busiest threads, and recent highlights that carry readable text. Threads of automated senders (a
 * bank's statements, a newsletter: src/relationships/automated.ts) are left out of the busiest unless
 * asked for, and marked when shown.
 */
import type { Database } from '../db/types.ts';
import { AUTOMATED_PEOPLE_CTE, automatedDocumentSql } from '../relationships/automated.ts';
import { BULK_SENDER_WORDS } from '../mail/noise.ts';

const INVISIBLE = /[\uFFFD\uFFFC\u200B\u200C\u200D\uFEFF\u2028\u2029]|\p{C}/gu;
const VISIBLE = /[\p{L}\p{N}\p{P}\p{S}]/u;

/**
 * Text worth showing: after NFKC and removing replacement/object characters, zero-width
 * characters, control/format characters and line separators, something must remain that is a
 * letter, number, punctuation or symbol (an emoji alone counts).
 */
export function isValidText(text: string | null | undefined): boolean {
  if (typeof text !== 'string') return false;
  const cleaned = text.normalize('NFKC').replace(INVISIBLE, '').trim();
  return cleaned.length > 0 && VISIBLE.test(cleaned);
}

export interface GeneralContext {
  total_threads: number;
  total_messages: number;
  last_message_ts: string | null;
  top_threads: {
    thread_id: string;
    title: string | null;
    source_type: string;
    message_count: number;
    last_message_ts: string | null;
    /** Every message of it (in the window) is machine mail or from an automated sender. */
    automated: boolean;
  }[];
  recent_highlights: {
    doc_id: string;
    thread_id: string | null;
    source_type: string;
    title: string | null;
    ts: string;
    sender: string | null;
    text: string;
    people: unknown[];
  }[];
  /** Active documents per UTC day over the 30 days up to last_message_ts (days with none omitted). */
  timeline: { date: string; count: number }[];
}

const iso = (v: Date | string | null) => (v === null ? null : new Date(v).toISOString());

function senderOf(people: unknown): string | null {
  if (!Array.isArray(people)) return null;
  const s = people.find((p) => p && typeof p === 'object' && (p as any).role === 'sender') as any;
  if (!s) return null;
  return (typeof s.display_name === 'string' && s.display_name.trim()) || s.identifier || null;
}

/** Narrows the summary to documents since `days` ago (now) and/or one source type. */
export interface ContextFilter {
  days?: number;
  source_type?: string;
  /** Also list automated senders' threads among the busiest (default: left out). */
  include_automated?: boolean;
}

/** Busiest threads are picked among this many with the most documents (bounds the automated-sender test). */
const BUSIEST_CANDIDATES = 200;
const BUSIEST = 5;

export async function generalContext(db: Database, filter: ContextFilter = {}): Promise<GeneralContext> {
  const params: unknown[] = [];
  /** The filter's condition on documents (columns of alias `d`, or unqualified). */
  const whereOf = (d = '') => {
    let w = `${d}is_active_version`;
    if (filter.days !== undefined) w += ` AND ${d}content_timestamp >= $1::timestamptz`;
    if (filter.source_type !== undefined) w += ` AND ${d}source_type = $${filter.days !== undefined ? 2 : 1}`;
    return w;
  };
  if (filter.days !== undefined) params.push(new Date(Date.now() - filter.days * 86_400_000).toISOString());
  if (filter.source_type !== undefined) params.push(filter.source_type);
  const where = whereOf();
  const filtered = params.length > 0;
  const counts = await db.query<{ threads: number; messages: number; last: Date | null }>(
    `SELECT ${filtered ? `(SELECT count(DISTINCT thread_id)::int FROM documents WHERE ${where})` : '(SELECT count(*)::int FROM threads)'} AS threads,
            (SELECT count(*)::int FROM documents WHERE ${where}) AS messages,
            (SELECT max(content_timestamp) FROM documents WHERE ${where}) AS last`,
    params,
  );
  // The busiest candidates by count first (cheap), then which of them are automated (per document, bounded).
  const top = await db.query<{ thread_id: string; title: string | null; source_type: string; n: number; last: Date | null; automated: boolean }>(
    `WITH RECURSIVE ${AUTOMATED_PEOPLE_CTE},
     x AS (SELECT thread_id, count(*)::int AS n, max(content_timestamp) AS last FROM documents
            WHERE ${where} AND thread_id IS NOT NULL GROUP BY thread_id
            ORDER BY count(*) DESC, max(content_timestamp) DESC, thread_id LIMIT ${BUSIEST_CANDIDATES}),
     a AS (SELECT d.thread_id, bool_and(${automatedDocumentSql('d', `$${params.length + 1}`)}) AS automated
             FROM documents d JOIN x ON x.thread_id = d.thread_id
            WHERE ${whereOf('d.')}
            GROUP BY d.thread_id)
     SELECT t.thread_id, t.title, t.source_type, x.n, x.last, coalesce(a.automated, false) AS automated
       FROM x JOIN threads t ON t.thread_id = x.thread_id LEFT JOIN a ON a.thread_id = x.thread_id
      ${filter.include_automated ? '' : 'WHERE NOT coalesce(a.automated, false)'}
      ORDER BY x.n DESC, x.last DESC, x.thread_id LIMIT ${BUSIEST}`,
    [...params, [...BULK_SENDER_WORDS]],
  );
  const recent = await db.query<{
    doc_id: string;
    thread_id: string | null;
    source_type: string;
    title: string | null;
    content_timestamp: Date;
    text: string;
    people: unknown[];
  }>(
    `SELECT doc_id, thread_id, source_type, title, content_timestamp, left(text, 2000) AS text, people
       FROM documents WHERE ${where} AND btrim(text) <> ''
      ORDER BY content_timestamp DESC, doc_id LIMIT 30`,
    params,
  );
  const last = counts.rows[0].last;
  const timeline = last
    ? await db.query<{ date: string; count: number }>(
        `SELECT to_char(date_trunc('day', content_timestamp AT TIME ZONE 'UTC'), 'YYYY-MM-DD') AS date, count(*)::int AS count
           FROM documents WHERE ${where} AND content_timestamp > $${params.length + 1}::timestamptz - interval '30 days'
          GROUP BY 1 ORDER BY 1`,
        [...params, last],
      )
    : { rows: [] };
  return {
    total_threads: counts.rows[0].threads,
    total_messages: counts.rows[0].messages,
    last_message_ts: iso(last),
    top_threads: top.rows.map((t) => ({
      thread_id: t.thread_id,
      title: t.title,
      source_type: t.source_type,
      message_count: t.n,
      last_message_ts: iso(t.last),
      automated: t.automated,
    })),
    recent_highlights: recent.rows
      .filter((r) => isValidText(r.text))
      .slice(0, 5)
      .map((r) => ({
        doc_id: r.doc_id,
        thread_id: r.thread_id,
        source_type: r.source_type,
        title: r.title,
        ts: new Date(r.content_timestamp).toISOString(),
        sender: senderOf(r.people),
        text: r.text.length > 500 ? `${r.text.slice(0, 500)}…` : r.text,
        people: Array.isArray(r.people) ? r.people : [],
      })),
    timeline: timeline.rows,
  };
}
