/**
 * Rewrites the settings tables in docs/*.md (the `<!-- settings: … -->` blocks) from the declarations in
 * src/ (src/cli/settings.ts lists them), and the agent's YAML keys (`<!-- agent-yaml -->`, from
 * src/agent/config-schema.ts). Run after changing a setting or a key:
 *   node --import tsx scripts/config-docs.ts
 * test/config-env.test.ts and test/agent/config-docs.test.ts fail while a table differs from what this writes.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderSettingsBlocks } from '../src/cli/settings.ts';
import { renderAgentYamlBlocks } from '../src/agent/config-docs.ts';

const docs = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs');
for (const name of fs.readdirSync(docs).filter((f) => f.endsWith('.md'))) {
  const file = path.join(docs, name);
  const before = fs.readFileSync(file, 'utf8');
  const after = renderAgentYamlBlocks(renderSettingsBlocks(before));
  if (after !== before) {
    fs.writeFileSync(file, after);
    console.log(`updated docs/${name}`);
  }
}
