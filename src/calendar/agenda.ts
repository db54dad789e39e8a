/**
 * The agenda (issue 42): what happens between two instants, by start. An event is in it when it overlaps the range:
 * a recurring series by each of its stored occurrences (calendar_occurrences), a multi-day event by its one row
 * there, any other event by its own start and end (metadata event_start / event_end). A task is in it when it is
 * due in the range. Active versions only; at most AGENDA_MAX_ENTRIES, then `truncated`.
 */
import type { Queryable } from '../db/types.ts';
import { AGENDA_MAX_ENTRIES, type AgendaAnswerT, type AgendaEntryT } from '../schemas/calendar.ts';

interface AgendaRow {
  doc_id: string;
  kind: 'event' | 'task';
  title: string | null;
  starts_at: Date;
  ends_at: Date;
  all_day: boolean | null;
  recurring: boolean;
  location: string | null;
  status: string | null;
  completed: boolean | null;
}

export async function agenda(db: Queryable, from: Date, to: Date): Promise<AgendaAnswerT> {
  // Half-open [from, to): an event overlaps it when it starts before `to` and ends after `from`; one that takes
  // no time (end = start) is in it when it starts in it.
  const r = await db.query<AgendaRow>(
    `WITH entries AS (
       SELECT d.doc_id, 'event' AS kind, d.title, o.starts_at, o.ends_at, (d.metadata->>'all_day')::boolean AS all_day,
              (d.metadata->>'recurrence' IS NOT NULL) AS recurring, d.metadata->>'location' AS location, d.metadata->>'status' AS status,
              NULL::boolean AS completed
         FROM calendar_occurrences o JOIN documents d ON d.doc_id = o.doc_id AND d.is_active_version
        WHERE o.starts_at < $2 AND (o.ends_at > $1 OR o.starts_at >= $1)
       UNION ALL
       SELECT d.doc_id, 'event', d.title, x.starts_at, x.ends_at, (d.metadata->>'all_day')::boolean, false,
              d.metadata->>'location', d.metadata->>'status', NULL
         FROM documents d
         CROSS JOIN LATERAL (SELECT (d.metadata->>'event_start')::timestamptz AS starts_at,
                                    coalesce((d.metadata->>'event_end')::timestamptz, (d.metadata->>'event_start')::timestamptz) AS ends_at) x
        WHERE d.source_type = 'calendar_event' AND d.is_active_version AND d.metadata ? 'event_start'
          AND NOT EXISTS (SELECT 1 FROM calendar_occurrences o WHERE o.doc_id = d.doc_id)
          AND x.starts_at < $2 AND (x.ends_at > $1 OR x.starts_at >= $1)
       UNION ALL
       SELECT d.doc_id, 'task', d.title, d.due_date, d.due_date, false, (d.metadata->>'recurrence' IS NOT NULL),
              d.metadata->>'location', d.metadata->>'status', coalesce(d.is_completed, false)
         FROM documents d
        WHERE d.source_type = 'reminder' AND d.is_active_version AND d.has_due_date AND d.due_date >= $1 AND d.due_date < $2
     )
     SELECT * FROM entries ORDER BY starts_at, ends_at, title, doc_id LIMIT $3`,
    [from.toISOString(), to.toISOString(), AGENDA_MAX_ENTRIES + 1],
  );
  const entries: AgendaEntryT[] = r.rows.slice(0, AGENDA_MAX_ENTRIES).map((row) => ({
    doc_id: row.doc_id,
    kind: row.kind,
    title: row.title ?? '(no title)',
    starts_at: new Date(row.starts_at).toISOString(),
    ends_at: new Date(row.ends_at).toISOString(),
    all_day: row.all_day === true,
    recurring: row.recurring === true,
    location: row.location,
    status: row.status,
    completed: row.completed,
  }));
  return { from: from.toISOString(), to: to.toISOString(), entries, truncated: r.rows.length > AGENDA_MAX_ENTRIES };
}
