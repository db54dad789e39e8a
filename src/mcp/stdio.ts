/**
 * `memex mcp`: the MCP server over stdio for assistants that start it as a subprocess. stdout is the
 * protocol, so everything else goes to stderr. The tools call a running memex server over HTTP.
 */
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { resolveServerTarget } from '../client/target.ts';
import { httpApi } from './api.ts';
import { mcpAllowWrite } from './config.ts';
import { createMcpServer } from './tools.ts';
import { UsageError } from '../util/errors.ts';

const USAGE = `usage: memex mcp [--url URL] [--token TOKEN]

Serves the memex MCP tools over stdio (for assistants; see docs/mcp.md). The tools call the memex
server at --url (default: env MEMEX_URL, else http://127.0.0.1:$PORT, PORT 8085) with --token
(default: env AUTH_TOKEN, else DATA_DIR/auth-token). MCP_ALLOW_WRITE=true adds the add_note tool.`;

export async function runMcpCommand(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  let target;
  try {
    target = resolveServerTarget(values, env);
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`memex mcp: ${err.message}\n`);
    return 2;
  }
  if (!target.token) process.stderr.write('memex mcp: no token (set AUTH_TOKEN, --token, or DATA_DIR/auth-token); calls will be refused\n');
  const allowWrite = mcpAllowWrite(env);
  const server = createMcpServer(httpApi(target), { allowWrite });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  process.stderr.write(`memex mcp: serving on stdio for ${target.url}${allowWrite ? ' (add_note enabled)' : ''}\n`);
  // Runs until the client closes stdin.
  await new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.close();
  return 0;
}
