/**
 * `memex serve` runs the sources of the agent configuration too (issue 41, docs/sources.md), in-process: the same
 * agent modules and source runner as `memex agent`, built without an HTTP listener, talking to this server over
 * its loopback URL with its token — exactly as a host agent on another machine does, so both behave alike.
 *
 * In-process rather than a supervised child: one program to start and stop, no second port or secret, and a
 * source's failure is already contained (each backs off on its own, a run's error never escapes the runner).
 * The cost: parsing mail shares the server's event loop; a machine with a large backlog can run `memex agent`
 * beside it instead (then leave the sources out of the configuration `memex serve` reads, or use --no-sources).
 */
import crypto from 'node:crypto';
import { AgentConfigError, loadAgentConfig, type AgentConfig } from '../agent/config.ts';
import { createAgentServer, type AgentServer } from '../agent/server.ts';

/** Whether a configuration has sources to run by itself. */
export function configRunsSources(c: AgentConfig): boolean {
  const mail = c.modules.mail;
  const mailSources = mail.enabled && mail.sources.some((s) => s.enabled && (s.type === 'imap' || s.schedule));
  const dav = (['calendar', 'reminders', 'contacts'] as const).some((n) => c.modules[n].enabled && c.modules[n].sources.some((s) => s.enabled));
  return mailSources || dav || (c.modules.chatapp.enabled && c.modules.chatapp.schedule !== undefined);
}

export interface ServeSources {
  app: AgentServer;
  count: number;
  close(): Promise<void>;
}

export async function startServeSources(opts: {
  configPath?: string;
  gatewayUrl: string;
  token: string;
  /** The server's CATALOG_TOKEN when set: CardDAV cards go to the catalog's contact route, which takes it. */
  catalogToken?: string;
  env?: NodeJS.ProcessEnv;
  say: (line: string) => void;
}): Promise<ServeSources | null> {
  const loaded = loadAgentConfig({ configPath: opts.configPath, env: opts.env });
  if (!configRunsSources(loaded.config)) {
    if (opts.configPath) opts.say(`sources: ${loaded.path} enables no source to run (IMAP, CalDAV/CardDAV, or a schedule): none started`);
    return null;
  }
  const config: AgentConfig = {
    ...loaded.config,
    // Never listened on: a throwaway secret keeps createAgentServer's check honest without writing a file.
    auth: { ...loaded.config.auth, secret: crypto.randomBytes(24).toString('base64url') },
    gateway: { ...loaded.config.gateway, base_url: opts.gatewayUrl, auth_token: opts.token, auth_token_source: 'memex serve' },
    modules: {
      ...loaded.config.modules,
      contacts: { ...loaded.config.modules.contacts, catalog_token: loaded.config.modules.contacts.catalog_token ?? opts.catalogToken ?? opts.token },
    },
  };
  const app = await createAgentServer(config, { runSources: true });
  const count = app.agent.sources.size;
  if (count === 0) {
    await app.close();
    return null;
  }
  await app.ready();
  const labels = app.agent.sources.list().map((s) => s.label);
  opts.say(`sources: running ${count} from ${loaded.path ?? 'the default configuration'} (${labels.slice(0, 5).join(', ')}${labels.length > 5 ? ', …' : ''}); GET /v1/coverage shows their freshness`);
  return { app, count, close: () => app.close() };
}

export { AgentConfigError };
