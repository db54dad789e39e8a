/**
 * The agent's `calendar`, `reminders` and `contacts` modules (issue 42): CalDAV calendars' events, CalDAV task
 * lists' to-dos and CardDAV address books' cards, each configured source polled on its own every
 * `poll_interval` (default 5m) by the source runner, like the other sources of the agent (docs/sources.md).
 * `GET /v1/coverage` lists each as a source with its freshness, and each collection's runs with seen / stored /
 * missing. The work of one poll is sync.ts; this file wires a source's configuration, secret and gateway.
 */
import type { AgentContext, AgentModule } from '../../modules.ts';
import type { DavModuleConfig } from '../../config.ts';
import type { Collector } from '../../../schemas/coverage.ts';
import type { CalendarIngestResponseT } from '../../../schemas/calendar.ts';
import type { ContactIngestResponseT } from '../../../schemas/people.ts';
import type { SourceIdentity } from '../../../coverage/identity.ts';
import { read } from '../../../config/env.ts';
import { CALENDAR_SETTINGS } from '../../../calendar/config.ts';
import { systemZone } from '../../../calendar/zones.ts';
import { gatewayClientFromConfig } from '../../gateway-client.ts';
import { ScheduledSource } from '../../sources/scheduled.ts';
import { formatDuration } from '../../sources/schedule.ts';
import { resolveSecretRef } from '../email/secrets.ts';
import { runDavSync, type DavGateway, type DavSourceConfig, type DavWant } from './sync.ts';
import { DavClient } from './webdav.ts';
import { DavStateStore } from './state.ts';

type DavModuleName = 'calendar' | 'reminders' | 'contacts';
const WANT: Record<DavModuleName, DavWant> = { calendar: 'events', reminders: 'todos', contacts: 'contacts' };
const SOURCE_TYPE = { calendar: 'calendar_event', reminders: 'reminder', contacts: 'contact' } as const;

/** A source's URL as shown and reported: no credentials in it. */
const shownUrl = (url: string) => {
  const u = new URL(url);
  u.username = '';
  u.password = '';
  return u.href;
};

export function davSourceIdentity(name: DavModuleName, s: DavSourceConfig): SourceIdentity {
  return { collector: name as Collector, source_type: SOURCE_TYPE[name], source_account_id: s.id, source_ref: shownUrl(s.url) };
}

export function davModule(name: DavModuleName) {
  return (ctx: AgentContext): AgentModule => {
    const cfg: DavModuleConfig = ctx.config.modules[name];
    const state = new DavStateStore(cfg.state_path);
    const zone = cfg.zone ?? read(process.env, CALENDAR_SETTINGS.MEMEX_CALENDAR_ZONE) ?? systemZone();
    const yearsBack = read(process.env, CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_BACK);
    const yearsAhead = read(process.env, CALENDAR_SETTINGS.MEMEX_CALENDAR_YEARS_AHEAD);
    const contactsClient = name === 'contacts' ? gatewayClientFromConfig(ctx.config, { authToken: cfg.catalog_token ?? ctx.config.gateway.auth_token }) : null;
    const gateway: DavGateway = {
      calendar: async (body) => {
        if (!ctx.gateway.calendarIngest) throw new Error('this gateway takes no calendar items (POST /v1/calendar/ingest)');
        return (await ctx.gateway.calendarIngest<CalendarIngestResponseT>(body)).body;
      },
      sourceState: async (updates) => {
        if (!ctx.gateway.sourceState) throw new Error('this gateway takes no source state (POST /v1/documents/source-state)');
        return (await ctx.gateway.sourceState(updates)).body;
      },
      contacts: async (req) => (await contactsClient!.contactsIngest!<ContactIngestResponseT>(req)).body,
    };
    let lastRun: Record<string, string | number | boolean | null> = {};

    const sourceOf = (s: DavSourceConfig) =>
      new ScheduledSource({
        identity: davSourceIdentity(name, s),
        label: `${name} ${s.id}`,
        schedule: { kind: 'every', ms: s.poll_interval_ms, text: `polling every ${formatDuration(s.poll_interval_ms)}` },
        log: ctx.log,
        run: async () => {
          const secret = s.auth?.secret_ref ? await resolveSecretRef(s.auth.secret_ref) : undefined;
          const client = new DavClient({ baseUrl: s.url, credentials: { username: s.username, secret, bearer: s.auth?.kind === 'bearer' } });
          const r = await runDavSync({ source: s, want: WANT[name], collector: name as Collector, client, state, gateway, coverage: ctx.coverage, zone, yearsBack, yearsAhead });
          if (r.problems.length) ctx.log.warn({ source: s.id, problems: r.problems.length, first: r.problems[0] }, `${name} sync: some items were not stored`);
          lastRun = { collections: r.collections.length, fetched: r.fetched, stored: r.stored, unchanged: r.unchanged, retired: r.retired, failed: r.failed };
          return { detail: lastRun };
        },
      });
    const sources = cfg.enabled ? cfg.sources.filter((s) => s.enabled).map(sourceOf) : [];

    return {
      name,
      enabled: cfg.enabled,
      permissions: () => ({}),
      status: () => (!cfg.enabled ? 'disabled' : sources.length ? 'running' : 'ready'),
      publicConfig: () => ({
        sources: cfg.sources.map((s) => ({ id: s.id, type: s.type, url: shownUrl(s.url), collections: s.collections, poll_interval: formatDuration(s.poll_interval_ms), enabled: s.enabled })),
      }),
      extraInfo: () => ({ sources_count: sources.length, last_run: lastRun }),
      sources: () => sources,
    };
  };
}
