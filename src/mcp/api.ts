/**
 * How the MCP tools reach memex: only through the public HTTP API, never the database. Over stdio
 * the routes are called over node:http at MEMEX_URL; inside the gateway (/mcp) through Fastify's inject,
 * which runs the same hooks, auth, validation and serialisation as a socket request without needing
 * to know the address the server listens on.
 */
import { MemexError } from '../util/errors.ts';
import type { FastifyInstance } from 'fastify';
import { createCall, type CallAnswer, type CallInput, type Transport, type TransportAnswer } from '../client/call.ts';
import { ClientError } from '../client/errors.ts';
import { createServerClient } from '../client/server.ts';
import { type ServerTarget } from '../client/target.ts';
import type { OperationName } from '../schemas/operations.ts';

export interface MemexApi {
  /** Where the tools send requests, for messages (a URL, or "this server"). */
  readonly where: string;
  /** How a request reaches the routes; `call` (src/client/call.ts) sends the route table's operations over it. */
  readonly transport: Transport;
}

/** A failure the assistant can act on; the tool returns it as an isError result. */
export class ToolError extends MemexError {
  constructor(
    message: string,
    /** The status of the answer it comes from, when it comes from one. */
    readonly answerStatus?: number,
    /** That answer's body as JSON. */
    readonly body?: any,
  ) {
    super(message, 'MCP.TOOL_FAILED');
  }
}

/** The routes of a running memex server (stdio transport), found by the client verbs' rule (src/client/target.ts). */
export function httpApi(target: ServerTarget, timeoutMs = 60_000): MemexApi {
  const { transport } = createServerClient(target);
  return {
    where: target.url,
    async transport(req) {
      try {
        return await transport({ ...req, signal: AbortSignal.timeout(timeoutMs) });
      } catch (err) {
        if (err instanceof ClientError) throw new ToolError(err.message);
        if ((err as Error).name === 'TimeoutError') {
          throw new ToolError(`the memex server at ${target.url} did not answer within ${timeoutMs / 1000} s; check that it is healthy (memex status)`);
        }
        throw err;
      }
    },
  };
}

/** The routes of this gateway, in process, with the caller's own Authorization header (/mcp). */
export function injectApi(app: FastifyInstance, authorization: string | undefined): MemexApi {
  return {
    where: 'this memex server',
    async transport(req) {
      const res = await app.inject({
        method: req.method as 'GET',
        url: req.path,
        headers: { ...req.headers, ...(authorization ? { authorization } : {}) },
        ...(req.body === undefined ? {} : { payload: req.body as string }),
      });
      return { status: res.statusCode, text: res.body };
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

/** A body as JSON; text that is not JSON as `{detail}` (its start), as the tools read error bodies. */
function bodyOf(text: string): any {
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return { detail: text.slice(0, 200) };
  }
}

/**
 * Calls an operation of the route table and returns its JSON on 2xx; anything else becomes a ToolError that
 * says what to change. `names` maps the route's parameter names to the tool's argument names.
 */
export function callOk<K extends OperationName>(api: MemexApi, op: K, input: CallInput<K>, names: Record<string, string> = {}): Promise<CallAnswer<K>> {
  return createCall(api.transport, { refusal: ({ answer }) => refusal(api, answer, names) })(op, input);
}

/** The ToolError for an answer that is not 2xx. */
function refusal(api: MemexApi, answer: TransportAnswer, names: Record<string, string>): ToolError {
  const status = answer.status;
  const body = bodyOf(answer.text);
  if (status === 401 || status === 403) {
    const detail = typeof body?.detail === 'string' ? `: ${body.detail}` : '';
    return new ToolError(
      `the memex server at ${api.where} refused the token (${status}${detail}); give memex the server's token ` +
        '(AUTH_TOKEN, --token, or DATA_DIR pointing at the data directory holding auth-token)',
      status,
      body,
    );
  }
  if (status === 422 || status === 400) {
    return new ToolError(`invalid argument: ${describeValidation(body, names) ?? JSON.stringify(body).slice(0, 300)}`, status, body);
  }
  const detail = typeof body?.detail === 'string' ? body.detail : typeof body?.message === 'string' ? body.message : null;
  return new ToolError(
    status === 404
      ? (detail ?? 'not found')
      : status === 503 || status === 502
        ? `the memex server at ${api.where} is unavailable (${status}${detail ? `: ${detail}` : ''}); try again shortly`
        : `the memex server answered ${status}${detail ? `: ${detail}` : ''}`,
    status,
    body,
  );
}
