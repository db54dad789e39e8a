/**
 * The client of the public API that the CLI verbs, MCP over stdio, contact import and the operator verbs share:
 * `call(op, input)` (call.ts) over node:http with the bearer token from the target rule (target.ts), errors fit
 * for a terminal, patience with a server that is starting, and the choice between a running server and the
 * database (serverOrDatabase). The verbs name operations of the route table; `request` and `stream` by method
 * and path are the layer under them.
 *
 * The module imports nothing heavy: `memex help` and the client verbs load it on every start.
 */
import http from 'node:http';
import { Readable } from 'node:stream';
import type { Database } from '../db/types.ts';
import { OPERATIONS, type OperationName } from '../schemas/operations.ts';
import { createCall, pathOf, type Call, type CallInput, type Transport } from './call.ts';
import { ClientError, errorDetail } from './errors.ts';
import { resolveServerTarget, type ServerTarget, type TargetFlags } from './target.ts';

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined | (string | number)[]>;
  /** Sent as JSON. */
  json?: unknown;
  /** Sent as is (FormData, Blob, string). */
  body?: RequestInit['body'];
  headers?: Record<string, string>;
  signal?: AbortSignal;
}

export interface ServerClient {
  readonly target: ServerTarget;
  /** An operation of the route table; waits while the server says it is starting; any other answer than 2xx throws ClientError. */
  call: Call;
  /** An operation's 2xx body as a stream (an export, a backup, an original); any other answer throws ClientError. */
  download<K extends OperationName>(op: K, input: CallInput<K>): Promise<Readable>;
  /** Requests as they go over node:http, without the wait for a starting server (MCP over stdio). */
  readonly transport: Transport;
  /** Full URL for a path such as /v1/search, with the query string. */
  urlFor(pathname: string, query?: RequestOptions['query']): string;
  /** A request by method and path whose 2xx JSON body is returned; any other answer throws ClientError. */
  request<T = unknown>(method: string, pathname: string, opts?: RequestOptions): Promise<T>;
  /** A request by method and path whose 2xx body is returned as a stream; any other answer throws ClientError. */
  stream(method: string, pathname: string, opts?: RequestOptions): Promise<Readable>;
  /** GET `pathname` and its status; throws ClientError (status 0) only when the server cannot be reached. */
  probe(pathname: string, signal?: AbortSignal): Promise<{ status: number }>;
}

/** The first `{detail:[{loc, msg}]}` messages, or `detail` as a string, or the text itself. */
function describeBody(body: unknown, text: string): string {
  return errorDetail(body) ?? text.slice(0, 300);
}

/** An answer read whole: status and body text. */
interface PlainAnswer {
  status: number;
  text: string;
}

/**
 * One request over node:http, without keep-alive, the body read whole. The JSON verbs (search, ask, open, status,
 * the health check) use it instead of fetch: fetch loads undici, the largest part of a client verb's start, and
 * its pooled connection outlived the answer. https URLs go through fetch (loading node:https costs the same).
 */
function plainRequest(url: string, method: string, headers: Record<string, string>, body: string | undefined, signal?: AbortSignal): Promise<PlainAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers: { ...headers, connection: 'close' }, agent: false, signal }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** Longest a client verb waits for a server that is starting (it says so on stderr meanwhile). */
const STARTING_WAIT_MS = 15 * 60_000;
/** How often a starting server is asked again (it sends Retry-After: 2). */
const STARTING_POLL_MS = 2000;

/**
 * What a 503 from a memex server that is starting (early-listener.ts) or preparing its search index
 * says it is doing (its body has the `phase`); undefined for any other answer.
 */
function startingServer(res: PlainAnswer): string | undefined {
  if (res.status !== 503) return undefined;
  let body: { phase?: unknown; progress?: unknown } | undefined;
  try {
    body = JSON.parse(res.text);
  } catch {
    return undefined;
  }
  if (typeof body?.phase !== 'string') return undefined;
  // Said again every tenth of the way.
  const tenth = Math.floor(10 * (Number(body.progress) || 0)) * 10;
  return body.phase === 'index' ? `the server is preparing its search index (${tenth} %)` : `the server is starting (${body.phase})`;
}

export function createServerClient(
  target: ServerTarget,
  /** Where "the server is starting, waiting" goes (default stderr). */
  notice: (message: string) => void = (m) => process.stderr.write(`memex: ${m}\n`),
): ServerClient {
  const urlFor = (pathname: string, query?: RequestOptions['query']) => {
    const u = new URL(pathname, `${target.url}/`);
    for (const [k, v] of Object.entries(query ?? {})) {
      if (v === undefined) continue;
      for (const item of Array.isArray(v) ? v : [v]) u.searchParams.append(k, String(item));
    }
    return u.toString();
  };
  const unreachable = (err: unknown): ClientError => {
    const code = (err as { cause?: { code?: string } }).cause?.code ?? (err as { code?: string }).code;
    return new ClientError(
      0,
      `no memex server answers at ${target.url}${code ? ` (${code})` : ''}: start one with \`memex serve\`, ` +
        'or point --url / MEMEX_URL at it',
    );
  };
  const prepare = (opts: RequestOptions) => {
    const headers: Record<string, string> = { ...opts.headers };
    if (target.token) headers.authorization = `Bearer ${target.token}`;
    let body = opts.body;
    if (opts.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(opts.json);
    }
    return { headers, body };
  };
  const doFetch = async (method: string, pathname: string, opts: RequestOptions = {}) => {
    const { headers, body } = prepare(opts);
    try {
      return await fetch(urlFor(pathname, opts.query), { method, headers, body, signal: opts.signal });
    } catch (err) {
      if ((err as Error).name === 'AbortError' || (err as Error).name === 'TimeoutError') throw err;
      throw unreachable(err);
    }
  };
  /** The answer read whole: over node:http for http URLs with a JSON or no body, else through fetch. */
  const plain = async (method: string, pathname: string, opts: RequestOptions = {}): Promise<PlainAnswer> => {
    const { headers, body } = prepare(opts);
    const url = urlFor(pathname, opts.query);
    if (!url.startsWith('http:') || (body !== undefined && typeof body !== 'string')) {
      const res = await doFetch(method, pathname, opts);
      return { status: res.status, text: await res.text() };
    }
    try {
      return await plainRequest(url, method, headers, body, opts.signal);
    } catch (err) {
      if ((err as Error).name === 'AbortError' || (err as Error).name === 'TimeoutError') throw err;
      throw unreachable(err);
    }
  };
  /** `plain`, asked again while the server says it is starting (a start, the index read at start). */
  const answered = async (method: string, pathname: string, opts: RequestOptions = {}): Promise<PlainAnswer> => {
    const until = Date.now() + STARTING_WAIT_MS;
    let said = '';
    for (;;) {
      const res = await plain(method, pathname, opts);
      const what = Date.now() < until ? startingServer(res) : undefined;
      if (!what) return res;
      if (what !== said) notice(`${(said = what)}; waiting`);
      await new Promise((resolve) => setTimeout(resolve, STARTING_POLL_MS));
      if (opts.signal?.aborted) throw opts.signal.reason;
    }
  };
  /** The ClientError for an answer that is not 2xx, its message fit for a terminal. */
  const refused = (method: string, pathname: string, status: number, text: string): ClientError => {
    let body: unknown = undefined;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      /* not JSON */
    }
    if (status === 401 || status === 403) {
      const from = target.tokenSource === 'none' ? 'no token was found' : `the token from ${target.tokenSource}`;
      return new ClientError(
        status,
        `the server at ${target.url} refused the request (${status}): ${from}; pass --token, set AUTH_TOKEN, ` +
          'or set DATA_DIR to the server\'s data directory (its auth-token file)',
        text,
      );
    }
    return new ClientError(status, `${method} ${pathname} answered ${status}: ${describeBody(body, text)}`, text);
  };
  const refusal = async (method: string, pathname: string, res: PlainAnswer | Response): Promise<ClientError> =>
    refused(method, pathname, res.status, 'text' in res && typeof res.text === 'string' ? res.text : await (res as Response).text());
  /** The transport of `call`: the path carries its query string already. */
  const transport: Transport = async (req) =>
    plain(req.method, req.path, { headers: req.headers, body: req.body, signal: req.signal });
  /** As `transport`, asked again while the server says it is starting. */
  const patient: Transport = async (req) =>
    answered(req.method, req.path, { headers: req.headers, body: req.body, signal: req.signal });
  const stream = async (method: string, pathname: string, opts?: RequestOptions): Promise<Readable> => {
    const res = await doFetch(method, pathname, opts);
    if (!res.ok || !res.body) throw await refusal(method, pathname, res);
    return Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
  };
  return {
    target,
    transport,
    call: createCall(patient, { refusal: ({ method, path, answer }) => refused(method, path.split('?')[0], answer.status, answer.text) }),
    download: (op, input) => {
      const { params, query } = input as { params?: Record<string, unknown>; query?: Record<string, string | number | boolean | undefined> };
      return stream(OPERATIONS[op].method, pathOf(op, params), { query });
    },
    urlFor,
    async request<T>(method: string, pathname: string, opts?: RequestOptions): Promise<T> {
      const res = await answered(method, pathname, opts);
      if (res.status < 200 || res.status > 299) throw await refusal(method, pathname, res);
      const text = res.text;
      try {
        return (text ? JSON.parse(text) : undefined) as T;
      } catch {
        return undefined as T;
      }
    },
    async probe(pathname: string, signal?: AbortSignal): Promise<{ status: number }> {
      return { status: (await plain('GET', pathname, { signal })).status };
    },
    stream,
  };
}

/** How long a server may take to answer its health check; one that takes longer is stuck, not absent. */
const HEALTH_TIMEOUT_MS = 10_000;

/**
 * The running server's client, or undefined when no memex server answers at the target (the client rule above).
 * The verbs that work with or without a server ask it when there is one: with the embedded database only the
 * server process may open it, and `gc` without a server also empties the search change log a server follows. So
 * only a refused connection means "no server"; a server that does not answer in time is an error, never a reason
 * to open the database beside it.
 */
export async function runningServer(flags: TargetFlags = {}, env: NodeJS.ProcessEnv = process.env): Promise<ServerClient | undefined> {
  const client = createServerClient(resolveServerTarget(flags, env));
  let res: { status: number };
  try {
    res = await client.probe(pathOf('health'), AbortSignal.timeout(HEALTH_TIMEOUT_MS));
  } catch (err) {
    if (err instanceof ClientError) return undefined;
    if ((err as Error).name === 'TimeoutError') {
      throw new ClientError(504, `the server at ${client.target.url} did not answer its health check within ${HEALTH_TIMEOUT_MS / 1000} s`);
    }
    throw err;
  }
  // Something else listens there (another program on the port): not a memex server.
  return res.status === 200 || res.status === 503 ? client : undefined;
}

/**
 * `viaServer` with the running server when there is one (runningServer), else `viaDatabase` on the database
 * `openDatabase` opens, closed again afterwards. `openDatabase` is the caller's so that `memex` can refuse the
 * embedded database another process holds before opening it.
 */
export async function serverOrDatabase<T>(
  where: { flags?: TargetFlags; env?: NodeJS.ProcessEnv; openDatabase: () => Promise<Database> },
  viaServer: (server: ServerClient) => Promise<T>,
  viaDatabase: (db: Database) => Promise<T>,
): Promise<T> {
  const server = await runningServer(where.flags, where.env);
  if (server) return viaServer(server);
  const db = await where.openDatabase();
  try {
    return await viaDatabase(db);
  } finally {
    await db.close();
  }
}
