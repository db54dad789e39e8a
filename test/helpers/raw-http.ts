/**
 * One HTTP request over a real socket with exactly the headers given, Host included (fetch and inject pick the
 * Host themselves): what a browser sends after DNS rebinding, or a reverse proxy.
 */
import http from 'node:http';

export interface RawAnswer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
  json(): any;
}

export function rawRequest(
  url: string,
  opts: { method?: string; path?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawAnswer> {
  const base = new URL(url);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: base.hostname.replace(/^\[|\]$/g, ''),
        port: base.port,
        method: opts.method ?? 'GET',
        path: opts.path ?? '/',
        headers: { connection: 'close', ...(opts.body !== undefined ? { 'content-length': String(Buffer.byteLength(opts.body)) } : {}), ...opts.headers },
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body, json: () => JSON.parse(body) });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(opts.body);
  });
}
