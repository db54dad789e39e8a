/**
 * What a calendar event or a task says about itself on its document page (issue 42): when, where, who and how it
 * repeats, in words; a task's due date, completion and priority. Everything shown is stored data, rendered as
 * text (never as HTML). Reads the document's metadata as the calendar importer writes it (src/calendar/documents.ts).
 */
import { When } from './components.tsx';

type Meta = Record<string, unknown>;
const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

function person(p: unknown): string | null {
  if (!p || typeof p !== 'object') return null;
  const { name, email } = p as { name?: unknown; email?: unknown };
  const n = str(name);
  const e = str(email);
  return n && e ? `${n} <${e}>` : (n ?? e);
}

const ANSWERS: Record<string, string> = { accepted: 'accepted', declined: 'declined', tentative: 'tentative', 'needs-action': 'not answered' };

export function CalendarFacts({ sourceType, metadata, due, completedAt }: { sourceType: string; metadata: unknown; due?: string | null; completedAt?: string | null }) {
  const m = (metadata && typeof metadata === 'object' ? metadata : {}) as Meta;
  if (sourceType === 'calendar_event') {
    const attendees = Array.isArray(m.attendees) ? m.attendees : [];
    const status = str(m.status);
    return (
      <>
        {str(m.when) && (
          <>
            <dt>When</dt>
            <dd>{str(m.when)}</dd>
          </>
        )}
        {str(m.recurrence) && (
          <>
            <dt>Repeats</dt>
            <dd>{str(m.recurrence)}</dd>
          </>
        )}
        {str(m.location) && (
          <>
            <dt>Where</dt>
            <dd>
              <bdi>{str(m.location)}</bdi>
            </dd>
          </>
        )}
        {person(m.organizer) && (
          <>
            <dt>Organizer</dt>
            <dd>
              <bdi>{person(m.organizer)}</bdi>
            </dd>
          </>
        )}
        {attendees.length > 0 && (
          <>
            <dt>Attendees</dt>
            <dd>
              <ul class="inline">
                {attendees.map((a, i) => {
                  const answer = ANSWERS[String((a as Meta)?.partstat ?? '')];
                  return (
                    <li key={i}>
                      <bdi>{person(a) ?? '?'}</bdi>
                      {answer && <span class="role"> ({answer})</span>}
                    </li>
                  );
                })}
              </ul>
            </dd>
          </>
        )}
        {status && status !== 'confirmed' && (
          <>
            <dt>Status</dt>
            <dd>{status}</dd>
          </>
        )}
      </>
    );
  }
  if (sourceType === 'reminder' || sourceType === 'host_reminders') {
    const priority = typeof m.priority === 'number' ? m.priority : null;
    return (
      <>
        {due && (
          <>
            <dt>Due</dt>
            <dd>
              <When iso={due} withTime />
            </dd>
          </>
        )}
        {completedAt && (
          <>
            <dt>Completed</dt>
            <dd>
              <When iso={completedAt} withTime />
            </dd>
          </>
        )}
        {priority !== null && (
          <>
            <dt>Priority</dt>
            <dd>{priority <= 4 ? 'high' : priority === 5 ? 'medium' : 'low'}</dd>
          </>
        )}
        {str(m.status) && (
          <>
            <dt>Status</dt>
            <dd>{str(m.status)}</dd>
          </>
        )}
        {str(m.recurrence) && (
          <>
            <dt>Repeats</dt>
            <dd>{str(m.recurrence)}</dd>
          </>
        )}
      </>
    );
  }
  return null;
}
