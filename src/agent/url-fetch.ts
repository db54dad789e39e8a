/**
 * SSRF-safe download for POST /v1/ocr {url}.
 *
 * The agent runs next to the user's private services, so a URL is an attack surface: only http(s);
 * the address is checked at connect time (a custom DNS lookup), so a name that resolves to a loopback
 * address for the check and to something else for the connection (DNS rebinding) cannot slip through;
 * hosts other than loopback only when listed in modules.ocr.allowed_url_hosts; redirects are followed
 * by hand (at most 3) and every hop is checked again; the body is capped and the whole fetch has a
 * deadline.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';

export class UrlFetchError extends Error {
  override name = 'UrlFetchError';
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

export interface UrlFetchOptions {
  /** Host names (lowercase) allowed besides loopback addresses. */
  allowedHosts: string[];
  maxBytes: number;
  timeoutMs: number;
  maxRedirects?: number;
}

export function isLoopbackIp(address: string): boolean {
  const a = address.toLowerCase();
  if (net.isIPv4(a)) return a.startsWith('127.');
  if (a === '::1') return true;
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  return mapped ? mapped[1].startsWith('127.') : false;
}

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
  const explicitlyAllowed = opts.allowedHosts.includes(hostname.toLowerCase());

  // IP literals never reach the lookup function, so check them here.
  if (net.isIP(hostname) && !explicitlyAllowed && !isLoopbackIp(hostname)) {
    return Promise.reject(new UrlFetchError(403, `URL host ${hostname} is not allowed (loopback or modules.ocr.allowed_url_hosts only)`));
  }
  const lookup: net.LookupFunction = (host, options, callback) => {
    dns.lookup(host, { all: true }, (err, addresses) => {
      if (err) return (callback as (e: Error) => void)(err);
      const list = addresses as dns.LookupAddress[];
      const usable = explicitlyAllowed ? list : list.filter((a) => isLoopbackIp(a.address));
      if (usable.length === 0 || (!explicitlyAllowed && usable.length !== list.length)) {
        return (callback as (e: Error) => void)(
          Object.assign(new Error(`URL host ${host} is not allowed (loopback or modules.ocr.allowed_url_hosts only)`), { code: 'EHOSTNOTALLOWED' }),
        );
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
