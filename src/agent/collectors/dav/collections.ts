/**
 * Finding a person's calendars or address books from one URL, and what changed in one of them since the last
 * look (issue 42). Discovery (RFC 6764, RFC 4791 §6, RFC 6352 §7): the URL itself when it is a collection of the
 * kind; else its current-user-principal (or that of `/.well-known/caldav|carddav`), the principal's home set,
 * and the home set's members of the kind. Changes: a sync-collection REPORT (RFC 6578) from the kept sync-token;
 * a server without one (or that no longer knows the token) is compared by ETag; a collection whose CTag did not
 * move is not listed at all. Member bodies come by multiget REPORT in chunks, by GET where that fails.
 */
import { DavError, hrefIn, textOf, type DavClient, type DavResponse } from './webdav.ts';

export type DavKind = 'caldav' | 'carddav';

export interface DavCollection {
  url: string;
  /** The display name, else the last segment of the path. */
  name: string;
  /** VEVENT, VTODO … (CalDAV); empty when the server does not say (everything). */
  components: string[];
  syncToken: string | null;
  ctag: string | null;
}

/** What the agent keeps of a collection between runs (dav-state.ts). */
export interface KeptCollection {
  sync_token: string | null;
  ctag: string | null;
  /** Each member by URL: its ETag and the external ids of the documents made of it. */
  members: Record<string, { etag: string | null; ids: string[] }>;
  /** When every member was last fetched and expanded (epoch ms): the occurrence window moves with it. */
  expanded_at?: number;
}

export interface CollectionChanges {
  /** Members new or changed since the last look, with their new ETag. */
  changed: Array<{ url: string; etag: string | null }>;
  /** Members gone from the collection. */
  removed: string[];
  /** The token to keep for next time. */
  syncToken: string | null;
  /** Every member's URL as the server lists it now (ETag compare), or null when only changes were asked (sync-token). */
  listed: string[] | null;
}

const NS = 'xmlns:d="DAV:" xmlns:c="urn:ietf:params:xml:ns:caldav" xmlns:a="urn:ietf:params:xml:ns:carddav" xmlns:cs="http://calendarserver.org/ns/"';
const HOME = { caldav: 'calendar-home-set', carddav: 'addressbook-home-set' } as const;
const HOME_PROP = { caldav: 'c:calendar-home-set', carddav: 'a:addressbook-home-set' } as const;
const RESOURCE = { caldav: 'calendar', carddav: 'addressbook' } as const;
const DATA = { caldav: 'calendar-data', carddav: 'address-data' } as const;
const MULTIGET = { caldav: 'c:calendar-multiget', carddav: 'a:addressbook-multiget' } as const;
const DATA_PROP = { caldav: 'c:calendar-data', carddav: 'a:address-data' } as const;
const COLLECTION_PROPS = `<d:propfind ${NS}><d:prop><d:resourcetype/><d:displayname/><cs:getctag/><d:sync-token/><c:supported-calendar-component-set/></d:prop></d:propfind>`;
const MULTIGET_CHUNK = 50;

const hasType = (r: DavResponse, type: string) => {
  const rt = r.props.resourcetype;
  return !!rt && typeof rt === 'object' && type in rt;
};

function toCollection(r: DavResponse): DavCollection {
  const set = r.props['supported-calendar-component-set'] as { comp?: Array<Record<string, unknown>> } | undefined;
  const components = (set?.comp ?? []).map((c) => String(c['@name'] ?? '').toUpperCase()).filter(Boolean);
  const segment = decodeURIComponent(new URL(r.href).pathname.replace(/\/+$/, '').split('/').pop() ?? '');
  const display = textOf(r.props.displayname)?.trim();
  return { url: r.href, name: display || segment || r.href, components, syncToken: textOf(r.props['sync-token']), ctag: textOf(r.props.getctag) };
}

/** The collections of the kind reachable from `url`. Throws DavError in words when none can be found. */
export async function discoverCollections(client: DavClient, url: string, kind: DavKind): Promise<DavCollection[]> {
  // The URL may be a collection of the kind already, or a home set holding them.
  const here = await client.propfind(url, 1, COLLECTION_PROPS).catch((err) => {
    if (err instanceof DavError && err.httpStatus !== null && err.httpStatus !== 401) return null;
    throw err;
  });
  const own = here?.responses.filter((r) => hasType(r, RESOURCE[kind])) ?? [];
  const self = own.find((r) => sameUrl(r.href, url));
  if (self) return [toCollection(self)];
  if (own.length) return own.map(toCollection);

  let principal: string | null = null;
  for (const at of [url, new URL(`/.well-known/${kind}`, url).href]) {
    const ms = await client.propfind(at, 0, `<d:propfind ${NS}><d:prop><d:current-user-principal/></d:prop></d:propfind>`).catch(() => null);
    principal = ms ? hrefIn(ms.responses[0]?.props['current-user-principal']) : null;
    if (principal) break;
  }
  if (!principal) throw new DavError(`no ${kind === 'caldav' ? 'calendars' : 'address books'} found at ${url}: it is not a collection and names no principal`);
  const home = await client.propfind(new URL(principal, url).href, 0, `<d:propfind ${NS}><d:prop><${HOME_PROP[kind]}/></d:prop></d:propfind>`);
  const homeUrl = new URL(hrefIn(home.responses[0]?.props[HOME[kind]]) ?? principal, url).href;
  const members = await client.propfind(homeUrl, 1, COLLECTION_PROPS);
  const found = members.responses.filter((r) => hasType(r, RESOURCE[kind])).map(toCollection);
  if (!found.length) throw new DavError(`no ${kind === 'caldav' ? 'calendars' : 'address books'} found under ${new URL(homeUrl).pathname}`);
  return found;
}

const sameUrl = (a: string, b: string) => new URL(a).href.replace(/\/+$/, '') === new URL(b).href.replace(/\/+$/, '');

/** Members new, changed or gone since `kept`. A token the server no longer knows starts a full listing. */
export async function collectionChanges(client: DavClient, coll: DavCollection, kept: KeptCollection | undefined): Promise<CollectionChanges> {
  const prev = kept?.members ?? {};
  if (kept && coll.ctag && kept.ctag === coll.ctag && (!coll.syncToken || coll.syncToken === kept.sync_token)) {
    return { changed: [], removed: [], syncToken: kept.sync_token, listed: null };
  }
  if (coll.syncToken) {
    try {
      return await syncReport(client, coll, kept?.sync_token ?? null, prev);
    } catch (err) {
      // A token the server forgot (403/409 valid-sync-token, 412 …): list everything from no token.
      if (!(err instanceof DavError) || err.httpStatus === null || err.httpStatus === 401 || !kept?.sync_token) throw err;
      return syncReport(client, coll, null, prev).catch(() => etagListing(client, coll, prev));
    }
  }
  return etagListing(client, coll, prev);
}

async function syncReport(client: DavClient, coll: DavCollection, token: string | null, prev: KeptCollection['members']): Promise<CollectionChanges> {
  const body = `<d:sync-collection ${NS}><d:sync-token>${token ? escapeXml(token) : ''}</d:sync-token><d:sync-level>1</d:sync-level><d:prop><d:getetag/></d:prop></d:sync-collection>`;
  const ms = await client.report(coll.url, 1, body);
  const changed: CollectionChanges['changed'] = [];
  const removed: string[] = [];
  const listed: string[] = [];
  for (const r of ms.responses) {
    if (sameUrl(r.href, coll.url)) continue;
    if (r.status === 404 || r.status === 410) {
      if (prev[r.href]) removed.push(r.href);
      continue;
    }
    listed.push(r.href);
    const etag = textOf(r.props.getetag);
    if (!prev[r.href] || prev[r.href].etag !== etag || etag === null) changed.push({ url: r.href, etag });
  }
  // From no token the answer is the whole collection: what was kept and is not in it is gone.
  if (!token) for (const url of Object.keys(prev)) if (!listed.includes(url)) removed.push(url);
  return { changed, removed, syncToken: ms.syncToken ?? coll.syncToken, listed: token ? null : listed };
}

async function etagListing(client: DavClient, coll: DavCollection, prev: KeptCollection['members']): Promise<CollectionChanges> {
  const ms = await client.propfind(coll.url, 1, `<d:propfind ${NS}><d:prop><d:getetag/><d:resourcetype/></d:prop></d:propfind>`);
  const listed: string[] = [];
  const changed: CollectionChanges['changed'] = [];
  for (const r of ms.responses) {
    if (sameUrl(r.href, coll.url) || hasType(r, 'collection')) continue;
    listed.push(r.href);
    const etag = textOf(r.props.getetag);
    if (!prev[r.href] || prev[r.href].etag !== etag || etag === null) changed.push({ url: r.href, etag });
  }
  const now = new Set(listed);
  return { changed, removed: Object.keys(prev).filter((u) => !now.has(u)), syncToken: null, listed };
}

/** The bodies of members, by multiget in chunks (GET for a server without it, or a member it left out). */
export async function fetchMembers(
  client: DavClient,
  coll: DavCollection,
  kind: DavKind,
  members: Array<{ url: string; etag: string | null }>,
): Promise<Array<{ url: string; etag: string | null; text: string | null }>> {
  const out: Array<{ url: string; etag: string | null; text: string | null }> = [];
  for (let i = 0; i < members.length; i += MULTIGET_CHUNK) {
    const chunk = members.slice(i, i + MULTIGET_CHUNK);
    const hrefs = chunk.map((m) => `<d:href>${escapeXml(new URL(m.url).pathname)}</d:href>`).join('');
    const body = `<${MULTIGET[kind]} ${NS}><d:prop><d:getetag/><${DATA_PROP[kind]}/></d:prop>${hrefs}</${MULTIGET[kind]}>`;
    const got = new Map<string, { etag: string | null; text: string }>();
    try {
      const ms = await client.report(coll.url, 1, body);
      for (const r of ms.responses) {
        const text = textOf(r.props[DATA[kind]]);
        if (text !== null) got.set(r.href, { etag: textOf(r.props.getetag), text });
      }
    } catch (err) {
      if (!(err instanceof DavError) || err.httpStatus === null || err.httpStatus === 401) throw err;
    }
    for (const m of chunk) {
      const g = got.get(m.url);
      if (g) {
        out.push({ url: m.url, etag: g.etag ?? m.etag, text: g.text });
        continue;
      }
      const one = await client.get(m.url);
      out.push({ url: m.url, etag: one?.etag ?? m.etag, text: one?.text ?? null });
    }
  }
  return out;
}

const escapeXml = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
