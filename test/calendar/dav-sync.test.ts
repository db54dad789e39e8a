/**
 * CalDAV and CardDAV sync (issue 42) against a REAL Radicale and a LIVE gateway: the agent's calendar, reminders
 * and contacts modules run as sources of their own.
 * - discovery from the server's root URL (principal, home set), only the configured calendars;
 * - events (a weekly series on each of its days), tasks with their due dates, cards as people;
 * - an edit is a new version, a deletion at the server leaves search and the agenda, a deleted card its person;
 * - a restarted agent asks only for what changed (sync-token kept on disk): an unchanged calendar sends nothing;
 * - the poll alone picks up a change; a wrong URL is an error in words, not a crash.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { davSourceIdentity } from '../../src/agent/collectors/dav/module.ts';
import { radicaleUnavailableReason, startRadicale, type RadicaleServer } from '../helpers/radicale.ts';
import { startLiveGateway, tmpDir, type LiveGateway } from '../email-collectors/helpers.ts';
import { testConfig } from '../agent/helpers.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { createGatewayClient } from '../../src/client/submit.ts';
import { DavClient } from '../../src/agent/collectors/dav/webdav.ts';
import { DavStateStore } from '../../src/agent/collectors/dav/state.ts';
import { REEXPAND_EVERY_MS, runDavSync, type DavGateway } from '../../src/agent/collectors/dav/sync.ts';
import { waitFor } from '../helpers/wait.ts';

const unavailable = radicaleUnavailableReason();
if (unavailable) console.warn(`[dav sync tests] SKIPPED: ${unavailable}`);

const ics = (body: string) => `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//memex test//EN\r\n${body.trim().split('\n').join('\r\n')}\r\nEND:VCALENDAR\r\n`;
const event = (uid: string, summary: string, start: string, extra = '') =>
  ics(`BEGIN:VEVENT
UID:${uid}
DTSTAMP:20261101T090000Z
DTSTART:${start}
DURATION:PT1H
SUMMARY:${summary}
${extra ? `${extra}\n` : ''}END:VEVENT`);
const todo = (uid: string, summary: string, due: string) =>
  ics(`BEGIN:VTODO
UID:${uid}
DTSTAMP:20261101T090000Z
DUE:${due}
SUMMARY:${summary}
STATUS:NEEDS-ACTION
END:VTODO`);
const card = (uid: string, name: string, email: string) =>
  `BEGIN:VCARD\r\nVERSION:3.0\r\nUID:${uid}\r\nFN:${name}\r\nEMAIL;TYPE=INTERNET:${email}\r\nEND:VCARD\r\n`;

describe.skipIf(unavailable !== null)('CalDAV / CardDAV sync (real Radicale, live gateway)', () => {
  let dav: RadicaleServer;
  let live: LiveGateway;
  let app: AgentServer | undefined;
  const stateDir = tmpDir('memex-dav-');
  // The calendar source names one calendar; "private" is on the server too and must stay out.
  const calendarSource = () => ({ id: 'home', type: 'caldav', url: `${dav.url}/`, username: 'dana', calendars: ['Work'], poll_interval: '1s' });
  const config = () =>
    testConfig({
      gateway: { base_url: live.url, auth_token: TEST_TOKEN },
      modules: {
        calendar: { enabled: true, zone: 'UTC', state_path: path.join(stateDir, 'calendar.json'), sources: [calendarSource()] },
        reminders: { enabled: true, zone: 'UTC', state_path: path.join(stateDir, 'reminders.json'), sources: [{ id: 'home', type: 'caldav', url: `${dav.url}/dana/`, username: 'dana', calendars: ['tasks'], poll_interval: '1h' }] },
        contacts: { enabled: true, state_path: path.join(stateDir, 'contacts.json'), sources: [{ id: 'home', type: 'carddav', url: `${dav.url}/`, username: 'dana', poll_interval: '1h' }] },
      },
    });
  const ids = {
    calendar: () => coverageSourceId(davSourceIdentity('calendar', { ...calendarSource(), type: 'caldav', enabled: true, collections: [], poll_interval_ms: 1000 })),
    reminders: () => coverageSourceId(davSourceIdentity('reminders', { id: 'home', type: 'caldav', url: `${dav.url}/dana/`, enabled: true, collections: [], poll_interval_ms: 1 })),
    contacts: () => coverageSourceId(davSourceIdentity('contacts', { id: 'home', type: 'carddav', url: `${dav.url}/`, enabled: true, collections: [], poll_interval_ms: 1 })),
  };

  async function startAgent(): Promise<AgentServer> {
    const a = await createAgentServer(config(), { logger: false, runSources: true, sourcesReportMs: 300 });
    await a.ready();
    return a;
  }
  async function hits(q: string): Promise<any[]> {
    const res = await live.gw.request('GET', `/v1/search?${new URLSearchParams({ q, k: '10' })}`);
    expect(res.statusCode).toBe(200);
    return res.json().hits;
  }
  async function activeDoc(uid: string): Promise<any> {
    const r = await live.gw.db.query<any>(
      `SELECT doc_id, version_number, title, source_type, source_account_id, is_active_version, deleted_at FROM documents WHERE external_id = $1 ORDER BY version_number DESC LIMIT 1`,
      [uid],
    );
    return r.rows[0];
  }
  const run = (a: AgentServer, id: string) => a.agent.sources.get(id)!.runNow();

  beforeAll(async () => {
    dav = await startRadicale();
    live = await startLiveGateway();
    await dav.makeCalendar('dana', 'work', ['VEVENT'], 'Work');
    await dav.makeCalendar('dana', 'private', ['VEVENT'], 'Private');
    await dav.makeCalendar('dana', 'tasks', ['VTODO'], 'Tasks');
    await dav.makeAddressBook('dana', 'contacts');
    await dav.put('dana', 'work/dentist.ics', event('dentist-1@memex', 'Dentist appointment with Dr Okafor', '20261210T093000Z', 'LOCATION:Harley Street 12'));
    await dav.put('dana', 'work/standup.ics', event('standup-1@memex', 'Weekly standup of the falcon team', '20261201T080000Z', 'RRULE:FREQ=WEEKLY;COUNT=6'));
    await dav.put('dana', 'private/secret.ics', event('secret-1@memex', 'Surprise party zeppelin planning', '20261215T180000Z'));
    await dav.put('dana', 'tasks/passport.ics', todo('passport-1@memex', 'Renew the passport at the consulate', '20261220T120000Z'));
    await dav.put('dana', 'contacts/priya.vcf', card('priya-1@memex', 'Priya Quillfeather', 'priya@example.org'));
    await dav.put('dana', 'contacts/omar.vcf', card('omar-1@memex', 'Omar Brightwater', 'omar@example.org'));
  }, 60_000);
  afterAll(async () => {
    await app?.close();
    await live?.close();
    await dav?.stop();
    fs.rmSync(stateDir, { recursive: true, force: true });
  });

  it('stores the configured calendar, the task list and the address book', async () => {
    app = await startAgent();
    await run(app, ids.calendar());
    await run(app, ids.reminders());
    await run(app, ids.contacts());

    const dentist = await hits('Okafor');
    expect(dentist.map((h) => h.title)).toContain('Dentist appointment with Dr Okafor');
    expect((await activeDoc('dentist-1@memex')).source_account_id).toBe('home/work');
    // Only the configured calendar: "Private" is on the server, not in memex.
    expect(await hits('zeppelin')).toHaveLength(0);
    expect(await activeDoc('secret-1@memex')).toBeUndefined();

    // The weekly series is on the agenda on each of its days.
    const agenda = await live.gw.request('GET', '/v1/calendar/agenda?from=2026-12-01&to=2027-01-10');
    expect(agenda.statusCode).toBe(200);
    const standups = agenda.json().entries.filter((e: any) => /standup/.test(e.title));
    expect(standups).toHaveLength(6);
    expect(agenda.json().entries.some((e: any) => /passport/i.test(e.title) && e.kind === 'task')).toBe(true);

    const task = await activeDoc('passport-1@memex');
    expect(task.source_type).toBe('reminder');

    const people = await live.gw.request('GET', `/search/people?${new URLSearchParams({ q: 'Quillfeather' })}`);
    expect(people.statusCode).toBe(200);
    expect(JSON.stringify(people.json())).toContain('priya@example.org');

    const status = app.agent.sources.get(ids.calendar())!.status();
    expect(status.last_error).toBeNull();
    expect(status.mode).toBe('polling every 1s');
  });

  it('an edit is a new version; a deletion at the server leaves search and the agenda; a deleted card its person', async () => {
    await app!.close();
    app = undefined;
    const before = await activeDoc('dentist-1@memex');
    await dav.put('dana', 'work/dentist.ics', event('dentist-1@memex', 'Dentist appointment with Dr Okafor moved', '20261211T093000Z', 'LOCATION:Harley Street 12\nSEQUENCE:1'));
    await dav.remove('dana', 'work/standup.ics');
    await dav.remove('dana', 'contacts/omar.vcf');

    // A new agent (state from disk): it finds the changes by itself, within its 1 s poll.
    app = await startAgent();
    await waitFor('the edit', async () => (await activeDoc('dentist-1@memex')).version_number > before.version_number);
    const after = await activeDoc('dentist-1@memex');
    expect(after.title).toBe('Dentist appointment with Dr Okafor moved');
    await waitFor('the deletion', async () => (await hits('falcon')).length === 0);
    const gone = await activeDoc('standup-1@memex');
    expect(gone.is_active_version).toBe(false);
    const agenda = await live.gw.request('GET', '/v1/calendar/agenda?from=2026-12-01&to=2027-01-10');
    expect(agenda.json().entries.filter((e: any) => /standup/.test(e.title))).toHaveLength(0);

    await run(app, ids.contacts());
    const people = await live.gw.request('GET', `/search/people?${new URLSearchParams({ q: 'Brightwater' })}`);
    expect(people.statusCode).toBe(200);
    expect(JSON.stringify(people.json())).not.toContain('omar@example.org');
    const priya = await live.gw.request('GET', `/search/people?${new URLSearchParams({ q: 'Quillfeather' })}`);
    expect(JSON.stringify(priya.json())).toContain('priya@example.org');
  });

  it('an unchanged calendar sends nothing; coverage lists each collection; freshness is reported', async () => {
    const versions = await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE source_type = 'calendar_event'`);
    // A new agent knows the calendar from its state file: nothing is fetched again.
    await app!.close();
    app = await startAgent();
    await run(app, ids.calendar());
    const again = await live.gw.db.query<{ n: number }>(`SELECT count(*)::int AS n FROM documents WHERE source_type = 'calendar_event'`);
    expect(again.rows[0].n).toBe(versions.rows[0].n);
    const detail = app!.agent.sources.get(ids.calendar())!.status().detail!;
    expect(detail.fetched).toBe(0);

    const cov = await waitFor('the freshness report', async () => {
      const res = await live.gw.request('GET', `/v1/coverage?source=${ids.calendar()}&missing_limit=0`);
      const s = res.json().sources?.[0];
      return s?.last_success_at ? s : null;
    });
    expect(cov.mode).toBe('polling every 1s');
    const all = await live.gw.request('GET', '/v1/coverage?missing_limit=0');
    const refs = all.json().sources.map((s: any) => s.source_ref);
    expect(refs).toContain(`${dav.url}/dana/work/`);
    expect(refs).toContain(`${dav.url}/dana/contacts/`);
  });

  it('the occurrence window moves: an unchanged series is expanded again after 30 days', async () => {
    await dav.makeCalendar('dana', 'gym', ['VEVENT'], 'Gym');
    await dav.put('dana', 'gym/yoga.ics', event('yoga-1@memex', 'Thursday yoga in the quince studio', '20261203T180000Z', 'RRULE:FREQ=WEEKLY'));
    const gc = createGatewayClient({ baseUrl: live.url, authToken: TEST_TOKEN });
    const gateway: DavGateway = {
      calendar: async (b) => (await gc.calendarIngest!<any>(b)).body,
      sourceState: async (u) => (await gc.sourceState!(u)).body,
      contacts: async (r) => (await gc.contactsIngest!<any>(r)).body,
    };
    const state = new DavStateStore(path.join(stateDir, 'window.json'));
    let clock = Date.UTC(2026, 11, 1);
    const sync = () =>
      runDavSync({
        source: { id: 'win', type: 'caldav', enabled: true, url: `${dav.url}/`, username: 'dana', collections: ['Gym'], poll_interval_ms: 60_000 },
        want: 'events', collector: 'calendar', client: new DavClient({ baseUrl: `${dav.url}/`, credentials: { username: 'dana' } }),
        state, gateway, zone: 'UTC', yearsBack: 0, yearsAhead: 1, now: () => clock,
      });
    const lastOccurrence = async () => {
      const r = await live.gw.db.query<{ last: Date }>(
        `SELECT max(o.starts_at) AS last FROM calendar_occurrences o JOIN documents d ON d.doc_id = o.doc_id AND d.is_active_version WHERE d.external_id = 'yoga-1@memex'`,
      );
      return new Date(r.rows[0].last).getTime();
    };
    expect((await sync()).fetched).toBe(1);
    const first = await lastOccurrence();
    expect(first).toBeLessThan(Date.UTC(2027, 11, 2));
    clock += 10 * 86_400_000;
    expect((await sync()).fetched).toBe(0); // nothing changed, the window is young
    clock += REEXPAND_EVERY_MS;
    const again = await sync();
    expect(again.fetched).toBe(1);
    expect(again.stored).toBe(0); // the event itself is unchanged
    expect(await lastOccurrence()).toBeGreaterThan(first + 30 * 86_400_000);
  });

  it('a calendar that is not on the server is an error in words; the agent goes on', async () => {
    await app!.close();
    const bad = testConfig({
      gateway: { base_url: live.url, auth_token: TEST_TOKEN },
      modules: { calendar: { enabled: true, state_path: path.join(stateDir, 'bad.json'), sources: [{ id: 'bad', type: 'caldav', url: `${dav.url}/`, username: 'dana', calendars: ['Holidays'] }] } },
    });
    app = await createAgentServer(bad, { logger: false, runSources: true });
    await app.ready();
    const id = coverageSourceId(davSourceIdentity('calendar', { id: 'bad', type: 'caldav', url: `${dav.url}/`, enabled: true, collections: [], poll_interval_ms: 1 }));
    await expect(run(app, id)).rejects.toThrow(/calendar "Holidays" not found .*found: .*"Work"/);
    expect(app.agent.sources.get(id)!.status().state).toBe('backing_off');
  });
});
