/**
 * The gateway's port, open from the first moment of `memex serve`: before the database is open, the
 * migrations applied and the gateway's modules loaded (seconds on a quiet machine, a minute on a
 * loaded one). Until the gateway is attached it answers:
 *   GET /v1/healthz  200: the process is alive (liveness, as the spec defines the route)
 *   GET /v1/readyz   503 {ready: false, phase, progress}
 *   a page of the web UI  a small page that says what is being prepared and reloads itself
 *   anything else    503 with Retry-After and the same phase
 * so a load balancer, an operator's curl and a person at the browser see "starting (migrations)"
 * instead of a refused connection. A request naming another host, or from another origin's page, is
 * refused as the gateway refuses it (src/gateway/host-guard.ts), with a plain `{detail}` body. Then Fastify takes over the same server (its serverFactory).
 *
 * Deliberately light: only node:http here, so the CLI can listen before importing the server.
 */
import http from 'node:http';
import { hostPolicy, judgeRequest } from '../util/request-host.ts';

export type StartPhase = 'starting' | 'database' | 'migrations' | 'index' | 'ready';

/** What GET /v1/readyz reports while the server starts. */
export interface StartState {
  phase: StartPhase;
  /** Share of the phase done, 0..1. */
  progress: number;
}

export interface EarlyListener {
  server: http.Server;
  /** http://host:port as bound (port 0 gets a free port). */
  url: string;
  /** The phase reported until the gateway is attached. */
  state: StartState;
  /** Fastify's serverFactory: the gateway's handler serves every request from `attach()` on. */
  serverFactory(handler: http.RequestListener): http.Server;
  /** Hands the port to the gateway (after its `ready()`). */
  attach(): void;
  close(): Promise<void>;
}

const UI_PAGE = (what: string) => `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<meta name="viewport" content="width=device-width, initial-scale=1"><title>memex is starting</title></head>
<body style="font-family: system-ui, sans-serif; margin: 3rem"><h1>memex is starting</h1>
<p>${what}. This page reloads by itself.</p></body></html>
`;

function describe(s: StartState): string {
  const pct = `${Math.floor(100 * s.progress)} %`;
  switch (s.phase) {
    case 'database':
      return 'Opening the database';
    case 'migrations':
      return `Updating the database (${pct})`;
    case 'index':
      return `Preparing the search index (${pct})`;
    default:
      return 'Starting';
  }
}

export async function listenEarly(opts: {
  host: string;
  port: number;
  /** 'pglite' or 'postgres', for /v1/healthz (operator commands ask it which database a running server holds). */
  database: string;
  version: string;
  /** ALLOWED_HOSTS (src/util/request-host.ts). */
  allowedHosts?: readonly string[];
}): Promise<EarlyListener> {
  const state: StartState = { phase: 'starting', progress: 0 };
  const hosts = hostPolicy({ allowedHosts: opts.allowedHosts ?? [], boundHost: opts.host, setting: 'ALLOWED_HOSTS' });
  let gateway: http.RequestListener | null = null;
  let pending: http.RequestListener | null = null;
  const early: http.RequestListener = (req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store', ...headers });
      res.end(JSON.stringify(body));
    };
    const refusal = judgeRequest(hosts, req.headers);
    if (refusal) return send(refusal.status, { detail: refusal.message });
    if (req.method === 'GET' && path === '/v1/healthz') return send(200, { status: 'ok', version: opts.version, database: opts.database });
    const progress = Math.round(state.progress * 1000) / 1000;
    if (req.method === 'GET' && path === '/v1/readyz') {
      return send(503, { ready: false, phase: state.phase, progress, model: 'starting' });
    }
    const wantsPage = req.method === 'GET' && !path.startsWith('/v1/') && path !== '/mcp' && /text\/html/.test(req.headers.accept ?? '');
    if (wantsPage) {
      res.writeHead(503, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'retry-after': '2',
        'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'",
      });
      return res.end(UI_PAGE(describe(state)));
    }
    send(503, { detail: `memex is starting: ${describe(state).toLowerCase()}`, phase: state.phase, progress }, { 'retry-after': '2' });
  };
  const server = http.createServer((req, res) => (gateway ?? early)(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const addr = server.address();
  const port = typeof addr === 'object' && addr ? addr.port : opts.port;
  const url = `http://${opts.host.includes(':') ? `[${opts.host}]` : opts.host}:${port}`;
  return {
    server,
    url,
    state,
    serverFactory(handler) {
      pending = handler;
      return server;
    },
    attach() {
      if (!pending) throw new Error('no gateway to attach: build it with this listener as its serverFactory');
      gateway = pending;
    },
    async close() {
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
