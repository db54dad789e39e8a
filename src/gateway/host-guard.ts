/**
 * The gateway's Host and Origin rule (src/util/request-host.ts says which are answered and why): checked
 * first on every request — health, the web UI, unknown URLs and /mcp included — before the token and
 * before any work. A wrong Host is 421 Misdirected Request (the request names a server this is not), a
 * foreign Origin 403; the body is the error shape of the other refusals (`detail`, `error`), on /mcp the
 * JSON-RPC error the MCP transport itself answers with.
 *
 * The MCP SDK's transport has options for the same check (allowedHosts, allowedOrigins,
 * enableDnsRebindingProtection), deprecated in 1.32 in favour of a check before the transport; this is
 * that check, so /mcp follows the same rule as every other route.
 */
import type { FastifyInstance } from 'fastify';
import type { ServerConfig } from '../config/server.ts';
import { hostPolicy, HostRefusedError, judgeRequest, type HostPolicy } from '../util/request-host.ts';

/** The gateway's names: ALLOWED_HOSTS, and HOST when it is a name. */
export function gatewayHostPolicy(config: Pick<ServerConfig, 'allowedHosts' | 'host'>): HostPolicy {
  return hostPolicy({ allowedHosts: config.allowedHosts ?? [], boundHost: config.host, setting: 'ALLOWED_HOSTS' });
}

export function installHostGuard(app: FastifyInstance, policy: HostPolicy): void {
  app.addHook('onRequest', async (req) => {
    const refusal = judgeRequest(policy, req.headers);
    // src/gateway/errors.ts answers: the error envelope, or on /mcp the JSON-RPC error.
    if (refusal) throw new HostRefusedError(refusal);
  });
}
