/**
 * Every component's settings in one list, for the documentation (docs/configuration.md and the tables in
 * the component docs, checked by test/config-docs.test.ts) and for checking them all at once. It sits on
 * the CLI's floor because it imports every component; each declaration stays next to its reader.
 */
import { ConfigError, read, settingsTable, type SettingsGroup } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';
import { CLIENT_SETTINGS } from '../client/target.ts';
import { FILES_SETTINGS } from '../files/config.ts';
import { EMBEDDING_SETTINGS } from '../embedding/config.ts';
import { SEARCH_SETTINGS } from '../search/config.ts';
import { LLM_SETTINGS } from '../search/llm.ts';
import { EGRESS_SETTINGS } from '../privacy/egress.ts';
import { RELATIONSHIP_SETTINGS } from '../relationships/config.ts';
import { GC_SETTINGS } from '../maintenance/gc.ts';
import { MCP_SETTINGS } from '../mcp/config.ts';
import { AGENT_SETTINGS } from '../agent/settings.ts';
import { CALENDAR_SETTINGS } from '../calendar/config.ts';
import { ORGANIZE_SETTINGS } from '../organize/rules.ts';

export const ALL_SETTINGS: SettingsGroup[] = [
  SERVER_SETTINGS.group,
  CLIENT_SETTINGS.group,
  FILES_SETTINGS.group,
  EMBEDDING_SETTINGS.group,
  SEARCH_SETTINGS.group,
  LLM_SETTINGS.group,
  EGRESS_SETTINGS.group,
  RELATIONSHIP_SETTINGS.group,
  GC_SETTINGS.group,
  MCP_SETTINGS.group,
  AGENT_SETTINGS.group,
  CALENDAR_SETTINGS.group,
  ORGANIZE_SETTINGS.group,
];

/** Every setting's problem in `env`, one line each (empty when all parse). */
export function settingErrors(env: NodeJS.ProcessEnv, groups = ALL_SETTINGS): string[] {
  const errors: string[] = [];
  for (const s of groups.flatMap((g) => g.settings)) {
    try {
      read(env, s);
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      errors.push(err.message);
    }
  }
  return errors;
}

const MARKER = /<!-- settings: ([a-z ]+) -->\n[\s\S]*?<!-- \/settings -->/g;

/**
 * A Markdown page with every `<!-- settings: component … -->` block rewritten from the declarations
 * (`<!-- settings: all -->` lists every group under its title).
 */
export function renderSettingsBlocks(page: string, groups = ALL_SETTINGS): string {
  return page.replace(MARKER, (_, names: string) => {
    const wanted = names.trim().split(/\s+/);
    let body: string;
    if (wanted[0] === 'all') {
      body = groups.map((g) => `### ${g.title}\n\n${settingsTable([g])}`).join('\n\n');
    } else {
      const picked = wanted.map((n) => {
        const g = groups.find((x) => x.component === n);
        if (!g) throw new Error(`<!-- settings: ${names} -->: no settings group "${n}"`);
        return g;
      });
      body = settingsTable(picked);
    }
    return `<!-- settings: ${names} -->\n${body}\n<!-- /settings -->`;
  });
}

/**
 * `memex config`: every setting with the value this environment gives it (secrets masked), then the
 * problems, one a line. Exit 1 when there is any, so a service manager's pre-start check can run it.
 */
export function runConfigCommand(args: string[], env: NodeJS.ProcessEnv, out: (s: string) => void): number {
  if (args.length > 0) {
    out(`Usage: memex config\n  every setting, its value here (secrets masked) or its default, and any problem; docs/configuration.md\n`);
    return args[0] === '-h' || args[0] === '--help' ? 0 : 2;
  }
  const width = Math.max(...ALL_SETTINGS.flatMap((g) => g.settings.map((s) => s.name.length)));
  const lines: string[] = [];
  for (const g of ALL_SETTINGS) {
    lines.push(g.title);
    for (const s of g.settings) {
      const set = env[s.name] !== undefined && (s.keepRaw || env[s.name]!.trim() !== '');
      const shown = !set ? `(default: ${defaultLabel(s.default, s.defaultText)})` : s.secret ? '********' : JSON.stringify(env[s.name]);
      lines.push(`  ${s.name.padEnd(width)}  ${shown}`);
    }
  }
  const problems = settingErrors(env);
  for (const p of problems) lines.push(`error: ${p}`);
  // One write: the listing is read whole, often through a pager.
  out(`${lines.join('\n')}\n`);
  return problems.length > 0 ? 1 : 0;
}

function defaultLabel(value: unknown, text: string | undefined): string {
  if (text !== undefined) return text.replace(/`/g, '');
  if (value === undefined || value === '' || (Array.isArray(value) && value.length === 0)) return 'none';
  return Array.isArray(value) ? value.join(',') : String(value);
}
