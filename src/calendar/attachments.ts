/**
 * Calendar files that arrive as files (issue 42, item 1): an invitation attached to an email (text/calendar or
 * application/ics, or a `.ics` name) is stored as the email's attachment like any file, and its events and tasks
 * become calendar documents too, each with the attachment's document as parent (so the event links to the
 * invitation and through it to its email). Replies and counter-proposals (METHOD:REPLY, COUNTER, REFRESH,
 * DECLINECOUNTER) carry one attendee's answer rather than the event, and are left as files only.
 */
import type { Catalog } from '../catalog/catalog.ts';
import { read } from '../config/env.ts';
import type { CalendarIngestResponseT } from '../schemas/calendar.ts';
import { CALENDAR_SETTINGS, MAX_CALENDAR_ATTACHMENT_BYTES } from './config.ts';
import { eventItem, todoItem } from './documents.ts';
import { defaultWindow, readIcs } from './ics.ts';
import { ingestCalendar } from './store.ts';
import { isKnownZone, systemZone } from './zones.ts';

/** The events and tasks of a calendar attachment stored as documents under `parentDocId`; null when it holds none to store. */
export async function eventsFromAttachment(
  catalog: Catalog,
  bytes: Buffer,
  parentDocId: string,
  env: NodeJS.ProcessEnv = process.env,
  now = Date.now(),
): Promise<CalendarIngestResponseT | null> {
  if (bytes.length > MAX_CALENDAR_ATTACHMENT_BYTES) return null;
  const text = bytes.toString('utf8');
  if (!/^\s*(\uFEFF)?BEGIN:VCALENDAR/i.test(text)) return null;
  if (/^METHOD:\s*(REPLY|COUNTER|DECLINECOUNTER|REFRESH)\s*$/im.test(text)) return null;
  const configured = read(env, CALENDAR_SETTINGS.MEMEX_CALENDAR_ZONE);
  const zone = configured && isKnownZone(configured) ? configured : systemZone();
  const back = read(env, CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_BACK);
  const ahead = read(env, CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_AHEAD);
  const file = readIcs(text, { zone, ...defaultWindow(now, { years: back }, { years: ahead }) });
  const items = [...file.events.map((e) => eventItem(e, { zone })), ...file.todos.map((t) => todoItem(t, { zone }))];
  if (items.length === 0) return null;
  for (const item of items) item.document.parent_doc_id = parentDocId;
  return ingestCalendar(catalog, items.slice(0, 500));
}
