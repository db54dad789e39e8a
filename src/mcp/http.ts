/**
 * POST /mcp: the MCP server over streamable HTTP, registered in the gateway's bearer-token scope.
 * Stateless (no session ids): every request gets its own McpServer and transport, so concurrent
 * clients share nothing and a restart loses nothing. JSON responses, no SSE stream: the tools send
 * no notifications. The tools reach the routes through inject with the caller's own token.
 */
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { injectApi } from './api.ts';
import { createMcpServer } from './tools.ts';

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

export async function mcpRoutes(app: FastifyInstance, opts: McpRouteOptions): Promise<void> {
  app.post('/mcp', { schema: { hide: true } }, async (req, reply) => {
    const server = createMcpServer(injectApi(opts.gateway, req.headers.authorization), { allowWrite: opts.allowWrite });
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
