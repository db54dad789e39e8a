import { validateAgentConfig, type AgentConfig } from '../../src/agent/config.ts';

export const SECRET = 'test-secret-0123456789';

/** A validated config from a YAML-shaped object, with a real secret and nothing read from the environment. */
export function testConfig(raw: Record<string, unknown> = {}): AgentConfig {
  const base: Record<string, unknown> = { auth: { secret: SECRET }, ...raw };
  return validateAgentConfig(base, 'agent.yaml', { HOME: process.env.HOME });
}

export const auth = { 'x-auth': SECRET };
