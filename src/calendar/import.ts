/**
 * `memex import FILE.ics`: a calendar file's events and tasks to a running server (POST /v1/calendar/ingest).
 * Prints what it found and what was stored; components it cannot read are listed (never a crash, never the
 * rest of the file lost). Options: --url, --token (as every client verb), --source NAME (a name for the
 * calendar, kept as the documents' source_account_id: use it when two calendars share UIDs), --zone ZONE (for
 * floating times), --years-back N / --years-ahead N (the occurrence window).
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { read } from '../config/env.ts';
import { CALENDAR_SETTINGS } from './config.ts';
import { resolveServerTarget, type ServerTarget } from '../client/target.ts';
import type { CalendarIngestResponseT } from '../schemas/calendar.ts';
import { defaultWindow, readIcs, type CalendarFile } from './ics.ts';
import { eventItem, todoItem, type CalendarItem } from './documents.ts';
import { isKnownZone, systemZone } from './zones.ts';


/** Largest .ics file read. */
export const MAX_ICS_BYTES = 256 * 1024 * 1024;
/** Request bodies are cut near this many bytes of JSON (the server's default limit is 10 MB). */
const REQUEST_BYTES = 4 * 1024 * 1024;

export interface ImportIcsOptions {
  /** POSTs one request body; returns the server's answer. */
  post: (body: { items: CalendarItem[] }) => Promise<CalendarIngestResponseT>;
  zone: string;
  account?: string | null;
  yearsBack: number;
  yearsAhead: number;
  now?: number;
}

export interface ImportIcsResult {
  file: CalendarFile;
  totals: CalendarTotals;
  errors: string[];
  /** What was sent, and the server's answer to each by position. */
  items: CalendarItem[];
  results: CalendarIngestResponseT['results'];
}

export type CalendarTotals = { stored: number; unchanged: number; stale: number; skipped: number; failed: number; occurrences: number };

/** Reads the text, sends its events and tasks in bounded requests. */
export async function importIcsText(text: string, o: ImportIcsOptions): Promise<ImportIcsResult> {
  const win = defaultWindow(o.now ?? Date.now(), { years: o.yearsBack }, { years: o.yearsAhead });
  const file = readIcs(text, { zone: o.zone, ...win });
  const map = { zone: o.zone, account: o.account ?? null };
  const items: CalendarItem[] = [...file.events.map((e) => eventItem(e, map)), ...file.todos.map((t) => todoItem(t, map))];
  const sent = await sendCalendarItems(items, o.post);
  return { file, totals: sent.totals, errors: sent.errors, items, results: sent.results };
}

/**
 * Sends calendar items in requests of at most 500 items and about 4 MB; the answers are summed, and each item's
 * own result is given back by its position in `items` (a CalDAV sync needs to know which member failed).
 */
export async function sendCalendarItems(
  items: CalendarItem[],
  post: ImportIcsOptions['post'],
): Promise<{ totals: CalendarTotals; errors: string[]; results: CalendarIngestResponseT['results'] }> {
  const totals: CalendarTotals = { stored: 0, unchanged: 0, stale: 0, skipped: 0, failed: 0, occurrences: 0 };
  const errors: string[] = [];
  const results: CalendarIngestResponseT['results'] = [];
  let start = 0;
  let batch: CalendarItem[] = [];
  let bytes = 0;
  const flush = async () => {
    if (!batch.length) return;
    const r = await post({ items: batch });
    for (const k of Object.keys(totals) as (keyof CalendarTotals)[]) totals[k] += r[k];
    for (const x of r.results) {
      results.push({ ...x, index: start + x.index });
      if (x.error) errors.push(`${batch[x.index].document.title ?? batch[x.index].document.external_id}: ${x.error}`);
    }
    start += batch.length;
    batch = [];
    bytes = 0;
  };
  for (const item of items) {
    const size = JSON.stringify(item).length;
    if (batch.length && (bytes + size > REQUEST_BYTES || batch.length >= 500)) await flush();
    batch.push(item);
    bytes += size;
  }
  await flush();
  return { totals, errors, results };
}

/** "calendar: 120 events (14 recurring), 8 tasks; 2 skipped: …" */
export function summaryLine(file: CalendarFile): string {
  const recurring = file.events.filter((e) => e.recurrence).length;
  const cancelled = file.events.filter((e) => e.status === 'CANCELLED').length;
  const parts = [
    `${file.events.length} ${file.events.length === 1 ? 'event' : 'events'} (${recurring} recurring${cancelled ? `, ${cancelled} cancelled` : ''})`,
    `${file.todos.length} ${file.todos.length === 1 ? 'task' : 'tasks'}`,
  ];
  let line = `calendar${file.name ? ` "${file.name}"` : ''}: ${parts.join(', ')}`;
  if (file.problems.length) {
    const shown = file.problems.slice(0, 3).map((p) => `${p.component}${p.line ? ` at line ${p.line}` : ''}${p.uid ? ` (${p.uid.slice(0, 60)})` : ''}: ${p.reason}`);
    line += `; ${file.problems.length} skipped: ${shown.join('; ')}${file.problems.length > 3 ? '; …' : ''}`;
  }
  return line;
}

async function postTo(target: ServerTarget, body: unknown): Promise<CalendarIngestResponseT> {
  const res = await fetch(new URL('/v1/calendar/ingest', target.url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(target.token ? { authorization: `Bearer ${target.token}` } : {}) },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  if (!res.ok) throw new Error(`server answered ${res.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as CalendarIngestResponseT;
}

export async function importIcsCommand(argv: string[], env: NodeJS.ProcessEnv = process.env, out: NodeJS.WritableStream = process.stderr): Promise<number> {
  const args = [...argv];
  const opt = (name: string) => {
    const i = args.findIndex((a) => a === name || a.startsWith(`${name}=`));
    if (i < 0) return undefined;
    if (args[i].includes('=')) return args.splice(i, 1)[0].slice(name.length + 1);
    const v = args[i + 1];
    args.splice(i, 2);
    return v;
  };
  const usage = 'usage: memex import FILE.ics [--url URL] [--token TOKEN] [--source NAME] [--zone ZONE] [--years-back N] [--years-ahead N]\n';
  let target: ServerTarget;
  let zone: string;
  let yearsBack: number;
  let yearsAhead: number;
  let account: string | undefined;
  try {
    target = resolveServerTarget({ url: opt('--url'), gateway: opt('--gateway'), token: opt('--token') }, env, (m) => out.write(`memex import: ${m}\n`));
    zone = opt('--zone') ?? read(env, CALENDAR_SETTINGS.MEMEX_CALENDAR_ZONE) ?? systemZone();
    if (!isKnownZone(zone)) throw new Error(`unknown time zone "${zone}" (an IANA name such as Europe/Berlin)`);
    const num = (flag: string, setting: typeof CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_BACK) => {
      const v = opt(flag);
      if (v === undefined) return read(env, setting);
      if (!/^\d{1,3}$/.test(v)) throw new Error(`${flag} takes a whole number of years, got "${v}"`);
      return Number(v);
    };
    yearsBack = num('--years-back', CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_BACK);
    yearsAhead = num('--years-ahead', CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_AHEAD);
    account = opt('--source');
  } catch (err) {
    out.write(`memex import: ${(err as Error).message}\n`);
    return 2;
  }
  const file = args.find((a) => !a.startsWith('--'));
  if (!file || args.some((a) => a.startsWith('--'))) {
    out.write(usage);
    return 2;
  }
  let text: string;
  try {
    const st = await fs.stat(file);
    if (st.size > MAX_ICS_BYTES) throw new Error(`larger than ${MAX_ICS_BYTES / 1024 / 1024} MB`);
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    out.write(`memex import: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}\n`);
    return 2;
  }
  try {
    const r = await importIcsText(text, { post: (b) => postTo(target, b), zone, account, yearsBack, yearsAhead });
    out.write(`${summaryLine(r.file)}\n`);
    for (const p of r.file.problems.slice(3, 20)) out.write(`  ${p.component}${p.line ? ` at line ${p.line}` : ''}${p.uid ? ` (${p.uid.slice(0, 60)})` : ''}: ${p.reason}\n`);
    if (r.file.problems.length > 20) out.write(`  … and ${r.file.problems.length - 20} more\n`);
    const t = r.totals;
    out.write(
      `stored ${t.stored} new or changed, ${t.unchanged} unchanged${t.stale ? `, ${t.stale} older than what is stored (kept out)` : ''}` +
        `${t.skipped ? `, ${t.skipped} kept out by the block list` : ''}${t.failed ? `, ${t.failed} failed` : ''}; ${t.occurrences} occurrences indexed\n`,
    );
    for (const e of r.errors.slice(0, 10)) out.write(`  failed: ${e}\n`);
    await reportIcsCoverage(target, file, account ?? null, r, out);
    if (r.file.events.length + r.file.todos.length === 0 && r.file.problems.length > 0) return 1;
    return t.failed > 0 ? 1 : 0;
  } catch (err) {
    out.write(`import failed: ${(err as Error).message}\n`);
    return 1;
  }
}

/**
 * The import's coverage run (docs/coverage.md): each event and task of the file by its UID — stored new or updated,
 * unchanged (or older than what is stored), kept out by the block list, refused — and each component that could not
 * be read, by its line. Never fails the import.
 */
async function reportIcsCoverage(target: ServerTarget, file: string, account: string | null, r: ImportIcsResult, out: NodeJS.WritableStream): Promise<void> {
  const { RunRecorder } = await import('../coverage/recorder.ts');
  const { reportImportRun } = await import('../coverage/reporter.ts');
  const run = new RunRecorder({ collector: 'calendar', source_type: 'calendar_event', source_account_id: account, source_ref: path.resolve(file) });
  r.file.problems.forEach((p, i) => run.failed(`${p.component}${p.line ? ` at line ${p.line}` : ` #${i + 1}`}`, p.reason, 'unreadable'));
  for (const x of r.results) {
    const ref = `${r.items[x.index].document.source_type === 'reminder' ? 'task' : 'event'} ${r.items[x.index].document.external_id}`;
    if (x.outcome === 'failed') run.failed(ref, x.error ?? 'refused by the server', 'rejected');
    else if (x.outcome === 'skipped') run.skipped(ref, 'blocked', 'kept out by the block list');
    else if (x.outcome === 'stored') run.stored(ref, (x.version_number ?? 1) > 1 ? 'updated' : 'new');
    else run.stored(ref, 'unchanged');
  }
  await reportImportRun(target, run, out);
}
