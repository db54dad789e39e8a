/**
 * Agenda (issue 42): a week of events and tasks, day by day, from GET /v1/calendar/agenda. Each occurrence of a
 * recurring event is listed on its day; an event spanning days is listed on each of them; a task on the day it is
 * due. Titles link to the document. The week is in the address (#/agenda?from=YYYY-MM-DD), so it can be linked.
 * Days and times are shown in the browser's time zone.
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response type: a type-only import, erased in the build.
import type { AgendaAnswerT, AgendaEntryT } from '../../../src/schemas/calendar.ts';
import { api, qs } from '../api.ts';
import { ErrorNote, Page } from '../components.tsx';
import { href } from '../router.ts';

const DAY_MS = 86_400_000;

/** Local midnight of the Monday of the week holding `d`. */
function mondayOf(d: Date): Date {
  const m = new Date(d.getFullYear(), d.getMonth(), d.getDate());
  m.setDate(m.getDate() - ((m.getDay() + 6) % 7));
  return m;
}
const ymd = (d: Date) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}-${String(d.getDate()).padStart(2, '0')}`;
function parseDay(s: string | null): Date | null {
  const m = s ? /^(\d{4})-(\d{2})-(\d{2})$/.exec(s) : null;
  if (!m) return null;
  const d = new Date(Number(m[1]), Number(m[2]) - 1, Number(m[3]));
  return Number.isNaN(d.getTime()) ? null : d;
}
function addDays(d: Date, n: number): Date {
  const x = new Date(d);
  x.setDate(x.getDate() + n);
  return x;
}

/** The entries that happen on the local day starting at `day` (an all-day event by its UTC dates, as stored). */
function onDay(entries: AgendaEntryT[], day: Date): AgendaEntryT[] {
  const start = day.getTime();
  const end = addDays(day, 1).getTime();
  const utcDay = Date.UTC(day.getFullYear(), day.getMonth(), day.getDate());
  return entries.filter((e) => {
    const s = Date.parse(e.starts_at);
    const f = Date.parse(e.ends_at);
    if (e.all_day) return s < utcDay + DAY_MS && (f > utcDay || s >= utcDay);
    return s < end && (f > start || s >= start);
  });
}

const timeFmt = new Intl.DateTimeFormat(undefined, { hour: '2-digit', minute: '2-digit' });
const dayFmt = new Intl.DateTimeFormat(undefined, { weekday: 'long', day: 'numeric', month: 'long' });

function Entry({ e }: { e: AgendaEntryT }) {
  const when = e.all_day ? 'all day' : e.kind === 'task' ? `due ${timeFmt.format(new Date(e.starts_at))}` : timeFmt.format(new Date(e.starts_at));
  return (
    <li class={`agenda-entry ${e.kind}${e.completed ? ' done' : ''}${e.status === 'cancelled' ? ' cancelled' : ''}`}>
      <span class="agenda-when">{when}</span>{' '}
      <a href={href(`doc/${e.doc_id}`)}>{e.title}</a>
      {e.location && <span class="agenda-where"> · {e.location}</span>}
      {e.recurring && <span class="agenda-note"> · repeats</span>}
      {e.kind === 'task' && <span class="agenda-note"> · {e.completed ? 'done' : 'to do'}</span>}
      {e.status === 'cancelled' && <span class="agenda-note"> · cancelled</span>}
    </li>
  );
}

export function AgendaPage({ params }: { params: URLSearchParams }) {
  const week = mondayOf(parseDay(params.get('from')) ?? new Date());
  const from = ymd(week);
  const [answer, setAnswer] = useState<AgendaAnswerT | null>(null);
  const [error, setError] = useState<unknown>(null);

  useEffect(() => {
    let live = true;
    setAnswer(null);
    setError(null);
    // The local week as instants: from this Monday's local midnight to the next one's.
    const range = { from: week.toISOString(), to: addDays(week, 7).toISOString() };
    api<AgendaAnswerT>(`/v1/calendar/agenda${qs(range)}`)
      .then((a) => live && setAnswer(a))
      .catch((err) => live && setError(err));
    return () => {
      live = false;
    };
  }, [from]);

  const days = Array.from({ length: 7 }, (_, i) => addDays(week, i));
  const nav = (
    <nav class="agenda-nav" aria-label="Weeks">
      <a href={href('agenda', { from: ymd(addDays(week, -7)) })}>← Previous week</a>
      <a href={href('agenda')}>This week</a>
      <a href={href('agenda', { from: ymd(addDays(week, 7)) })}>Next week →</a>
    </nav>
  );
  return (
    <Page title={`Week of ${dayFmt.format(week)}`} actions={nav}>
      <ErrorNote error={error} />
      {!answer && !error && <p aria-live="polite">Loading the week's events…</p>}
      {answer && answer.entries.length === 0 && <p class="empty">Nothing in this week: no event and no task due.</p>}
      {answer && answer.entries.length > 0 && (
        <ol class="agenda">
          {days.map((d) => {
            const items = onDay(answer.entries, d);
            return (
              <li key={ymd(d)} class="agenda-day" data-day={ymd(d)}>
                <h2>{dayFmt.format(d)}</h2>
                {items.length ? (
                  <ul>
                    {items.map((e) => (
                      <Entry key={`${e.doc_id}@${e.starts_at}`} e={e} />
                    ))}
                  </ul>
                ) : (
                  <p class="agenda-free">Nothing</p>
                )}
              </li>
            );
          })}
        </ol>
      )}
      {answer?.truncated && <p class="hint">More than 2,000 entries this week: the first 2,000 are shown.</p>}
    </Page>
  );
}
