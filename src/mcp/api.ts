/**
 * How the MCP tools reach memex: only through the public HTTP API, never the database. Over stdio
 * the routes are called with fetch at MEMEX_URL; inside the gateway (/mcp) through Fastify's inject,
 * which runs the same hooks, auth, validation and serialisation as a socket request without needing
 * to know the address the server listens on.
 */
import type { FastifyInstance } from 'fastify';
import { createServerClient, ServerError } from '../client/server.ts';
import { type ServerTarget } from '../client/target.ts';

export interface ApiRequest {
  method: 'GET' | 'POST';
  path: string;
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
}

export interface ApiResponse {
  status: number;
  body: any;
}

export interface MemexApi {
  /** Where the tools send requests, for messages (a URL, or "this server"). */
  readonly where: string;
  call(req: ApiRequest): Promise<ApiResponse>;
}

/** A failure the assistant can act on; the tool returns it as an isError result. */
export class ToolError extends Error {}

function pathWithQuery(req: ApiRequest): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${req.path}?${s}` : req.path;
}

function parseBody(text: string): unknown {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

/** The routes of a running memex server (stdio transport), found by the client verbs' rule (src/client/target.ts). */
export function httpApi(target: ServerTarget, timeoutMs = 60_000): MemexApi {
  const client = createServerClient(target);
  return {
    where: target.url,
    async call(req) {
      let res: Response;
      try {
        res = await client.fetch(req.method, req.path, {
          query: req.query,
          json: req.body,
          signal: AbortSignal.timeout(timeoutMs),
        });
      } catch (err) {
        if (err instanceof ServerError) throw new ToolError(err.message);
        if ((err as Error).name === 'TimeoutError') {
          throw new ToolError(`the memex server at ${target.url} did not answer within ${timeoutMs / 1000} s; check that it is healthy (memex status)`);
        }
        throw err;
      }
      return { status: res.status, body: parseBody(await res.text()) };
    },
  };
}

/** The routes of this gateway, in process, with the caller's own Authorization header (/mcp). */
export function injectApi(app: FastifyInstance, authorization: string | undefined): MemexApi {
  return {
    where: 'this memex server',
    async call(req) {
      const res = await app.inject({
        method: req.method,
        url: pathWithQuery(req),
        headers: authorization ? { authorization } : {},
        ...(req.body === undefined ? {} : { payload: req.body as object }),
      });
      return { status: res.statusCode, body: parseBody(res.body) };
    },
  };
}

/** The 422 detail list of a route as one sentence naming the argument. */
function describeValidation(body: any, names: Record<string, string>): string | null {
  if (!Array.isArray(body?.detail)) return null;
  return body.detail
    .slice(0, 3)
    .map((d: { loc?: unknown[]; msg?: string }) => {
      const field = String(d.loc?.[d.loc.length - 1] ?? 'argument');
      return `${names[field] ?? field}: ${d.msg ?? 'invalid'}`;
    })
    .join('; ');
}

/**
 * Calls a route and returns its JSON on 2xx; anything else becomes a ToolError that says what to
 * change. `names` maps the route's parameter names to the tool's argument names. T is the route's
 * response type from src/schemas (the route's serialiser holds it to that schema).
 */
export async function callOk<T>(api: MemexApi, req: ApiRequest, names: Record<string, string> = {}): Promise<T> {
  return okBody<T>(api, await api.call(req), names);
}

/** The JSON of a 2xx response; any other status becomes a ToolError (see callOk). */
export function okBody<T>(api: MemexApi, res: ApiResponse, names: Record<string, string> = {}): T {
  if (res.status >= 200 && res.status < 300) return res.body as T;
  if (res.status === 401 || res.status === 403) {
    const detail = typeof res.body?.detail === 'string' ? `: ${res.body.detail}` : '';
    throw new ToolError(
      `the memex server at ${api.where} refused the token (${res.status}${detail}); give memex the server's token ` +
        '(AUTH_TOKEN, --token, or DATA_DIR pointing at the data directory holding auth-token)',
    );
  }
  if (res.status === 422 || res.status === 400) {
    throw new ToolError(`invalid argument: ${describeValidation(res.body, names) ?? JSON.stringify(res.body).slice(0, 300)}`);
  }
  const detail = typeof res.body?.detail === 'string' ? res.body.detail : typeof res.body?.message === 'string' ? res.body.message : null;
  if (res.status === 404) throw new ToolError(detail ?? 'not found');
  if (res.status === 503 || res.status === 502) {
    throw new ToolError(`the memex server at ${api.where} is unavailable (${res.status}${detail ? `: ${detail}` : ''}); try again shortly`);
  }
  throw new ToolError(`the memex server answered ${res.status}${detail ? `: ${detail}` : ''}`);
}
