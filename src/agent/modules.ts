/**
 * Module registry of the host agent. Every capability (OCR, email utilities, and later the collectors:
 * email_local, email_imap, chatapp, fswatch, contacts …) is an AgentModule: it reports whether it is
 * enabled, what host permissions it has, its status for /v1/health, and registers its own routes.
 *
 * A collector issue adds a module by writing a factory `(ctx) => AgentModule` and passing it to
 * createAgentServer({ modules: [...] }) (or adding it to BUILTIN_MODULES); a module with the name of a
 * built-in stub replaces the stub. Routes of a disabled module stay registered and answer 503 (or
 * whatever the spec says), so a disabled module is distinguishable from a wrong URL.
 */
import fs from 'node:fs';
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { AgentConfig } from './config.ts';
import type { GatewayClient } from './gateway-client.ts';
import type { AgentMetrics } from './metrics.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import type { CoverageReporter } from '../coverage/reporter.ts';
import type { CoverageProvider } from './coverage.ts';
import type { Source } from './sources/source.ts';
import type { ExportHandoff } from './collectors/fswatch/exports.ts';

export type ModuleStatus = 'ready' | 'disabled' | 'stub' | 'error' | 'running';

export interface AgentContext {
  config: AgentConfig;
  log: FastifyBaseLogger;
  metrics: AgentMetrics;
  gateway: GatewayClient;
  /** Where collectors send their coverage reports (docs/coverage.md): the gateway of `gateway`. */
  coverage: CoverageReporter;
  /** The shared OCR engine, created on first use (tesseract workers are expensive). */
  ocr(): OcrEngine;
  startedAt: Date;
  version: string;
  /** The importers of exports found in watched folders (handed in by whoever starts the agent; src/imports/watch.ts). */
  exports?: ExportHandoff;
}

export interface ModuleSummary {
  name: string;
  enabled: boolean;
  status: ModuleStatus;
  extra_info?: Record<string, unknown>;
}

export interface ModuleCapability {
  enabled: boolean;
  permissions: Record<string, boolean>;
  status?: ModuleStatus;
  config?: Record<string, unknown>;
}

export interface AgentModule {
  readonly name: string;
  readonly enabled: boolean;
  /** Host permissions the module needs and whether it has them (e.g. chat db readable). */
  permissions(): Record<string, boolean>;
  status(): ModuleStatus;
  /** Non-secret configuration shown in /v1/capabilities. */
  publicConfig?(): Record<string, unknown>;
  /** Extra fields for the health summary (e.g. watches_count). */
  extraInfo?(): Record<string, unknown>;
  registerRoutes?(app: FastifyInstance): void | Promise<void>;
  /** A collector's sources for coverage: recounts and retries (src/agent/coverage.ts). */
  coverage?: CoverageProvider;
  /**
   * The sources this module keeps up to date by itself (docs/sources.md): an IMAP folder, a collector on a
   * schedule, a watched folder. The source runner (src/agent/sources/runner.ts) starts, pauses and reports them.
   */
  sources?(): Source[];
  close?(): Promise<void>;
}

export type ModuleFactory = (ctx: AgentContext) => AgentModule;

export class ModuleRegistry {
  private readonly modules = new Map<string, AgentModule>();

  /** Adds a module; a later module with the same name replaces the earlier one (stubs are replaceable). */
  register(module: AgentModule): void {
    this.modules.set(module.name, module);
  }

  get(name: string): AgentModule | undefined {
    return this.modules.get(name);
  }

  list(): AgentModule[] {
    return [...this.modules.values()];
  }

  summaries(): ModuleSummary[] {
    return this.list().map((m) => {
      const s: ModuleSummary = { name: m.name, enabled: m.enabled, status: m.status() };
      const extra = m.extraInfo?.();
      if (extra && Object.keys(extra).length > 0) s.extra_info = extra;
      return s;
    });
  }

  capabilities(): Record<string, ModuleCapability> {
    const out: Record<string, ModuleCapability> = {};
    for (const m of this.list()) {
      const c: ModuleCapability = { enabled: m.enabled, permissions: m.permissions(), status: m.status() };
      const cfg = m.publicConfig?.();
      if (cfg) c.config = cfg;
      out[m.name] = c;
    }
    return out;
  }

  async close(): Promise<void> {
    await Promise.all(this.list().map((m) => m.close?.().catch(() => {})));
  }
}

/** A module of spec §2.1 that memex does not implement: reported as `stub` when enabled, collects nothing. */
export function stubModule(name: string, enabled: boolean, extra: Partial<AgentModule> = {}): AgentModule {
  return {
    name,
    enabled,
    permissions: () => ({}),
    status: () => (enabled ? 'stub' : 'disabled'),
    ...extra,
  };
}

function readable(path: string): boolean {
  try {
    fs.accessSync(path, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

/** Every module of spec §2.1, as a stub; the collectors that exist (chatapp, fswatch, email) replace theirs. */
export function builtinStubs(ctx: AgentContext): AgentModule[] {
  const m = ctx.config.modules;
  return [
    stubModule('chatapp', m.chatapp.enabled, {
      // "fda" = full disk access on macOS: can the agent read the Messages database?
      permissions: () => ({ fda: readable(m.chatapp.chat_db_path) }),
      publicConfig: () => ({ ocr_enabled: m.chatapp.ocr_enabled, batch_size: m.chatapp.batch_size }),
    }),
    stubModule('fswatch', m.fswatch.enabled, {
      publicConfig: () => ({ watches_count: m.fswatch.watches.length }),
      extraInfo: () => ({ watches_count: m.fswatch.watches.length }),
    }),
    stubModule('notes', m.notes.enabled),
    stubModule('faces', m.faces.enabled),
  ];
}
