/**
 * The few WebDAV calls CalDAV (RFC 4791) and CardDAV (RFC 6352) sync needs: PROPFIND and REPORT with an XML
 * body, answered by a 207 multistatus, and GET. Responses are parsed with fast-xml-parser with the namespace
 * prefixes removed: the DAV, CalDAV, CardDAV and CalendarServer element names used here do not collide, and
 * servers pick prefixes freely (Radicale writes `C:`, others `cal:` or a default namespace).
 *
 * Bounded on purpose: a time limit per call, a size limit per answer, and hrefs confined to the origin of the
 * configured URL (a server cannot send the agent to fetch from another host with the person's credentials).
 */
import { XMLParser } from 'fast-xml-parser';
import { codedError } from '../../../util/errors.ts';

/** Largest answer read (a multiget of 50 events with attachments inline stays far below). */
export const MAX_DAV_RESPONSE_BYTES = 64 * 1024 * 1024;
const TIMEOUT_MS = 60_000;

export class DavError extends codedError('AGENT.DAV') {
  constructor(
    message: string,
    /** The DAV server's HTTP status; null when it could not be reached (`status` is memex's own). */
    readonly httpStatus: number | null = null,
  ) {
    super(message);
  }
}

export interface DavCredentials {
  username?: string;
  /** Basic auth password, or a bearer token with `bearer`. */
  secret?: string;
  bearer?: boolean;
}

/** One `<response>` of a multistatus: its href (absolute URL), the properties found (status 2xx), its status. */
export interface DavResponse {
  href: string;
  /** Properties with a 2xx propstat, by local name; values as parsed (text, or an object for nested XML). */
  props: Record<string, unknown>;
  /** The response's own status (sync-collection reports a removed member as 404 here), or null. */
  status: number | null;
}

export interface Multistatus {
  responses: DavResponse[];
  /** The top-level sync-token of a sync-collection answer. */
  syncToken: string | null;
}

const parser = new XMLParser({
  removeNSPrefix: true,
  ignoreAttributes: false,
  attributeNamePrefix: '@',
  parseTagValue: false,
  trimValues: true,
  isArray: (name) => ['response', 'propstat', 'href', 'comp'].includes(name),
});

const statusCode = (s: unknown): number | null => {
  const m = typeof s === 'string' ? /HTTP\/\d(?:\.\d)?\s+(\d{3})/.exec(s) : null;
  return m ? Number(m[1]) : null;
};

/** Text of a parsed element (a string, or `#text` of an element with attributes). */
export function textOf(v: unknown): string | null {
  if (typeof v === 'string') return v;
  if (typeof v === 'number') return String(v);
  if (v && typeof v === 'object' && '#text' in v) return String((v as Record<string, unknown>)['#text']);
  return null;
}

/** The first href inside a property such as current-user-principal or calendar-home-set. */
export function hrefIn(v: unknown): string | null {
  if (!v || typeof v !== 'object') return null;
  const hrefs = (v as { href?: unknown[] }).href;
  return Array.isArray(hrefs) && hrefs.length ? textOf(hrefs[0]) : null;
}

export function parseMultistatus(xml: string, base: string): Multistatus {
  let doc: Record<string, unknown>;
  try {
    doc = parser.parse(xml) as Record<string, unknown>;
  } catch (err) {
    throw new DavError(`the server's answer is not XML: ${(err as Error).message.slice(0, 200)}`);
  }
  const ms = doc.multistatus as Record<string, unknown> | undefined;
  if (!ms || typeof ms !== 'object') throw new DavError('the server answered without a DAV multistatus');
  const responses: DavResponse[] = [];
  for (const r of (ms.response as Record<string, unknown>[] | undefined) ?? []) {
    const href = textOf((r.href as unknown[] | undefined)?.[0]);
    if (!href) continue;
    const props: Record<string, unknown> = {};
    for (const ps of (r.propstat as Record<string, unknown>[] | undefined) ?? []) {
      const code = statusCode(ps.status);
      if (code !== null && (code < 200 || code > 299)) continue;
      if (ps.prop && typeof ps.prop === 'object') Object.assign(props, ps.prop);
    }
    responses.push({ href: new URL(href, base).href, props, status: statusCode(r.status) });
  }
  return { responses, syncToken: textOf(ms['sync-token']) };
}

export interface DavClientOptions {
  /** The configured URL: hrefs outside its origin are refused. */
  baseUrl: string;
  credentials: DavCredentials;
  fetchImpl?: typeof fetch;
  timeoutMs?: number;
}

export class DavClient {
  readonly origin: string;
  private readonly authHeader: string | null;
  private readonly fetchImpl: typeof fetch;

  constructor(private readonly opts: DavClientOptions) {
    this.origin = new URL(opts.baseUrl).origin;
    const c = opts.credentials;
    this.authHeader = c.bearer
      ? `Bearer ${c.secret ?? ''}`
      : c.username !== undefined
        ? `Basic ${Buffer.from(`${c.username}:${c.secret ?? ''}`).toString('base64')}`
        : null;
    this.fetchImpl = opts.fetchImpl ?? fetch;
  }

  /** The URL, refused unless it is on the configured server. */
  confine(url: string): string {
    const u = new URL(url, this.opts.baseUrl);
    if (u.origin !== this.origin) throw new DavError(`the server pointed to ${u.origin}, outside ${this.origin}: not followed`);
    return u.href;
  }

  async propfind(url: string, depth: 0 | 1, props: string): Promise<Multistatus> {
    return this.multistatus('PROPFIND', url, depth, `<?xml version="1.0" encoding="utf-8"?>${props}`);
  }

  async report(url: string, depth: 0 | 1, body: string): Promise<Multistatus> {
    return this.multistatus('REPORT', url, depth, `<?xml version="1.0" encoding="utf-8"?>${body}`);
  }

  /** GET of one member (an .ics or .vcf); null when it is gone (404, 410). */
  async get(url: string): Promise<{ text: string; etag: string | null } | null> {
    const res = await this.send('GET', url, null, null);
    if (res.status === 404 || res.status === 410) return null;
    if (!res.ok) throw this.failure('GET', url, res.status);
    return { text: await readBounded(res), etag: res.headers.get('etag') };
  }

  private async multistatus(method: string, url: string, depth: 0 | 1, body: string): Promise<Multistatus> {
    const target = this.confine(url);
    const res = await this.send(method, target, depth, body);
    if (res.status !== 207) throw this.failure(method, target, res.status);
    return parseMultistatus(await readBounded(res), res.url || target);
  }

  private async send(method: string, url: string, depth: 0 | 1 | null, body: string | null): Promise<Response> {
    const target = this.confine(url);
    const headers: Record<string, string> = {};
    if (this.authHeader) headers.authorization = this.authHeader;
    if (depth !== null) headers.depth = String(depth);
    if (body !== null) headers['content-type'] = 'application/xml; charset=utf-8';
    try {
      const res = await this.fetchImpl(target, { method, headers, body, redirect: 'follow', signal: AbortSignal.timeout(this.opts.timeoutMs ?? TIMEOUT_MS) });
      // A redirect may not leave the server either (fetch followed it: check where it ended).
      if (res.url) this.confine(res.url);
      return res;
    } catch (err) {
      if (err instanceof DavError) throw err;
      const e = err as Error & { cause?: { code?: string } };
      const why = e.name === 'TimeoutError' ? 'no answer in time' : (e.cause?.code ?? e.message);
      throw new DavError(`${method} ${pathOf(target)} failed: ${why}`);
    }
  }

  private failure(method: string, url: string, status: number): DavError {
    const why =
      status === 401 ? 'the server refused the credentials (check username and secret_ref)'
      : status === 403 ? 'the server refused access'
      : status === 404 ? 'not found'
      : `the server answered HTTP ${status}`;
    return new DavError(`${method} ${pathOf(url)}: ${why}`, status);
  }
}

const pathOf = (url: string) => {
  try {
    return new URL(url).pathname;
  } catch {
    return url;
  }
};

async function readBounded(res: Response): Promise<string> {
  const declared = Number(res.headers.get('content-length'));
  if (declared > MAX_DAV_RESPONSE_BYTES) throw new DavError(`the server's answer is larger than ${MAX_DAV_RESPONSE_BYTES / 1024 / 1024} MB`);
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_DAV_RESPONSE_BYTES) {
      await reader.cancel().catch(() => undefined);
      throw new DavError(`the server's answer is larger than ${MAX_DAV_RESPONSE_BYTES / 1024 / 1024} MB`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
