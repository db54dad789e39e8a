/**
 * Which `Host` and `Origin` headers a memex server answers (issue 47 item 2: DNS rebinding). Shared by the
 * gateway (src/gateway/host-guard.ts, and the early listener of `memex serve`) and the host agent; plain
 * functions over header values, no framework.
 *
 * DNS rebinding: a page of evil.example makes its own name resolve to 127.0.0.1; the browser then sends the
 * page's requests to memex and lets the page read the answers, since for the browser they come from
 * evil.example. The one thing the browser cannot hide is the name: `Host: evil.example`. So a request is
 * answered only when its Host names
 *   - `localhost` or a name under `.localhost` (browsers resolve these to loopback themselves, RFC 6761,
 *     and no DNS server can answer for them),
 *   - an IP address (an address in the URL involves no DNS at all, so nothing can be rebound; this also
 *     covers the bound address and, for a server bound to 0.0.0.0, whichever LAN address it is reached by),
 *   - the bound address when it is a name (HOST=myhost.lan), or
 *   - a name listed in ALLOWED_HOSTS (the agent: `allowed_hosts`, SVC_ALLOWED_HOSTS), for a reverse proxy.
 * The port is not compared: a rebinding page is refused by its name whatever the port, and SSH tunnels,
 * container port mappings and proxies legitimately change it. A request without Host (HTTP/1.0 health
 * probes) is no browser's and is answered.
 *
 * A foreign Origin: a browser names the page that started a request in `Origin` (on every POST, and on
 * cross-origin fetches). A request whose Origin is not this server's own origin (scheme http or https, the
 * Host header's name and port; a TLS proxy may change the scheme) nor a listed name is refused, so another
 * page — another port on 127.0.0.1 included, which SameSite cookies do not tell apart — can neither change
 * nor read anything. `Origin: null` (sandboxed frames, file: pages) is foreign. Requests without Origin
 * (curl, the CLI, MCP clients, the agent's collectors) are not concerned.
 */
import net from 'node:net';
import { MemexError } from './errors.ts';

/** One allowed name: `name`, `name:port` or `*.domain` (every name under domain). */
export interface AllowedHost {
  hostname: string;
  /** When set, only this port (the Host header's or the Origin's, default 80/443 by scheme). */
  port?: string;
  /** `*.domain`: names under `hostname`, not `hostname` itself. */
  subdomains: boolean;
}

export interface HostPolicy {
  /** Names admitted besides the defaults (ALLOWED_HOSTS, the bound address when it is a name). */
  allowed: readonly AllowedHost[];
  /** The setting that extends the list, named in refusals (`ALLOWED_HOSTS`, `SVC_ALLOWED_HOSTS`). */
  setting: string;
}

export type HostRefusal =
  | { status: 421; code: 'REQUEST.HOST_NOT_ALLOWED'; message: string }
  | { status: 403; code: 'REQUEST.ORIGIN_NOT_ALLOWED'; message: string };

/** A request the gateway refuses for its Host or Origin, thrown by its host guard (src/gateway/host-guard.ts). */
export class HostRefusedError extends MemexError {
  constructor(refusal: HostRefusal) {
    super(refusal.message, refusal.code, refusal.status);
  }
}

const NAME = /^(?:\*\.)?[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]*[a-z0-9_])?)*\.?$/;
/** What a Host header may be at all: a name or an address, and a port. Anything else (`a@b`, `a/b`) is refused. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9._-]+)(?::(\d{1,5}))?$/;

/** Parses the entries of an allowed-hosts setting; throws an Error naming the bad entry. */
export function parseAllowedHosts(entries: readonly string[], setting: string): AllowedHost[] {
  return entries.map((raw) => {
    const entry = raw.trim().toLowerCase();
    const m = /^(\[[0-9a-f:.]+\]|[^:[\]]+)(?::(\d{1,5}))?$/.exec(entry);
    const name = m?.[1] ?? '';
    const isAddress = name.startsWith('[') ? net.isIPv6(name.slice(1, -1)) : net.isIPv4(name);
    if (!m || (!isAddress && !NAME.test(name)) || (m[2] !== undefined && Number(m[2]) > 65535)) {
      throw new Error(`${setting}: "${raw}" is not a host name, *.domain or name:port`);
    }
    const subdomains = name.startsWith('*.');
    return { hostname: stripDot(subdomains ? name.slice(2) : name), port: m[2], subdomains };
  });
}

export function hostPolicy(opts: { allowedHosts: readonly string[]; boundHost?: string; setting: string }): HostPolicy {
  const allowed = parseAllowedHosts(opts.allowedHosts, opts.setting);
  const bound = opts.boundHost?.trim().toLowerCase();
  // A server bound to a name answers to it (an address, or a wildcard address, is covered by the rule for addresses).
  if (bound && !isAddress(bound) && NAME.test(bound) && !bound.startsWith('*.')) allowed.push({ hostname: stripDot(bound), subdomains: false });
  return { allowed, setting: opts.setting };
}

function stripDot(name: string): string {
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

function isAddress(hostname: string): boolean {
  return hostname.startsWith('[') ? net.isIPv6(hostname.slice(1, -1)) : net.isIPv4(hostname);
}

/** `ports`: the port the request names; a Host header without one may mean 80 or 443 (the server cannot tell the scheme). */
function listed(policy: HostPolicy, hostname: string, ports: readonly string[]): boolean {
  return policy.allowed.some(
    (a) => (a.subdomains ? hostname.endsWith(`.${a.hostname}`) : hostname === a.hostname) && (a.port === undefined || ports.includes(a.port)),
  );
}

/** A header value shown in a refusal: short, printable. */
function shown(value: string): string {
  const printable = value.replace(/[^\x20-\x7e]/g, '?');
  return printable.length > 100 ? `${printable.slice(0, 100)}…` : printable;
}

/** The name and port of a Host header, or null when it is not one. */
function parseHostHeader(host: string): { hostname: string; port: string } | null {
  const m = HOST_HEADER.exec(host.trim().toLowerCase());
  if (!m) return null;
  const hostname = stripDot(m[1]);
  if (hostname.startsWith('[') && !net.isIPv6(hostname.slice(1, -1))) return null;
  return { hostname, port: m[2] ?? '' };
}

/** Whether a Host header names this server (see the module comment). Undefined (no header): yes. */
export function hostAllowed(policy: HostPolicy, host: string | undefined): boolean {
  if (host === undefined) return true;
  const parsed = parseHostHeader(host);
  if (!parsed) return false;
  const { hostname, port } = parsed;
  if (hostname === 'localhost' || hostname.endsWith('.localhost')) return true;
  if (isAddress(hostname)) return true;
  return listed(policy, hostname, port ? [port] : ['80', '443']);
}

/** Whether an Origin header is this server's own origin or a listed one. Undefined (no header): yes. */
export function originAllowed(policy: HostPolicy, origin: string | undefined, host: string | undefined): boolean {
  if (origin === undefined) return true;
  let url: URL;
  try {
    url = new URL(origin.trim());
  } catch {
    return false; // `null`, or not a URL
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const defaultPort = url.protocol === 'https:' ? '443' : '80';
  const hostname = stripDot(url.hostname);
  const port = url.port || defaultPort;
  // Same origin: the page was served by this server under the name and port the request names.
  const own = host === undefined ? null : parseHostHeader(host);
  if (own && own.hostname === hostname && (own.port || defaultPort) === port) return true;
  return listed(policy, hostname, [port]);
}

/** The refusal for a request's Host and Origin headers, or null when it may be answered. */
export function judgeRequest(policy: HostPolicy, headers: { host?: string | string[]; origin?: string | string[] }): HostRefusal | null {
  const host = Array.isArray(headers.host) ? headers.host[0] : headers.host;
  const origin = Array.isArray(headers.origin) ? headers.origin.join(',') : headers.origin;
  if (!hostAllowed(policy, host)) {
    return {
      status: 421,
      code: 'REQUEST.HOST_NOT_ALLOWED',
      message:
        `This server does not answer to the host name "${shown(host ?? '')}": it answers to localhost, IP addresses and ` +
        `the names in ${policy.setting} (add the name a reverse proxy sends there)`,
    };
  }
  if (!originAllowed(policy, origin, host)) {
    return {
      status: 403,
      code: 'REQUEST.ORIGIN_NOT_ALLOWED',
      message:
        `Requests from the page origin "${shown(origin ?? '')}" are refused: only this server's own pages, and the names ` +
        `in ${policy.setting}, may send them`,
    };
  }
  return null;
}
