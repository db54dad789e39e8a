/**
 * The agent's gateway client: the public API's submitter (src/client/submit.ts) configured from the agent's
 * `gateway` settings.
 */
import {
  createGatewayClient,
  type GatewayClient,
  type GatewayClientOptions,
} from '../client/submit.ts';
import type { AgentConfig } from './config.ts';

export * from '../client/submit.ts';

export function gatewayClientFromConfig(cfg: AgentConfig, extra: Partial<GatewayClientOptions> = {}): GatewayClient {
  return createGatewayClient({
    baseUrl: cfg.gateway.base_url,
    ingestPath: cfg.gateway.ingest_path,
    ingestFilePath: cfg.gateway.ingest_file_path,
    timeoutSeconds: cfg.gateway.timeout,
    authToken: cfg.gateway.auth_token,
    authTokenSource: cfg.gateway.auth_token_source,
    ...extra,
  });
}

