/**
 * SSRF-safe download for POST /v1/ocr {url}.
 *
 * The agent runs next to the user's private services (its own API among them), so a URL is an attack
 * surface: only http(s), no credentials; loopback, private, link-local and other special-purpose addresses
 * are refused unless the URL's exact host and port are listed in modules.ocr.allowed_url_hosts (a local
 * object store serving presigned URLs, say). The address is checked at connect time (a custom DNS lookup),
 * so a name that resolves to a public address for a check and to a private one for the connection (DNS
 * rebinding) cannot slip through; IP literals in any spelling (2130706433, 127.1, 0x7f.1, [::ffff:7f00:1])
 * are normalised by the URL parser and checked the same way. Redirects are followed by hand (at most 3) and
 * every hop is checked again; the body is capped and the whole fetch has a deadline. Logs carry the host
 * and path only (urlForLog): query strings hold presigned signatures.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import { MemexError } from '../util/errors.ts';

export class UrlFetchError extends MemexError {
  override name = 'UrlFetchError';
  constructor(
    status: number,
    message: string,
  ) {
    super(message, 'AGENT.URL_FETCH', status);
  }
}

export interface UrlFetchOptions {
  /**
   * `host:port` entries (lowercase; a bare `host` means the scheme's default port) that may be fetched even when
   * they resolve to a loopback, private or link-local address.
   */
  allowedHosts: string[];
  maxBytes: number;
  timeoutMs: number;
  maxRedirects?: number;
}

/** Address ranges no URL may reach unless allowed: IANA special-purpose blocks (RFC 6890 and successors). */
const NON_PUBLIC = new net.BlockList();
for (const [prefix, bits] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.0.2.0', 24], ['192.88.99.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15],
  ['198.51.100.0', 24], ['203.0.113.0', 24], ['224.0.0.0', 4], ['240.0.0.0', 4],
] as const) NON_PUBLIC.addSubnet(prefix, bits, 'ipv4');
for (const [prefix, bits] of [
  ['::', 96], // unspecified, loopback and IPv4-compatible (IPv4-mapped ::ffff:a.b.c.d is matched by the IPv4 rules)
  ['64:ff9b::', 96], ['64:ff9b:1::', 48], ['100::', 64], ['2001::', 32], ['2001:db8::', 32], ['2002::', 16],
  ['fc00::', 7], ['fe80::', 10], ['fec0::', 10], ['ff00::', 8],
] as const) NON_PUBLIC.addSubnet(prefix, bits, 'ipv6');

/** True for an address on the public internet; false for loopback, private, link-local and reserved ones. */
export function isPublicAddress(address: string): boolean {
  const a = address.replace(/^\[|\]$/g, '').toLowerCase();
  const family = net.isIP(a);
  if (family === 0) return false;
  return !NON_PUBLIC.check(a, family === 4 ? 'ipv4' : 'ipv6');
}


function isAllowed(url: URL, allowedHosts: string[]): boolean {
  const host = url.hostname.toLowerCase();
  const port = url.port || (url.protocol === 'https:' ? '443' : '80');
  return allowedHosts.some((entry) => {
    const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(entry);
    return !!m && m[1] === host && (m[2] ?? (url.protocol === 'https:' ? '443' : '80')) === port;
  });
}

const refusal = (host: string) =>
  `URL host ${host} is not a public address (loopback, private, link-local or reserved); allow its host:port in modules.ocr.allowed_url_hosts to fetch it`;

function checkUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new UrlFetchError(400, 'url must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new UrlFetchError(400, `URL scheme ${url.protocol.replace(':', '')} is not allowed (http and https only)`);
  }
  if (url.username || url.password) throw new UrlFetchError(400, 'URLs with credentials are not allowed');
  return url;
}

export async function fetchUrlBytes(raw: string, opts: UrlFetchOptions): Promise<{ data: Buffer; contentType: string | undefined }> {
  const deadline = Date.now() + opts.timeoutMs;
  let url = checkUrl(raw);
  for (let hop = 0; hop <= (opts.maxRedirects ?? 3); hop++) {
    const res = await requestOnce(url, opts, deadline);
    if (res.redirect) {
      url = checkUrl(new URL(res.redirect, url).toString());
      continue;
    }
    return { data: res.data!, contentType: res.contentType };
  }
  throw new UrlFetchError(502, 'Too many redirects');
}

function requestOnce(
  url: URL,
  opts: UrlFetchOptions,
  deadline: number,
): Promise<{ redirect?: string; data?: Buffer; contentType?: string }> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const explicitlyAllowed = isAllowed(url, opts.allowedHosts);

  // IP literals never reach the lookup function, so check them here.
  if (net.isIP(hostname) && !explicitlyAllowed && !isPublicAddress(hostname)) {
    return Promise.reject(new UrlFetchError(403, refusal(hostname)));
  }
  const lookup: net.LookupFunction = (host, options, callback) => {
    dns.lookup(host, { all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const list = addresses as dns.LookupAddress[];
      // One non-public address among the answers refuses the host: the connection could pick any of them.
      const usable = explicitlyAllowed ? list : list.filter((a) => isPublicAddress(a.address));
      if (usable.length === 0 || usable.length !== list.length) {
        return (callback as (e: Error) => void)(Object.assign(new Error(refusal(host)), { code: 'EHOSTNOTALLOWED' }));
      }
      const first = usable[0];
      if ((options as { all?: boolean }).all) return (callback as (e: null, a: dns.LookupAddress[]) => void)(null, usable);
      (callback as (e: null, a: string, f: number) => void)(null, first.address, first.family);
    });
  };

  return new Promise((resolve, reject) => {
    const remaining = deadline - Date.now();
    if (remaining <= 0) return reject(new UrlFetchError(504, 'URL fetch timed out'));
    const mod = url.protocol === 'https:' ? https : http;
    const req = mod.get(url, { lookup, timeout: remaining, headers: { accept: 'image/*' } }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        return resolve({ redirect: res.headers.location });
      }
      if (status < 200 || status >= 300) {
        res.resume();
        return reject(new UrlFetchError(502, `URL answered HTTP ${status}`));
      }
      const declared = Number(res.headers['content-length'] ?? NaN);
      if (Number.isFinite(declared) && declared > opts.maxBytes) {
        res.destroy();
        return reject(new UrlFetchError(413, `Image at URL is ${declared} bytes; the limit is ${opts.maxBytes} bytes`));
      }
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > opts.maxBytes) {
          res.destroy();
          reject(new UrlFetchError(413, `Image at URL is larger than the limit of ${opts.maxBytes} bytes`));
          return;
        }
        chunks.push(c);
      });
      res.on('end', () => resolve({ data: Buffer.concat(chunks), contentType: res.headers['content-type'] }));
      res.on('error', (e) => reject(new UrlFetchError(502, `URL fetch failed: ${e.message}`)));
    });
    const timer = setTimeout(() => req.destroy(new UrlFetchError(504, 'URL fetch timed out')), remaining);
    req.on('close', () => clearTimeout(timer));
    req.on('timeout', () => req.destroy(new UrlFetchError(504, 'URL fetch timed out')));
    req.on('error', (e: Error & { code?: string }) => {
      if (e instanceof UrlFetchError) return reject(e);
      if (e.code === 'EHOSTNOTALLOWED') return reject(new UrlFetchError(403, e.message));
      if (e.code === 'ENOTFOUND' || e.code === 'EAI_AGAIN') return reject(new UrlFetchError(502, `URL host ${hostname} could not be resolved`));
      reject(new UrlFetchError(502, `URL fetch failed: ${e.message}`));
    });
  });
}
