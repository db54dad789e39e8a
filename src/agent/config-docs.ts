/**
 * The table of the agent's YAML keys in docs/agent.md, written from the schema between `<!-- agent-yaml -->` and
 * `<!-- /agent-yaml -->` by scripts/config-docs.ts; test/agent/config-docs.test.ts fails while the two differ.
 */
import { AGENT_YAML } from './config-schema.ts';
import { documentTable } from './yaml-schema.ts';

const BLOCK = /<!-- agent-yaml -->\n[\s\S]*?<!-- \/agent-yaml -->/g;

/** `page` with every agent-yaml block rewritten from the schema. */
export function renderAgentYamlBlocks(page: string): string {
  return page.replace(BLOCK, () => `<!-- agent-yaml -->\n${documentTable(AGENT_YAML)}\n<!-- /agent-yaml -->`);
}
