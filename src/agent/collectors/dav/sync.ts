/**
 * One sync of a CalDAV or CardDAV source (issue 42): find its collections, ask each what changed since the kept
 * state (collections.ts), fetch the changed members, and send them through the same paths as `memex import
 * FILE.ics` (POST /v1/calendar/ingest) and `memex import FILE.vcf` (POST /catalog/contacts/ingest). A member gone
 * from the server retires what it held: its events and tasks are deleted (they leave search and the agenda; the
 * versions stay until gc), its contact cards are deleted from their people. A changed member is a new version.
 *
 * The state of a collection is written only after the gateway accepted its changes: a run cut by a gateway that
 * went away (or a SIGKILL) asks for the same changes next time, and the gateway answers them as unchanged.
 * An item the gateway refuses for good (a 4xx in its answer) is not sent again until its member changes.
 */
import type { CalendarIngestResponseT } from '../../../schemas/calendar.ts';
import type { ContactIngestRequestT, ContactIngestResponseT, PersonPayloadT } from '../../../schemas/people.ts';
import type { SourceStateUpdateT } from '../../../schemas/sources.ts';
import type { Collector } from '../../../schemas/coverage.ts';
import type { CoverageReporter } from '../../../coverage/reporter.ts';
import { RunRecorder } from '../../../coverage/recorder.ts';
import { defaultWindow, readIcs } from '../../../calendar/ics.ts';
import { eventItem, todoItem, type CalendarItem } from '../../../calendar/documents.ts';
import { sendCalendarItems } from '../../../calendar/import.ts';
import { parseVcf } from '../../../people/vcard.ts';
import { collectionChanges, discoverCollections, fetchMembers, type DavCollection, type DavKind, type KeptCollection } from './collections.ts';
import type { DavClient } from './webdav.ts';
import type { DavStateStore } from './state.ts';
import type { DavSourceConfig } from '../../config-schema.ts';

// Declared with the YAML keys it is read from; importers have always taken it from here.
export type { DavSourceConfig };

/** What a module takes from its sources: the calendar module events, reminders tasks, contacts cards. */
export type DavWant = 'events' | 'todos' | 'contacts';

/** The gateway calls a sync makes (the agent's GatewayClient in the module, a catalog in tests). */
export interface DavGateway {
  calendar(body: { items: CalendarItem[] }): Promise<CalendarIngestResponseT>;
  sourceState(updates: SourceStateUpdateT[]): Promise<unknown>;
  contacts(req: ContactIngestRequestT): Promise<ContactIngestResponseT>;
}

export interface DavRunOptions {
  source: DavSourceConfig;
  want: DavWant;
  collector: Collector;
  client: DavClient;
  state: DavStateStore;
  gateway: DavGateway;
  coverage?: CoverageReporter;
  /** Zone of floating times; the occurrence window in years around now. */
  zone: string;
  yearsBack: number;
  yearsAhead: number;
  now?: () => number;
}

export interface DavRunResult {
  collections: string[];
  /** Members fetched because they were new or changed. */
  fetched: number;
  /** Documents or cards stored new or changed; unchanged ones; retired (their member left the server). */
  stored: number;
  unchanged: number;
  retired: number;
  failed: number;
  /** Per-item refusals and unreadable members, in words (no content). */
  problems: string[];
}

const SOURCE_TYPE = { events: 'calendar_event', todos: 'reminder', contacts: 'contact' } as const;
const COMPONENT = { events: 'VEVENT', todos: 'VTODO' } as const;

/** The documents' source_account_id: source id and the collection's path segment (stable under a rename). */
export function collectionAccount(sourceId: string, coll: DavCollection): string {
  const segment = decodeURIComponent(new URL(coll.url).pathname.replace(/\/+$/, '').split('/').pop() ?? '') || 'default';
  return `${sourceId}/${segment}`.slice(0, 500);
}

function wanted(o: DavRunOptions, all: DavCollection[]): { use: DavCollection[]; missing: string[] } {
  const ofKind = o.want === 'contacts' ? all : all.filter((c) => !c.components.length || c.components.includes(COMPONENT[o.want as 'events' | 'todos']));
  if (!o.source.collections.length) return { use: ofKind, missing: [] };
  const names = (c: DavCollection) => [c.name.toLowerCase(), collectionAccount('', c).slice(1).toLowerCase()];
  const use = ofKind.filter((c) => o.source.collections.some((n) => names(c).includes(n.toLowerCase())));
  const missing = o.source.collections.filter((n) => !ofKind.some((c) => names(c).includes(n.toLowerCase())));
  return { use, missing };
}

export async function runDavSync(o: DavRunOptions): Promise<DavRunResult> {
  const out: DavRunResult = { collections: [], fetched: 0, stored: 0, unchanged: 0, retired: 0, failed: 0, problems: [] };
  const kind = o.source.type;
  const all = await discoverCollections(o.client, o.source.url, kind);
  const { use, missing } = wanted(o, all);
  if (missing.length) {
    const found = all.map((c) => `"${c.name}"`).join(', ') || 'none';
    throw new Error(`${kind === 'caldav' ? 'calendar' : 'address book'} ${missing.map((n) => `"${n}"`).join(', ')} not found at ${o.source.url} (found: ${found})`);
  }
  for (const coll of use) {
    out.collections.push(coll.name);
    await syncCollection(o, coll, out);
  }
  // A collection that left the server (or the configuration): what it held is retired too.
  const now = new Set(use.map((c) => c.url));
  for (const [url, kept] of Object.entries(o.state.collections(o.source.id))) {
    if (now.has(url)) continue;
    const ids = Object.values(kept.members).flatMap((m) => m.ids);
    const gone: DavCollection = { url, name: url, components: [], syncToken: null, ctag: null };
    await retire(o, gone, ids);
    out.retired += ids.length;
    o.state.drop(o.source.id, url);
  }
  return out;
}

interface MemberItems {
  url: string;
  etag: string | null;
  ids: string[];
  error: string | null;
}

/**
 * Occurrences of a recurring event are expanded over a window around the time its member was fetched. A member
 * that never changes would keep last year's window: every 30 days each member is fetched and sent again, and the
 * gateway rewrites the occurrences whose window moved (the documents themselves are answered as unchanged).
 */
export const REEXPAND_EVERY_MS = 30 * 86_400_000;

async function syncCollection(o: DavRunOptions, coll: DavCollection, out: DavRunResult): Promise<void> {
  const now = (o.now ?? Date.now)();
  const stored = o.state.collection(o.source.id, coll.url);
  const reexpand = o.want !== 'contacts' && stored !== undefined && now - (stored.expanded_at ?? 0) >= REEXPAND_EVERY_MS;
  // Re-expanding: asked as if nothing were kept but the members (their ids, to retire what left).
  const kept = reexpand ? { sync_token: null, ctag: null, members: Object.fromEntries(Object.entries(stored.members).map(([u, m]) => [u, { ...m, etag: null }])) } : stored;
  const changes = await collectionChanges(o.client, coll, kept);
  if (kept && !changes.changed.length && !changes.removed.length) {
    if (changes.syncToken !== kept.sync_token || coll.ctag !== kept.ctag) o.state.save(o.source.id, coll.url, { ...kept, sync_token: changes.syncToken, ctag: coll.ctag });
    out.unchanged += Object.keys(kept.members).length;
    return;
  }
  const account = collectionAccount(o.source.id, coll);
  const rec = new RunRecorder({ collector: o.collector, source_type: SOURCE_TYPE[o.want], source_account_id: account, source_ref: coll.url });
  const prev = kept?.members ?? {};
  const fetched = await fetchMembers(o.client, coll, o.source.type, changes.changed);
  out.fetched += fetched.length;
  const removed = new Set(changes.removed);
  for (const f of fetched) if (f.text === null) removed.add(f.url); // gone between the listing and the fetch

  const members: MemberItems[] = [];
  if (o.want === 'contacts') await sendCards(o, coll, fetched, members, out);
  else await sendCalendar(o, account, fetched, members, out);

  // What the changed and removed members held before and hold no more, and no other member holds now.
  const next: KeptCollection['members'] = {};
  for (const [url, m] of Object.entries(prev)) if (!removed.has(url)) next[url] = m;
  for (const m of members) next[m.url] = { etag: m.etag, ids: m.ids };
  const held = new Set(Object.values(next).flatMap((m) => m.ids));
  const retiring = [...new Set([...removed, ...members.map((m) => m.url)].flatMap((url) => prev[url]?.ids ?? []))].filter((id) => !held.has(id));
  await retire(o, coll, retiring);
  out.retired += retiring.length;

  for (const url of Object.keys(next)) {
    const m = members.find((x) => x.url === url);
    if (!m) rec.stored(url, 'unchanged');
    else if (m.error) rec.failed(url, m.error, 'rejected');
    else rec.stored(url, prev[url] ? 'updated' : 'new');
  }
  o.state.save(o.source.id, coll.url, { sync_token: changes.syncToken, ctag: coll.ctag, members: next, expanded_at: !stored || reexpand ? now : stored.expanded_at });
  await o.coverage?.sendRun(rec.report({ cursor: { sync_token: changes.syncToken ? 'kept' : 'none', members: Object.keys(next).length } })).catch(() => false);
}

async function sendCalendar(o: DavRunOptions, account: string, fetched: Array<{ url: string; etag: string | null; text: string | null }>, members: MemberItems[], out: DavRunResult) {
  const win = defaultWindow((o.now ?? Date.now)(), { years: o.yearsBack }, { years: o.yearsAhead });
  const items: CalendarItem[] = [];
  const owner: number[] = [];
  for (const f of fetched) {
    if (f.text === null) continue;
    const file = readIcs(f.text, { zone: o.zone, ...win });
    const map = { zone: o.zone, account };
    const made = o.want === 'events' ? file.events.map((e) => eventItem(e, map)) : file.todos.map((t) => todoItem(t, map));
    const member: MemberItems = { url: f.url, etag: f.etag, ids: [], error: null };
    if (!made.length && file.problems.length) {
      member.error = `unreadable: ${file.problems[0].reason}`;
      out.problems.push(`${new URL(f.url).pathname}: ${member.error}`);
      out.failed++;
    }
    for (const item of made) {
      item.document.source_provider = 'caldav';
      member.ids.push(item.document.external_id!);
      items.push(item);
      owner.push(members.length);
    }
    members.push(member);
  }
  if (!items.length) return;
  const sent = await sendCalendarItems(items, o.gateway.calendar);
  for (const r of sent.results) {
    const m = members[owner[r.index]];
    if (r.outcome === 'failed') {
      m.error ??= r.error ?? 'refused by the gateway';
      out.failed++;
      out.problems.push(`${new URL(m.url).pathname}: ${r.error ?? 'refused'}`);
    } else if (r.outcome === 'stored') out.stored++;
    else out.unchanged++;
  }
}

async function sendCards(o: DavRunOptions, coll: DavCollection, fetched: Array<{ url: string; etag: string | null; text: string | null }>, members: MemberItems[], out: DavRunResult) {
  const cards: PersonPayloadT[] = [];
  for (const f of fetched) {
    if (f.text === null) continue;
    const member: MemberItems = { url: f.url, etag: f.etag, ids: [], error: null };
    try {
      const parsed = parseVcf(f.text);
      for (const c of parsed.cards) {
        member.ids.push(c.external_id);
        cards.push(c);
      }
      if (!parsed.cards.length) member.error = 'no usable card (no name and no identifier)';
    } catch (err) {
      member.error = `unreadable: ${(err as Error).message.slice(0, 200)}`;
    }
    if (member.error) {
      out.failed++;
      out.problems.push(`${new URL(f.url).pathname}: ${member.error}`);
    }
    members.push(member);
  }
  await postCards(o, coll, cards, out);
}

/** The contact source a CardDAV address book's cards are kept under (bounded as the route bounds it). */
export const contactSource = (sourceId: string, coll: DavCollection) => `carddav:${collectionAccount(sourceId, coll)}`.slice(0, 100);

async function postCards(o: DavRunOptions, coll: DavCollection, cards: PersonPayloadT[], out: DavRunResult) {
  for (let i = 0; i < cards.length; i += 200) {
    const people = cards.slice(i, i + 200);
    const r = await o.gateway.contacts({ source: contactSource(o.source.id, coll), device_id: o.source.id.slice(0, 200), batch_id: `carddav-${Date.now()}-${i}`, since_token: null, people });
    if (!people.every((p) => p.deleted)) {
      out.stored += r.upserts;
      out.unchanged += r.skipped;
      out.failed += r.conflicts;
    }
  }
}

async function retire(o: DavRunOptions, coll: DavCollection, ids: string[]): Promise<void> {
  if (!ids.length) return;
  if (o.want === 'contacts') {
    await postCards(o, coll, ids.map((id) => ({ external_id: id, display_name: id.slice(0, 500), deleted: true })), { stored: 0, unchanged: 0, failed: 0 } as DavRunResult);
    return;
  }
  const account = collectionAccount(o.source.id, coll);
  const at = new Date((o.now ?? Date.now)()).toISOString();
  for (let i = 0; i < ids.length; i += 1000) {
    await o.gateway.sourceState(
      ids.slice(i, i + 1000).map((id) => ({ source_type: SOURCE_TYPE[o.want as 'events' | 'todos'], source_id: id, source_account_id: account, deleted_at_source: at, delete: true })),
    );
  }
}
