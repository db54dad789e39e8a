/**
 * docs/agent.md's table of the YAML keys is written from the schema (src/agent/config-schema.ts) and must stay
 * what scripts/config-docs.ts writes; the example file shown there must be one the agent reads.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { describe, expect, it } from 'vitest';
import { renderAgentYamlBlocks } from '../../src/agent/config-docs.ts';
import { validateAgentConfig } from '../../src/agent/config.ts';

const page = fs.readFileSync(path.join(import.meta.dirname, '..', '..', 'docs', 'agent.md'), 'utf8');

describe('docs/agent.md and the agent YAML schema', () => {
  it('the table of keys is what scripts/config-docs.ts writes', () => {
    expect(page).toContain('<!-- agent-yaml -->');
    expect(page, 'docs/agent.md differs from src/agent/config-schema.ts: run node --import tsx scripts/config-docs.ts').toBe(renderAgentYamlBlocks(page));
  });

  it('lists every key the reader accepts', () => {
    for (const key of ['port', 'auth.secret_file', 'modules.ocr.timeout_ms', 'modules.mail.sources[].poll_interval', 'modules.contacts.sources[].address_books', 'modules.ocr.recognition_level']) {
      expect(page).toContain(`| \`${key}\` |`);
    }
  });

  it('the example file is valid', () => {
    const example = /An example[^\n]*\n\n```yaml\n([\s\S]*?)```/.exec(page);
    expect(example).not.toBeNull();
    const cfg = validateAgentConfig(YAML.parse(example![1]), 'agent.yaml', { HOME: process.env.HOME });
    expect(cfg.modules.mail.sources.map((s) => s.id)).toEqual(['apple-mail', 'work']);
  });
});
