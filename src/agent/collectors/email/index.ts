/**
 * Agent modules of the email collectors: `email_local` (POST /v1/collectors/email_local:run, GET
 * /v1/collectors/email_local/state) and `email_imap` (POST /v1/collectors/email_imap:run). Both are gated
 * by modules.mail.enabled; their routes stay registered when it is off (503 and 400 as the spec says).
 *
 * Wire them with `createAgentServer(config, { modules: [emailLocalModule, emailImapModule] })` or
 * `emailCollectorModules`.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { AgentContext, AgentModule, ModuleFactory } from '../../modules.ts';
import type { SourceWatcher } from '../../sources/watch.ts';
import { MailManifest } from './manifest.ts';
import { storeRedaction } from './store-redaction.ts';
import { ImapEmailCollector, imapCoverageSource, registerImapRoutes } from './imap.ts';
import { emlxCensus, localCollectorFor, MAX_LIMIT, registerLocalRoutes } from './local.ts';
import { watchedLocalSource } from './local-watch.ts';
import { ImapStateStore, imapStatePath } from './imap-state.ts';
import { ImapFolderSync } from './imap-sync.ts';
import { httpSourcesGateway } from '../../sources/gateway.ts';
import { ScheduledSource } from '../../sources/scheduled.ts';
import type { Source } from '../../sources/source.ts';

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
    // A local (.emlx) source with a schedule runs on it; without one it is watched (local-watch.ts), unless
    // `watch: false`. Either way the run is POST …:run's, so the two never overlap (409).
    sources: () =>
      sources.flatMap((s): Source[] => {
        if (!s.enabled || !s.source_path) return [];
        const sourceRef = realPathOr(s.source_path);
        if (s.schedule) {
          return [
            new ScheduledSource({
              identity: { collector: 'email_local', source_type: 'email_local', source_account_id: s.id, source_ref: sourceRef },
              label: `local ${s.id}`,
              schedule: s.schedule,
              run: async () => void (await collector.run({ mode: 'simulate', simulate_path: s.source_path, limit: MAX_LIMIT })),
              log: ctx.log,
            }),
          ];
        }
        if (s.watch === false) return [];
        return [watchedLocalSource({ source: { ...s, source_path: s.source_path }, collector, sourceRef, log: ctx.log })];
      }),
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
  const store = new ImapStateStore(imapStatePath(ctx.config.modules.mail.state.run_state_path));
  const collector = new ImapEmailCollector({ config: ctx.config, gateway: ctx.gateway, log: ctx.log, coverage: ctx.coverage, store });
  const enabled = () => ctx.config.modules.mail.enabled;
  const accounts = ctx.config.modules.mail.sources.filter((s) => s.type === 'imap');
  const sourcesGateway = httpSourcesGateway({ url: ctx.config.gateway.base_url, token: ctx.config.gateway.auth_token, timeoutMs: (ctx.config.gateway.timeout || 30) * 1000 });
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
    // One source per enabled account and folder: continuous (IDLE or polling), or on its schedule.
    sources: () =>
      accounts
        .filter((s) => s.enabled)
        .flatMap((s) =>
          (s.folders.length ? s.folders : ['INBOX']).map((folder): Source => {
            const sync = new ImapFolderSync({
              collector,
              gateway: ctx.gateway,
              sources: sourcesGateway,
              store,
              source: s,
              folder,
              pollMs: s.poll_interval_ms,
              idle: s.idle,
              mirrorDeletions: s.mirror_deletions,
              log: ctx.log,
              redactModule: ctx.config.modules.mail.redact_pii,
              gatewayUrl: ctx.config.gateway.base_url,
            });
            if (!s.schedule) return sync;
            return new ScheduledSource({ identity: sync.identity, label: sync.label, schedule: s.schedule, run: () => sync.runNow(), log: ctx.log });
          }),
        ),
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

/**
 * `email_folders`: the sources of type `maildir` and `mbox` (source_path), watched while the agent runs
 * (mail-watch.ts): a message written into the Maildir or appended to the mbox is stored within seconds. What
 * was sent is remembered in `mail-folders-state.json` beside the mail run state (a manifest per gateway, as
 * `memex import mail` keeps), so a restart reads nothing already sent.
 */
export function emailFoldersModule(ctx: AgentContext): AgentModule {
  const mail = ctx.config.modules.mail;
  const sources = mail.sources.filter((s) => (s.type === 'maildir' || s.type === 'mbox') && s.enabled && s.source_path);
  const watchers = new Map<string, SourceWatcher>();
  const statePath = path.join(path.dirname(mail.state.run_state_path), 'mail-folders-state.json');
  let starting: Promise<void> | null = null;
  let closed = false;
  const start = async () => {
    const manifest = await MailManifest.load(statePath, ctx.config.gateway.base_url);
    const { createMailWatcher } = await import('./mail-watch.ts');
    for (const s of sources) {
      if (closed) return;
      const watcher = createMailWatcher({
        paths: [s.source_path!],
        gateway: ctx.gateway,
        config: ctx.config,
        manifest,
        redaction: storeRedaction({ source: s.redact_pii, module: mail.redact_pii, gatewayUrl: ctx.config.gateway.base_url }),
        coverage: ctx.coverage,
        coverageSource: { collector: 'email_local', source_account_id: s.id },
        attachments: mail.upload_attachments,
        onRun: (sum) => ctx.log.info({ source: s.id, read: sum.sourcesRead, stored: sum.accepted - sum.duplicates }, 'watched mail folder: run finished'),
        onProblem: (location, reason) => ctx.log.warn({ source: s.id, location, reason }, 'watched mail folder: message not stored'),
        log: ctx.log,
      });
      watchers.set(s.id, watcher);
      // One after the other: the first runs of several large folders do not compete for the gateway.
      await watcher.start().catch((err) => ctx.log.warn({ source: s.id, err: (err as Error).message }, 'watched mail folder: first run failed; the watch goes on'));
    }
  };
  if (mail.enabled && sources.length) {
    starting = new Promise<void>((resolve) => setImmediate(resolve)).then(start).catch((err) => ctx.log.warn({ err: (err as Error).message }, 'watched mail folders not started'));
  }
  return {
    name: 'email_folders',
    get enabled() {
      return mail.enabled && sources.length > 0;
    },
    permissions: () => ({}),
    status: () => (!mail.enabled || !sources.length ? 'disabled' : [...watchers.values()].some((w) => w.status().state === 'running') ? 'running' : 'ready'),
    publicConfig: () => ({ sources: sources.map((s) => ({ id: s.id, type: s.type })) }),
    extraInfo: () => ({ watches: Object.fromEntries([...watchers].map(([id, w]) => [id, w.status()])) }),
    async close() {
      closed = true;
      await Promise.all([...watchers.values()].map((w) => w.stop()));
      await starting;
      await Promise.all([...watchers.values()].map((w) => w.stop()));
    },
  };
}

/** The watchers of the `maildir` / `mbox` sources, by source id (for a runner that reports freshness). */
export type { SourceWatcher };

export const emailCollectorModules: ModuleFactory[] = [emailLocalModule, emailImapModule, emailFoldersModule];
