/**
 * `memex mcp`: the MCP server over stdio for assistants that start it as a subprocess. stdout is the
 * protocol, so everything else goes to stderr. The tools call a running memex server over HTTP.
 */
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { httpApi } from './api.ts';
import { createMcpServer, mcpAllowWrite } from './tools.ts';

const USAGE = `usage: memex mcp [--url URL] [--token TOKEN]

Serves the memex MCP tools over stdio (for assistants; see docs/mcp.md). The tools call the memex
server at --url (default: env MEMEX_URL, else http://127.0.0.1:8085) with --token (default: env
AUTH_TOKEN, else DATA_DIR/auth-token). MCP_ALLOW_WRITE=true adds the add_note tool.`;

/** Server URL and token: flags, then the environment, then the server's DATA_DIR/auth-token. */
export function mcpClientConfig(flags: { url?: string; token?: string }, env: NodeJS.ProcessEnv): { url: string; token?: string } {
  const url = (flags.url ?? env.MEMEX_URL?.trim() ?? '') || 'http://127.0.0.1:8085';
  let token = flags.token ?? (env.AUTH_TOKEN?.trim() || undefined);
  if (!token) {
    try {
      token = fs.readFileSync(path.join(path.resolve(env.DATA_DIR?.trim() || './data'), 'auth-token'), 'utf8').trim() || undefined;
    } catch {
      token = undefined;
    }
  }
  return { url, token };
}

export async function runMcpCommand(args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stderr.write(`${USAGE}\n`);
    return 0;
  }
  const { url, token } = mcpClientConfig(values, env);
  try {
    new URL(url);
  } catch {
    process.stderr.write(`memex mcp: MEMEX_URL/--url must be an http(s) URL, got "${url}"\n`);
    return 2;
  }
  if (!token) process.stderr.write('memex mcp: no token (set AUTH_TOKEN, --token, or DATA_DIR/auth-token); calls will be refused\n');
  const allowWrite = mcpAllowWrite(env);
  const server = createMcpServer(httpApi(url, token), { allowWrite });
  const transport = new StdioServerTransport();
  await server.connect(transport);
  process.stderr.write(`memex mcp: serving on stdio for ${url}${allowWrite ? ' (add_note enabled)' : ''}\n`);
  // Runs until the client closes stdin.
  await new Promise<void>((resolve) => {
    server.server.onclose = () => resolve();
    process.stdin.once('end', () => resolve());
  });
  await server.close();
  return 0;
}
