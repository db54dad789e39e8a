/**
 * POST /mcp: the MCP server over streamable HTTP, registered in the gateway's bearer-token scope.
 * Stateless (no session ids): every request gets its own McpServer and transport, so concurrent
 * clients share nothing and a restart loses nothing. JSON responses, no SSE stream: the tools send
 * no notifications. The tools reach the routes through inject with the caller's own token.
 *
 * An MCP client is an assistant that hands what it reads to a language model, usually a hosted one. So a
 * client on another machine gets what the tools return redacted by the egress policy (src/privacy/egress.ts:
 * EGRESS_REDACT, EGRESS_TRUSTED_HOSTS), one log line per call; a client on this machine, like the stdio
 * transport, gets the original.
 */
import type { FastifyInstance } from 'fastify';
import { prepareEgress } from '../privacy/egress.ts';
import { injectApi, type MemexApi } from './api.ts';

/**
 * The MCP SDK and the tools (with zod) load at the first POST /mcp, not with the gateway: they were
 * ~0.5 s of module loading in every start, for a route most starts never see (issue 34).
 */
let sdk: Promise<[typeof import('@modelcontextprotocol/sdk/server/streamableHttp.js'), typeof import('./tools.ts')]> | undefined;
const loadSdk = () => (sdk ??= Promise.all([import('@modelcontextprotocol/sdk/server/streamableHttp.js'), import('./tools.ts')]));

export interface McpRouteOptions {
  /** The root gateway, whose routes the tools call. */
  gateway: FastifyInstance;
  allowWrite: boolean;
}

const notAllowed = {
  jsonrpc: '2.0',
  error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless, POST JSON-RPC messages to /mcp' },
  id: null,
};

/** The API as a client at `address` may read it: answers pass the egress policy for that address. */
function forPeer(api: MemexApi, address: string | undefined): MemexApi {
  const host = (address ?? '').replace(/^::ffff:/i, '');
  const peer = host.includes(':') ? `http://[${host}]/` : `http://${host || 'unknown.invalid'}/`;
  return {
    where: api.where,
    async transport(req) {
      const res = await api.transport(req);
      let body: unknown;
      try {
        body = JSON.parse(res.text);
      } catch {
        return { ...res, text: prepareEgress(peer, 'mcp', res.text) };
      }
      return { ...res, text: JSON.stringify(prepareEgress(peer, 'mcp', body)) };
    },
  };
}

export async function mcpRoutes(app: FastifyInstance, opts: McpRouteOptions): Promise<void> {
  app.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
    const [{ StreamableHTTPServerTransport }, { createMcpServer }] = await loadSdk();
    const api = forPeer(injectApi(opts.gateway, req.headers.authorization), req.socket.remoteAddress);
    const server = createMcpServer(api, { allowWrite: opts.allowWrite });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req.raw, reply.raw, req.body);
    } catch (err) {
      req.log.error({ err }, 'MCP request failed');
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { 'content-type': 'application/json' });
        reply.raw.end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal server error' }, id: null }));
      }
    }
  });
  for (const method of ['GET', 'DELETE'] as const) {
    app.route({ method, url: '/mcp', schema: { hide: true }, handler: async (_req, reply) => reply.code(405).header('allow', 'POST').send(notAllowed) });
  }
}
