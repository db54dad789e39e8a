/**
 * `memex agent [--config PATH] [--print-config]`: the host agent's composition root. It reads the
 * configuration once (file + environment, the secret file), builds the agent server over it and listens.
 * src/cli/main.ts calls runAgentCommand with the arguments after `agent`. Returns the process exit code; while the daemon runs the promise stays
 * pending until SIGINT/SIGTERM, when fastify.close() lets in-flight requests finish.
 */
import { AgentConfigError, configWarnings, ensureAgentSecret, isLoopbackAddress, loadAgentConfig, printableConfig, type AgentConfig } from '../agent/config.ts';
import { coveragePollMs } from '../agent/coverage.ts';
import { createAgentServer, type AgentServer, type AgentServerOptions } from '../agent/server.ts';
import type { ImportVerbs } from '../imports/registry.ts';
import { watchedExports } from '../imports/watch.ts';
import { codedError } from '../util/errors.ts';

export const AGENT_USAGE = `Usage: memex agent [--config PATH] [--print-config]

  --config PATH    configuration file (default: $XDG_CONFIG_HOME/memex/agent.yaml or ~/.config/memex/agent.yaml)
  --print-config   print the effective configuration (file + environment) with secrets masked, then exit

Without auth.secret or SVC_AUTH_SECRET, the secret clients send in x-auth is generated on the first start
and kept in auth.secret_file (default $XDG_STATE_HOME/memex/agent-secret, mode 0600).

Environment: SVC_PORT, SVC_AUTH_SECRET, SVC_ALLOWED_HOSTS, SVC_GATEWAY_URL, SVC_GATEWAY_TOKEN, SVC_LOG_LEVEL (debug|info|warning|error), SVC_MAIL_ENABLED`;

export interface AgentCliIo {
  out: (s: string) => void;
  err: (s: string) => void;
  env: NodeJS.ProcessEnv;
}

export function parseAgentArgs(argv: string[]): { configPath?: string; printConfig: boolean; help: boolean } {
  const result: { configPath?: string; printConfig: boolean; help: boolean } = { printConfig: false, help: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--print-config') result.printConfig = true;
    else if (a === '--help' || a === '-h') result.help = true;
    else if (a === '--config') {
      const v = argv[++i];
      if (v === undefined || v.startsWith('--')) throw new AgentConfigError('--config needs a file path');
      result.configPath = v;
    } else if (a.startsWith('--config=')) result.configPath = a.slice('--config='.length);
    else throw new AgentConfigError(`unknown option ${a}\n\n${AGENT_USAGE}`);
  }
  return result;
}

export async function runAgentCommand(
  argv: string[],
  io: AgentCliIo = { out: (s) => process.stdout.write(s), err: (s) => process.stderr.write(s), env: process.env },
  /** The CLI's verbs the imports of exports in watched folders may run (a Takeout's mail). */
  verbs: ImportVerbs = {},
): Promise<number> {
  let args;
  let loaded;
  try {
    args = parseAgentArgs(argv);
    if (args.help) {
      io.out(`${AGENT_USAGE}\n`);
      return 0;
    }
    loaded = loadAgentConfig({ configPath: args.configPath, env: io.env });
  } catch (err) {
    if (err instanceof AgentConfigError) {
      io.err(`memex agent: ${err.message}\n`);
      return 2;
    }
    throw err;
  }
  if (args.printConfig) {
    io.out(`# ${loaded.path ?? 'no configuration file found: defaults'} + environment\n`);
    io.out(printableConfig(loaded.config));
    for (const w of loaded.warnings) io.err(`warning: ${w}\n`);
    return 0;
  }

  let started;
  try {
    started = await startAgent({ config: loaded.config, verbs });
  } catch (err) {
    if (err instanceof AgentConfigError) {
      io.err(`memex agent: ${err.message}\n`);
      return 2;
    }
    if (err instanceof AgentBindError || (err as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      io.err(`memex agent: ${(err as Error).message}\n`);
      return 1;
    }
    throw err;
  }
  const { app, url, secretFile, secretGenerated } = started;
  // Where the secret is, never the secret: clients read the file (or set SVC_AUTH_SECRET on both sides).
  if (secretFile) {
    io.err(
      secretGenerated
        ? `memex agent: generated the secret for ${loaded.config.auth.header} in ${secretFile} (mode 0600); clients send its content\n`
        : `memex agent: the secret for ${loaded.config.auth.header} is in ${secretFile}\n`,
    );
  }
  app.log.info({ url, config: loaded.path ?? 'defaults', secret_file: secretFile }, 'host agent listening');

  return new Promise<number>((resolve) => {
    let closing = false;
    const stop = (signal: NodeJS.Signals) => {
      if (closing) return;
      closing = true;
      app.log.info({ signal }, 'shutting down: finishing in-flight requests');
      app.close().then(
        () => resolve(0),
        (err) => {
          app.log.error({ err }, 'error during shutdown');
          resolve(1);
        },
      );
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
}

export class AgentBindError extends codedError('AGENT.BIND') {
  override name = 'AgentBindError';
}

export interface StartAgentOptions extends AgentServerOptions {
  config: AgentConfig;
  /** Overrides config.host; must still be loopback. */
  host?: string;
  /** Overrides config.port (0 = any free port, for tests). */
  port?: number;
  /** The CLI's verbs the imports of exports in watched folders may run (a Takeout's mail). */
  verbs?: ImportVerbs;
}

export interface StartedAgent {
  app: AgentServer;
  url: string;
  /** Where the secret is kept when none was set (generated there by this start when `secretGenerated`). */
  secretFile?: string;
  secretGenerated: boolean;
}

/**
 * Builds the server and listens on a loopback address; anything else is refused before binding. Without a
 * configured secret, the one of `auth.secret_file` is used, generated by the first start.
 */
export async function startAgent(opts: StartAgentOptions): Promise<StartedAgent> {
  const host = opts.host ?? opts.config.host;
  if (!isLoopbackAddress(host)) {
    throw new AgentBindError(
      `Refusing to listen on "${host}": the host agent binds to a loopback address only (127.0.0.1 or ::1)`,
    );
  }
  const { config, file, generated } = ensureAgentSecret(opts.config);
  // Exports dropped in watched folders go to their importers, against this agent's gateway.
  const exports = watchedExports({ url: config.gateway.base_url, token: config.gateway.auth_token, verbs: opts.verbs });
  const app = await createAgentServer(config, { coveragePollMs: coveragePollMs(), runSources: true, exports, ...opts });
  for (const w of configWarnings(config)) app.log.warn(w);
  const port = opts.port ?? opts.config.port;
  await app.listen({ host, port });
  const addr = app.server.address();
  const actualPort = typeof addr === 'object' && addr ? addr.port : port;
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${actualPort}`;
  return { app, url, secretFile: file, secretGenerated: generated };
}
