/**
 * Agenda (issue 42): a week of events and tasks, day by day, from GET /v1/calendar/agenda. Each occurrence of a
 * recurring event is listed on its day; an event spanning days is listed on each of them; a task on the day it is
 * due. Titles link to the document. The week is in the address (#/agenda?from=YYYY-MM-DD), so it can be linked.
 * The month (#/agenda?month=YYYY-MM) is a grid of its weeks, Monday first: each day with its first entries and
 * "+ n more", which opens that day's week. Days and times are shown in the browser's time zone.
 */
import { useEffect, useState } from 'preact/hooks';
// The API's own response type: a type-only import, erased in the build.
import type { AgendaAnswerT, AgendaEntryT } from '../../../src/schemas/calendar.ts';
import { call } from '../api.ts';
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

/** Entries shown in one day of the month grid; the rest are "+ n more", a link to the day's week. */
const MONTH_CELL_ENTRIES = 3;
const monthFmt = new Intl.DateTimeFormat(undefined, { month: 'long', year: 'numeric' });
const weekdayFmt = new Intl.DateTimeFormat(undefined, { weekday: 'short' });
const ym = (d: Date) => `${d.getFullYear()}-${String(d.getMonth() + 1).padStart(2, '0')}`;
function parseMonth(s: string | null): Date | null {
  const m = s ? /^(\d{4})-(\d{2})$/.exec(s) : null;
  if (!m || Number(m[2]) < 1 || Number(m[2]) > 12) return null;
  return new Date(Number(m[1]), Number(m[2]) - 1, 1);
}

/** The agenda of a range of local days, from `from` (local midnight) for `days` days. */
function useAgenda(from: Date, days: number): { answer: AgendaAnswerT | null; error: unknown } {
  const [answer, setAnswer] = useState<AgendaAnswerT | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    let live = true;
    setAnswer(null);
    setError(null);
    // Local days as instants: from the first day's local midnight to the midnight after the last.
    const range = { from: from.toISOString(), to: addDays(from, days).toISOString() };
    call('calendarAgenda', { query: range })
      .then((a) => live && setAnswer(a))
      .catch((err) => live && setError(err));
    return () => {
      live = false;
    };
  }, [ymd(from), days]);
  return { answer, error };
}

function MonthView({ month }: { month: Date }) {
  const first = mondayOf(month);
  const next = new Date(month.getFullYear(), month.getMonth() + 1, 1);
  const weeks = Math.ceil((Math.round((next.getTime() - first.getTime()) / DAY_MS) + 1) / 7);
  const { answer, error } = useAgenda(first, weeks * 7);
  const nav = (
    <nav class="agenda-nav" aria-label="Months">
      <a href={href('agenda', { month: ym(new Date(month.getFullYear(), month.getMonth() - 1, 1)) })}>← Previous month</a>
      <a href={href('agenda', { month: ym(new Date()) })}>This month</a>
      <a href={href('agenda', { month: ym(next) })}>Next month →</a>
      <a href={href('agenda', { from: ymd(month) })}>Week view</a>
    </nav>
  );
  return (
    <Page title={monthFmt.format(month)} actions={nav}>
      <ErrorNote error={error} />
      {!answer && !error && <p aria-live="polite">Loading the month's events…</p>}
      {answer && (
        <table class="agenda-month">
          <caption class="visually-hidden">Events and tasks due in {monthFmt.format(month)}, a row per week</caption>
          <thead>
            <tr>
              {Array.from({ length: 7 }, (_, i) => (
                <th key={i} scope="col">{weekdayFmt.format(addDays(first, i))}</th>
              ))}
            </tr>
          </thead>
          <tbody>
            {Array.from({ length: weeks }, (_, w) => (
              <tr key={w}>
                {Array.from({ length: 7 }, (_, i) => {
                  const d = addDays(first, w * 7 + i);
                  const items = onDay(answer.entries, d);
                  const other = d.getMonth() !== month.getMonth();
                  return (
                    <td key={i} class={`agenda-cell${other ? ' other-month' : ''}`} data-day={ymd(d)}>
                      <span class="agenda-date" aria-label={dayFmt.format(d)}>{d.getDate()}</span>
                      {items.length > 0 && (
                        <ul>
                          {items.slice(0, MONTH_CELL_ENTRIES).map((e) => (
                            <li key={`${e.doc_id}@${e.starts_at}`} class={`agenda-entry ${e.kind}${e.completed ? ' done' : ''}${e.status === 'cancelled' ? ' cancelled' : ''}`}>
                              {!e.all_day && <span class="agenda-time">{timeFmt.format(new Date(e.starts_at))} </span>}
                              <a href={href(`doc/${e.doc_id}`)}>{e.title}</a>
                            </li>
                          ))}
                        </ul>
                      )}
                      {items.length > MONTH_CELL_ENTRIES && (
                        <a class="agenda-more" href={href('agenda', { from: ymd(d) })}>+ {items.length - MONTH_CELL_ENTRIES} more</a>
                      )}
                    </td>
                  );
                })}
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {answer?.truncated && <p class="hint">More than 2,000 entries this month: the first 2,000 are shown.</p>}
    </Page>
  );
}

export function AgendaPage({ params }: { params: URLSearchParams }) {
  const month = parseMonth(params.get('month'));
  // Keyed by the range: another month or week is a new view, never one showing the last range's entries.
  if (month) return <MonthView key={ym(month)} month={month} />;
  return <WeekView key={ymd(mondayOf(parseDay(params.get('from')) ?? new Date()))} params={params} />;
}

function WeekView({ params }: { params: URLSearchParams }) {
  const week = mondayOf(parseDay(params.get('from')) ?? new Date());
  const { answer, error } = useAgenda(week, 7);

  const days = Array.from({ length: 7 }, (_, i) => addDays(week, i));
  const nav = (
    <nav class="agenda-nav" aria-label="Weeks">
      <a href={href('agenda', { from: ymd(addDays(week, -7)) })}>← Previous week</a>
      <a href={href('agenda')}>This week</a>
      <a href={href('agenda', { from: ymd(addDays(week, 7)) })}>Next week →</a>
      <a href={href('agenda', { month: ym(week) })}>Month view</a>
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
