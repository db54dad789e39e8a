/**
 * Agent modules of the email collectors: `email_local` (POST /v1/collectors/email_local:run, GET
 * /v1/collectors/email_local/state) and `email_imap` (POST /v1/collectors/email_imap:run). Both are gated
 * by modules.mail.enabled; their routes stay registered when it is off (503 and 400 as the spec says).
 *
 * Wire them with `createAgentServer(config, { modules: [emailLocalModule, emailImapModule] })` or
 * `emailCollectorModules`.
 */
import fs from 'node:fs';
import type { AgentContext, AgentModule, ModuleFactory } from '../../modules.ts';
import { ImapEmailCollector, imapCoverageSource, registerImapRoutes } from './imap.ts';
import { emlxCensus, localCollectorFor, MAX_LIMIT, registerLocalRoutes } from './local.ts';

export function emailLocalModule(ctx: AgentContext): AgentModule {
  const collector = localCollectorFor(ctx);
  const enabled = () => ctx.config.modules.mail.enabled;
  const sources = ctx.config.modules.mail.sources.filter((s) => s.type === 'local');
  return {
    name: 'email_local',
    get enabled() {
      return enabled();
    },
    permissions: () => ({}),
    status: () => (!enabled() ? 'disabled' : collector.isRunning ? 'running' : 'ready'),
    publicConfig: () => ({ sources: sources.map((s) => s.id), upload_attachments: ctx.config.modules.mail.upload_attachments }),
    registerRoutes: (app) => registerLocalRoutes(app, collector, enabled),
    coverage: {
      collector: 'email_local',
      // As a run names them: the folder with its links resolved.
      configured: () =>
        sources.flatMap((s) => (s.source_path ? [{ collector: 'email_local', source_type: 'email_local', source_account_id: s.id, source_ref: realPathOr(s.source_path) }] : [])),
      census: (s, last) => emlxCensus(s.source_ref, last.startedAt),
      retry: async (s) => void (await collector.run({ mode: 'simulate', simulate_path: s.source_ref, limit: MAX_LIMIT })),
    },
  };
}

export function emailImapModule(ctx: AgentContext): AgentModule {
  const collector = new ImapEmailCollector({ config: ctx.config, gateway: ctx.gateway, log: ctx.log, coverage: ctx.coverage });
  const enabled = () => ctx.config.modules.mail.enabled;
  const accounts = ctx.config.modules.mail.sources.filter((s) => s.type === 'imap');
  return {
    name: 'email_imap',
    get enabled() {
      return enabled();
    },
    permissions: () => ({}),
    status: () => (enabled() ? 'ready' : 'disabled'),
    // Account ids and hosts only: never usernames' secrets.
    publicConfig: () => ({ accounts: accounts.map((s) => ({ id: s.id, host: s.host, folders: s.folders })) }),
    registerRoutes: (app) => registerImapRoutes(app, collector, enabled),
    coverage: {
      collector: 'email_imap',
      // One source per account and folder; accounts whose secret comes with each request cannot be recounted.
      configured: () => accounts.filter((s) => s.enabled).flatMap((s) => (s.folders.length ? s.folders : ['INBOX']).map((f) => imapCoverageSource(s.id, f))),
      census: (s, last) => collector.census(s.source_account_id ?? '', s.source_ref, last),
      // A run over the folder again: failed and waiting UIDs are not in the agent's memory, so they are fetched again.
      retry: async (s) => void (await collector.run({ account_id: s.source_account_id, folder: s.source_ref })),
    },
  };
}

function realPathOr(p: string): string {
  try {
    return fs.realpathSync(p);
  } catch {
    return p;
  }
}

export const emailCollectorModules: ModuleFactory[] = [emailLocalModule, emailImapModule];
