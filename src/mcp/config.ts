/** The MCP server's one setting, apart from tools.ts so reading it does not load the MCP SDK. */
import { bool, defineSettings, read } from '../config/env.ts';

export const MCP_SETTINGS = defineSettings('mcp', 'MCP', {
  MCP_ALLOW_WRITE: bool({
    default: false,
    description: '`true` adds `add_note`, the only MCP tool that writes (read by `memex mcp` and by the server for `/mcp`)',
  }),
});

export function mcpAllowWrite(env: NodeJS.ProcessEnv = process.env): boolean {
  return read(env, MCP_SETTINGS.MCP_ALLOW_WRITE);
}
