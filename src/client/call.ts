/**
 * `call(op, input)`: the one way the clients of the public API (the web UI, the CLI verbs, MCP) reach a route.
 * The operation's name picks its method and path from the route table (src/schemas/operations.ts); its input
 * (path parameters, query, body) and its answer are typed from the route's own schemas (src/schemas/routes.ts),
 * so a client cannot send what the route does not take or read what it does not answer.
 *
 * How a request travels is the face's transport: fetch in the browser (fetchTransport below), node:http for
 * the CLI (src/client/server.ts), Fastify's inject inside the gateway (src/mcp/api.ts). Retries are an option
 * of the call. Any answer that is not 2xx throws ClientError, its message made by the face (`refusal`).
 *
 * Browser-safe and light: it imports only the table of names and paths, and the schemas' types.
 */
import type { Static, TSchema } from '@sinclair/typebox';
import { OPERATIONS, type OperationName } from '../schemas/operations.ts';
import type { Routes } from '../schemas/routes.ts';
import { ClientError } from './errors.ts';

type SchemaOf<K extends OperationName> = Routes[K]['schema'];
type Read<T> = T extends TSchema ? Static<T> : unknown;
/** A part of the input: required when its schema requires anything, else optional; absent when the route has none. */
type Part<S, From extends string, To extends string, Loose = false> = S extends { [P in From]: infer T }
  ? {} extends Read<T>
    ? { [P in To]?: Loosen<Read<T>, Loose> }
    : { [P in To]: Loosen<Read<T>, Loose> }
  : { [P in To]?: never };
/**
 * A query's fields are each optional (a field with a default reads as required in the schema's type, which
 * does not carry the default) and may be given as text, as they travel: the route coerces and validates them,
 * so a missing or malformed one is its 422. Only the names are held to the schema here. null means absent.
 */
type Loosen<T, Loose> = Loose extends true ? { [P in keyof T]?: T[P] | string | null | undefined } : T;

export type QueryValue = string | number | boolean | undefined | null | readonly (string | number)[];

/** What `call(op, …)` takes: the path parameters, query and body of the route's schemas. */
export type CallInput<K extends OperationName> = Part<SchemaOf<K>, 'params', 'params'> &
  Part<SchemaOf<K>, 'querystring', 'query', true> &
  Part<SchemaOf<K>, 'body', 'body'>;

type Responses<K extends OperationName> = SchemaOf<K> extends { response: infer R } ? R : {};
type Success = 200 | 201 | 202 | 204 | 207;
/** What `call(op, …)` answers: the route's 2xx bodies (unknown for a download, which is not JSON). */
export type CallAnswer<K extends OperationName> = { [S in Success & keyof Responses<K>]: Read<Responses<K>[S]> }[Success & keyof Responses<K>];

/** One request as a transport sends it: the path carries the query string. */
export interface TransportRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** JSON text, a multipart form (the UI's uploads) or a multipart body built in one buffer (the agent's uploads). */
  body?: string | FormData | Uint8Array;
  signal?: AbortSignal;
}

/** One answer read whole. */
export interface TransportAnswer {
  status: number;
  /** The status line's words ("Service Unavailable"), where the transport has them. */
  statusText?: string;
  text: string;
  headers?: Record<string, string | undefined>;
}

/**
 * Sends one request. Throws ClientError (status 0) when the server cannot be reached; an AbortError or
 * TimeoutError when the request's signal ends it.
 */
export type Transport = (req: TransportRequest) => Promise<TransportAnswer>;

/** What an attempt that is asked again (or was the last) met: its number from 1, its status (0: no answer) and why. */
export interface RetriedAttempt {
  attempt: number;
  status: number;
  reason: string;
}

/** Asking again: what is asked again is `retryableAnswer`'s rule and transport failures and timeouts, always. */
export interface Retries {
  /** Waits before each further attempt, e.g. [500, 1000]: three attempts in all. */
  backoffMs: number[];
  /** Injectable for tests; defaults to setTimeout. */
  sleep?: (ms: number) => Promise<void>;
  /** Told of each attempt that met no answer or one asked again, the last one too (the submitter logs them). */
  onRetryable?: (attempt: RetriedAttempt) => void;
}

export interface CallOptions {
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /** Each attempt ends after this long (a TimeoutError, asked again under `retries`). */
  timeoutMs?: number;
  /** Ask again after what `retryableAnswer` says and transport failures; without it one attempt is made. */
  retries?: Retries;
  /** A body sent as is instead of `input.body` as JSON (a multipart form). */
  form?: FormData;
}

/** What a face says about a refused request: the error its callers catch (default: the detail of the body). */
export type Refusal = (failure: { op: OperationName; method: string; path: string; answer: TransportAnswer; body: unknown }) => Error;

export interface CallerOptions {
  refusal?: Refusal;
  /** Options every call gets (a call's own override them). */
  defaults?: CallOptions;
}

/** The path of an operation with its parameters filled in (Fastify's `::` is a literal colon). */
export function pathOf(op: OperationName, params: Record<string, unknown> = {}): string {
  return OPERATIONS[op].url.replace(/::|:(\w+)/g, (m, name: string | undefined) => {
    if (!name) return ':';
    const v = params[name];
    if (v === undefined || v === null || v === '') throw new TypeError(`${op}: the path parameter ${name} is missing`);
    return encodeURIComponent(String(v));
  });
}

/** `?a=1&b=x` from the defined values (arrays repeat the key), or '' when there are none. */
export function queryString(query: Record<string, QueryValue> = {}): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) {
    if (v === undefined || v === null) continue;
    for (const item of Array.isArray(v) ? v : [v]) q.append(k, String(item));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

/** JSON of an answer, or undefined when it is empty or not JSON. */
export function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

const defaultRefusal: Refusal = ({ method, path, answer, body }) => {
  const detail = (body as { detail?: unknown } | undefined)?.detail;
  const words = typeof detail === 'string' ? detail : answer.text.slice(0, 300);
  return new ClientError(answer.status, `${method} ${path.split('?')[0]} answered ${answer.status}: ${words}`, answer.text);
};

/**
 * Whether an answer is worth the same request again: 429 and 503 (the server asks to), or any refusal whose error
 * envelope says `retryable: true` (src/util/error-codes.ts: a 507 full disk, a truncated upload). The one rule
 * of every retrying client; transport failures and timeouts are asked again as well (`send`).
 */
export function retryableAnswer(answer: TransportAnswer): boolean {
  if (answer.status === 429 || answer.status === 503) return true;
  if (answer.status < 400) return false;
  const error = (parseJson(answer.text) as { error?: { retryable?: unknown } } | undefined)?.error;
  return typeof error === 'object' && error !== null && error.retryable === true;
}

/** The most of an answer's text a ClientError of `send` keeps (the body of an HTML error page can be large). */
const MAX_ERROR_BODY = 2000;
const wait = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
const duration = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

/** An attempt's signal: the caller's, ended early by the attempt's timeout. */
function attemptSignal(signal: AbortSignal | undefined, timeoutMs: number | undefined): AbortSignal | undefined {
  if (timeoutMs === undefined) return signal;
  const timeout = AbortSignal.timeout(timeoutMs);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

/**
 * Sends `req` with the retries asked for: the answer of the first attempt that is not retried, with the status of
 * every attempt (0 for none), or, when the attempts run out, ClientError with status -1 and "Exceeded retry
 * attempts" (the host-agent spec's words), its `reasons` naming each attempt's status or timeout.
 */
export async function send(
  transport: Transport,
  req: TransportRequest,
  opts: Pick<CallOptions, 'retries' | 'timeoutMs'> = {},
): Promise<TransportAnswer & { attempts: number[] }> {
  const { retries } = opts;
  const backoff = retries?.backoffMs ?? [];
  const sleep = retries?.sleep ?? wait;
  const statuses: number[] = [];
  const reasons: string[] = [];
  let last: TransportAnswer | undefined;
  for (let attempt = 0; attempt <= backoff.length; attempt++) {
    if (attempt > 0) await sleep(backoff[attempt - 1]);
    try {
      last = await transport({ ...req, signal: attemptSignal(req.signal, opts.timeoutMs) });
    } catch (err) {
      // Asked again: a server that could not be reached (ClientError status 0), an attempt that timed out.
      const timedOut = (err as Error).name === 'TimeoutError' && !req.signal?.aborted;
      if (!retries || !(timedOut || err instanceof ClientError)) throw err;
      const reason = timedOut ? `timed out after ${duration(opts.timeoutMs ?? 0)}` : (err as Error).message;
      statuses.push(0);
      reasons.push(reason);
      retries.onRetryable?.({ attempt: attempt + 1, status: 0, reason });
      continue;
    }
    const reason = `${last.status}${last.statusText ? ` ${last.statusText}` : ''}`;
    statuses.push(last.status);
    reasons.push(reason);
    if (!retries || !retryableAnswer(last)) return { ...last, attempts: statuses };
    retries.onRetryable?.({ attempt: attempt + 1, status: last.status, reason });
  }
  throw new ClientError(-1, 'Exceeded retry attempts', last?.text.slice(0, MAX_ERROR_BODY), statuses, reasons);
}

export type Call = <K extends OperationName>(op: K, input: CallInput<K>, options?: CallOptions) => Promise<CallAnswer<K>>;

/** The `call` of one transport: 2xx answers as the route's JSON, anything else thrown as the face's ClientError. */
export function createCall(transport: Transport, caller: CallerOptions = {}): Call {
  const refusal = caller.refusal ?? defaultRefusal;
  return async (op, input, options = {}) => {
    const o = { ...caller.defaults, ...options, headers: { ...caller.defaults?.headers, ...options.headers } };
    const { method } = OPERATIONS[op];
    const { params, query, body } = input as { params?: Record<string, unknown>; query?: Record<string, QueryValue>; body?: unknown };
    const path = pathOf(op, params) + queryString(query);
    const headers: Record<string, string> = { accept: 'application/json', ...o.headers };
    let sent: string | FormData | undefined = o.form;
    if (sent === undefined && body !== undefined) {
      headers['content-type'] = 'application/json';
      sent = JSON.stringify(body);
    }
    const answer = await send(transport, { method, path, headers, body: sent, signal: o.signal }, o);
    const parsed = parseJson(answer.text);
    if (answer.status < 200 || answer.status > 299) throw refusal({ op, method, path, answer, body: parsed });
    return parsed as CallAnswer<typeof op>;
  };
}

export interface FetchTransportOptions {
  credentials?: 'same-origin' | 'include' | 'omit';
  redirect?: 'follow' | 'error' | 'manual';
  /** The fetch to send with (the agent's is injectable); the global one by default. */
  fetch?: typeof fetch;
  /** The words of a request that got no answer, ClientError's message; default "network error". */
  failure?: (err: Error) => string;
}

/**
 * The fetch transport: the browser's (`base` the page's own origin by default, with the session cookie:
 * `credentials: 'same-origin'`) and the agent's submitter's. A network failure is ClientError status 0; an answer
 * whose body cannot be read is answered with an empty text.
 */
export function fetchTransport(base = '', init: FetchTransportOptions = { credentials: 'same-origin' }): Transport {
  const { fetch: fetchImpl, failure, ...fetchInit } = init;
  return async (req) => {
    let res: Response;
    try {
      res = await (fetchImpl ?? fetch)(base + req.path, { method: req.method, headers: req.headers, body: req.body as RequestInit["body"], signal: req.signal, ...fetchInit });
    } catch (err) {
      const name = (err as Error).name;
      if (name === 'AbortError' || name === 'TimeoutError') throw err;
      throw new ClientError(0, failure ? failure(err as Error) : 'network error');
    }
    const headers: Record<string, string> = {};
    res.headers.forEach((v, k) => (headers[k] = v));
    return { status: res.status, statusText: res.statusText, text: await res.text().catch(() => ''), headers };
  };
}
