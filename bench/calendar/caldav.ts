/**
 * CalDAV sync benchmark (issue 42): a real Radicale holding one calendar of N events (R of them recurring), a real
 * `memex serve` (default configuration: PGlite, the embedding worker running), and the agent's calendar module as
 * a person runs it. Side by side in the same run, vdirsyncer (Debian) syncs the same calendar to a folder, the tool
 * a person would otherwise use to keep a local copy of a CalDAV calendar.
 *
 * Phases, each timed for both:
 *   first sync   every event fetched (memex: discovered, parsed, expanded, stored and indexed by the server);
 *   idle poll    nothing changed;
 *   one change   one event edited at the server, then a poll (memex: until the new title is searchable).
 *
 *   node --import tsx bench/calendar/caldav.ts [--events 5000] [--recurring 2000] [--changes 5]
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { createAgentServer } from '../../src/agent/server.ts';
import { validateAgentConfig } from '../../src/agent/config.ts';
import { coverageSourceId } from '../../src/coverage/identity.ts';
import { davSourceIdentity } from '../../src/agent/collectors/dav/module.ts';
import { startRadicale } from '../../test/helpers/radicale.ts';
import { startBenchServer } from '../lib/server.ts';

const { values } = parseArgs({ options: { events: { type: 'string', default: '5000' }, recurring: { type: 'string', default: '2000' }, changes: { type: 'string', default: '5' } } });
const N = Number(values.events);
const R = Number(values.recurring);
const CHANGES = Number(values.changes);
const RULES = ['FREQ=WEEKLY;BYDAY=MO,WE', 'FREQ=WEEKLY;INTERVAL=2;BYDAY=FR', 'FREQ=MONTHLY;BYDAY=2TU', 'FREQ=MONTHLY;BYMONTHDAY=15', 'FREQ=YEARLY', 'FREQ=DAILY;COUNT=30'];
const WORDS = ['budget', 'review', 'dentist', 'lunch', 'planning', 'standup', 'retro', 'yoga', 'piano', 'visit', 'call', 'workshop'];
const pad = (n: number) => String(n).padStart(2, '0');
const utc = (t: number) => {
  const d = new Date(t);
  return `${d.getUTCFullYear()}${pad(d.getUTCMonth() + 1)}${pad(d.getUTCDate())}T${pad(d.getUTCHours())}${pad(d.getUTCMinutes())}00Z`;
};

function member(i: number, summary?: string, sequence = 0): string {
  const first = Date.UTC(2025, 0, 1);
  const start = first + ((i * 7919) % N) * Math.floor((3 * 365 * 86_400_000) / N / 3_600_000) * 3_600_000 + 9 * 3_600_000;
  const w = WORDS[i % WORDS.length];
  return [
    'BEGIN:VCALENDAR', 'VERSION:2.0', 'PRODID:-//memex bench//EN', 'BEGIN:VEVENT',
    `UID:bench-${i}@memex.test`, 'DTSTAMP:20261101T000000Z', `DTSTART:${utc(start)}`, `DTEND:${utc(start + 3_600_000)}`,
    `SUMMARY:${summary ?? `${w} ${i}`}`, `DESCRIPTION:About the ${w}\\, number ${i}.`, `LOCATION:Room ${i % 40}`, `SEQUENCE:${sequence}`,
    `ORGANIZER;CN=Person ${i % 50}:mailto:p${i % 50}@example.org`,
    ...(i < R ? [`RRULE:${RULES[i % RULES.length]}`] : []),
    'END:VEVENT', 'END:VCALENDAR', '',
  ].join('\r\n');
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const secs = (ms: number) => `${(ms / 1000).toFixed(2)} s`;

async function main() {
  const members: Record<string, string> = {};
  for (let i = 0; i < N; i++) members[`bench-${i}.ics`] = member(i);
  const dav = await startRadicale({ seed: [{ user: 'dana', name: 'work', displayName: 'Work', members }] });
  const server = await startBenchServer('pglite');
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-caldav-bench-'));
  const source = { id: 'bench', type: 'caldav', url: `${dav.url}/`, username: 'dana', calendars: ['Work'], poll_interval: '1h' };
  const config = validateAgentConfig(
    { auth: { secret: 'bench-agent-secret-0123456789abcdef' }, gateway: { base_url: server.url, auth_token: server.token }, modules: { calendar: { enabled: true, zone: 'UTC', state_path: path.join(work, 'calendar.json'), sources: [source] } } },
    'bench.yaml',
    { HOME: os.homedir() },
  );
  const agent = await createAgentServer(config, { logger: false, runSources: true });
  await agent.ready();
  const id = coverageSourceId(davSourceIdentity('calendar', config.modules.calendar.sources[0]));
  const poll = async () => {
    const t = performance.now();
    await agent.agent.sources.get(id)!.runNow();
    return performance.now() - t;
  };
  const search = async (q: string) => {
    const res = await fetch(`${server.url}/v1/search?${new URLSearchParams({ q, k: '3' })}`, { headers: { authorization: `Bearer ${server.token}` } });
    return ((await res.json()) as { hits: { title: string }[] }).hits;
  };

  // vdirsyncer, the same calendar to a folder.
  const vconf = path.join(work, 'vdirsyncer.conf');
  fs.writeFileSync(
    vconf,
    `[general]\nstatus_path = "${work}/vstatus/"\n\n[pair cal]\na = "remote"\nb = "local"\ncollections = ["work"]\n\n` +
      `[storage remote]\ntype = "caldav"\nurl = "${dav.url}/"\nusername = "dana"\npassword = "x"\n\n[storage local]\ntype = "filesystem"\npath = "${work}/vlocal/"\nfileext = ".ics"\n`,
  );
  const vdir = (...args: string[]) => {
    const t = performance.now();
    execFileSync('vdirsyncer', ['-c', vconf, ...args], { stdio: ['pipe', 'ignore', 'pipe'], input: 'y\ny\ny\n' });
    return performance.now() - t;
  };
  vdir('discover', 'cal');

  const memexFirst = await poll();
  const vFirst = vdir('sync');
  const detail = agent.agent.sources.get(id)!.status().detail;
  const memexIdle: number[] = [];
  const vIdle: number[] = [];
  for (let k = 0; k < 3; k++) {
    memexIdle.push(await poll());
    vIdle.push(vdir('sync'));
  }
  const memexChange: number[] = [];
  const memexSearchable: number[] = [];
  const vChange: number[] = [];
  for (let k = 0; k < CHANGES; k++) {
    const i = 100 + k * 37;
    const word = `zanzibar${k}quokka`;
    await fetch(`${dav.url}/dana/work/bench-${i}.ics`, {
      method: 'PUT',
      headers: { authorization: `Basic ${Buffer.from('dana:x').toString('base64')}`, 'content-type': 'text/calendar' },
      body: member(i, `Moved ${word}`, k + 1),
    });
    const t = performance.now();
    memexChange.push(await poll());
    while (!(await search(word)).length) await new Promise((r) => setTimeout(r, 50));
    memexSearchable.push(performance.now() - t);
    vChange.push(vdir('sync'));
  }
  const load = os.loadavg()[0].toFixed(2);
  console.log(`CalDAV sync: Radicale ${execFileSync('radicale', ['--version']).toString().trim()}, ${N} events (${R} recurring); memex serve (PGlite, default configuration); load ${load}; ${os.cpus().length} cores`);
  console.log(`memex first sync: ${secs(memexFirst)} (${Math.round(N / (memexFirst / 1000))} events/s; ${JSON.stringify(detail)})`);
  console.log(`vdirsyncer first sync: ${secs(vFirst)} (${Math.round(N / (vFirst / 1000))} events/s); ratio memex/vdirsyncer ${(memexFirst / vFirst).toFixed(2)}`);
  console.log(`idle poll, median of 3: memex ${secs(median(memexIdle))}, vdirsyncer ${secs(median(vIdle))}`);
  console.log(`one changed event, median of ${CHANGES}: memex poll ${secs(median(memexChange))} (searchable ${secs(median(memexSearchable))} after the poll began, max ${secs(Math.max(...memexSearchable))}), vdirsyncer ${secs(median(vChange))}`);

  await agent.close();
  await server.stop();
  await dav.stop();
  fs.rmSync(work, { recursive: true, force: true });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
