/**
 * Host agent configuration: a YAML file (host-agent spec §2.1) with environment overrides. Every key of the file
 * is declared once, in src/agent/config-schema.ts; errors name the file and the key, e.g.
 *   agent.yaml: modules.ocr.timeout_ms must be an integer >= 1, got "fast"
 *
 * Default file: $XDG_CONFIG_HOME/memex/agent.yaml (~/.config/memex/agent.yaml). A missing default file
 * means "all defaults"; a missing file named with --config is an error. Unknown keys are errors too: a
 * typo such as `modules.mail.enabeld` must not silently leave a module off.
 * State files default under $XDG_STATE_HOME/memex (~/.local/state/memex).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import YAML from 'yaml';
import { ConfigError, isSet, read, type Setting } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';
import { parseAllowedHosts } from '../util/request-host.ts';
import { codedError } from '../util/errors.ts';
import type { RedactOptions } from '../privacy/policy.ts';
import { AGENT_SETTINGS, type AgentLogLevel } from './settings.ts';
import { AGENT_YAML, secretProblem, type AgentConfig } from './config-schema.ts';
import { expandHome } from '../util/fs.ts';
import { readDocument, xdgStateHome } from './yaml-schema.ts';

// The types and helpers callers have always taken from here.
export type { AgentConfig, DavModuleConfig, DavSourceConfig, MailSourceConfig } from './config-schema.ts';
export type { AgentLogLevel, RedactOptions };
export { isLoopbackAddress } from './config-schema.ts';
export { expandHome } from '../util/fs.ts';

export const SECRET_MASK = '********';

export class AgentConfigError extends codedError('AGENT.CONFIG') {
  override name = 'AgentConfigError';
}

export function defaultConfigPath(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CONFIG_HOME?.trim() || path.join(os.homedir(), '.config');
  return path.join(base, 'memex', 'agent.yaml');
}

export function defaultStateDir(env: NodeJS.ProcessEnv = process.env): string {
  return path.join(xdgStateHome(env), 'memex');
}

/** Every key at its default (state files under `env`'s state folder); no environment override applied. */
export function defaultAgentConfig(env: NodeJS.ProcessEnv = process.env): AgentConfig {
  return readDocument(AGENT_YAML, {}, { file: 'defaults', env, error: (message) => new AgentConfigError(message) });
}

/** Validates a parsed YAML document on top of the defaults. `file` is the name shown in errors. */
export function validateAgentConfig(raw: unknown, file = 'agent.yaml', env: NodeJS.ProcessEnv = process.env): AgentConfig {
  // No file (or an empty one): the defaults, with the environment overrides still applied below.
  if (raw === undefined || raw === null) raw = {};
  if (typeof raw !== 'object' || Array.isArray(raw)) {
    throw new AgentConfigError(`${file}: the document must be a mapping of keys, got ${JSON.stringify(raw)}`);
  }
  const cfg = readDocument(AGENT_YAML, raw as Record<string, unknown>, { file, env, error: (message) => new AgentConfigError(message) });

  // Environment overrides (spec §2.1). Their errors name the variable, not the file.
  const S = AGENT_SETTINGS;
  const fromEnv = <T>(setting: Setting<T>): T => {
    try {
      return read(env, setting);
    } catch (err) {
      if (err instanceof ConfigError) throw new AgentConfigError(`environment: ${err.message}`);
      throw err;
    }
  };
  cfg.port = fromEnv(S.SVC_PORT) ?? cfg.port;
  const envSecret = fromEnv(S.SVC_AUTH_SECRET);
  if (envSecret !== undefined) {
    const bad = secretProblem(envSecret);
    if (bad) throw new AgentConfigError(`environment: SVC_AUTH_SECRET ${bad}`);
    cfg.auth.secret = envSecret;
  }
  if (isSet(env, S.SVC_ALLOWED_HOSTS)) cfg.allowed_hosts = fromEnv(S.SVC_ALLOWED_HOSTS);
  try {
    parseAllowedHosts(cfg.allowed_hosts, env.SVC_ALLOWED_HOSTS?.trim() ? 'environment: SVC_ALLOWED_HOSTS' : `${file}: allowed_hosts`);
  } catch (err) {
    throw new AgentConfigError((err as Error).message);
  }
  cfg.gateway.base_url = fromEnv(S.SVC_GATEWAY_URL) ?? cfg.gateway.base_url;
  // The collector token is the gateway's AUTH_TOKEN (spec §5.3); SVC_GATEWAY_TOKEN names it for the agent alone.
  for (const setting of [S.SVC_GATEWAY_TOKEN, SERVER_SETTINGS.AUTH_TOKEN]) {
    const token = fromEnv(setting);
    if (!token) continue;
    cfg.gateway.auth_token = token;
    cfg.gateway.auth_token_source = setting.name;
    break;
  }
  cfg.logging.level = fromEnv(S.SVC_LOG_LEVEL) ?? cfg.logging.level;
  cfg.modules.mail.enabled = fromEnv(S.SVC_MAIL_ENABLED) ?? cfg.modules.mail.enabled;
  return cfg;
}

export interface LoadedAgentConfig {
  config: AgentConfig;
  /** The file read, or undefined when the default file does not exist (defaults only). */
  path: string | undefined;
  warnings: string[];
}

/** Reads, parses and validates the configuration file plus environment overrides. */
export function loadAgentConfig(opts: { configPath?: string; env?: NodeJS.ProcessEnv } = {}): LoadedAgentConfig {
  const env = opts.env ?? process.env;
  const explicit = opts.configPath !== undefined;
  const file = path.resolve(expandHome(opts.configPath ?? defaultConfigPath(env)));
  let text: string | undefined;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT' && !explicit) text = undefined;
    else if (code === 'ENOENT') throw new AgentConfigError(`${file}: configuration file not found`);
    else throw new AgentConfigError(`${file}: cannot read configuration file (${code ?? (err as Error).message})`);
  }
  let raw: unknown;
  if (text !== undefined) {
    const doc = YAML.parseDocument(text, { prettyErrors: true });
    if (doc.errors.length > 0) {
      const e = doc.errors[0];
      const where = e.linePos?.[0] ? ` (line ${e.linePos[0].line}, column ${e.linePos[0].col})` : '';
      throw new AgentConfigError(`${path.basename(file)}: invalid YAML${where}: ${e.message.split('\n')[0]}`);
    }
    raw = doc.toJS();
  }
  const config = validateAgentConfig(raw, path.basename(file), env);
  return { config, path: text === undefined ? undefined : file, warnings: configWarnings(config) };
}

/** Whether `secret` may guard the agent: set, and no placeholder. */
export function isUsableSecret(secret: string): boolean {
  return secretProblem(secret) === undefined;
}

/**
 * The configuration with its secret: the one set, else the one in `auth.secret_file`, generated there (mode 0600, in
 * a folder only the owner reads) on the first start — as the gateway keeps its token in DATA_DIR/auth-token.
 */
export function ensureAgentSecret(cfg: AgentConfig): { config: AgentConfig; file?: string; generated: boolean } {
  if (cfg.auth.secret) return { config: cfg, generated: false };
  const file = cfg.auth.secret_file;
  let generated = false;
  try {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    if (!fs.existsSync(file)) {
      // Written beside it and linked into place: a start killed half-way leaves no empty secret file, and of two
      // first starts at once one secret wins (link fails with EEXIST for the other).
      const scratch = `${file}.${process.pid}.tmp`;
      fs.writeFileSync(scratch, `${crypto.randomBytes(32).toString('base64url')}\n`, { mode: 0o600 });
      try {
        fs.linkSync(scratch, file);
        generated = true;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      } finally {
        fs.rmSync(scratch, { force: true });
      }
    }
    const secret = fs.readFileSync(file, 'utf8').trim();
    if (!isUsableSecret(secret)) throw new AgentConfigError(`${file}: the secret file holds ${secret ? 'a placeholder' : 'nothing'}: remove it to have a new secret generated`);
    return { config: { ...cfg, auth: { ...cfg.auth, secret } }, file, generated };
  } catch (err) {
    if (err instanceof AgentConfigError) throw err;
    throw new AgentConfigError(`${file}: cannot keep the generated secret there (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): set auth.secret_file, SVC_AUTH_SECRET or auth.secret`);
  }
}

export function configWarnings(cfg: AgentConfig): string[] {
  const w: string[] = [];
  if (cfg.modules.mail.enabled && cfg.modules.mail.sources.length === 0 && cfg.modules.mail.allowed_roots.length === 0) {
    w.push('modules.mail is enabled but no local source or allowed_roots is configured: /v1/email/parse will refuse every path');
  }
  return w;
}

/** A deep copy with every secret replaced by a mask (only set secrets are masked; unset stay unset). */
export function maskSecrets(cfg: AgentConfig): AgentConfig {
  const copy = structuredClone(cfg);
  copy.auth.secret = copy.auth.secret ? SECRET_MASK : '';
  if (copy.gateway.auth_token) copy.gateway.auth_token = SECRET_MASK;
  if (copy.modules.fswatch.catalog_token) copy.modules.fswatch.catalog_token = SECRET_MASK;
  return copy;
}

/** Effective configuration as YAML with secrets masked, for `memex agent --print-config`. */
export function printableConfig(cfg: AgentConfig): string {
  const masked = maskSecrets(cfg);
  // Drop undefined values so the YAML shows only what is set.
  return YAML.stringify(JSON.parse(JSON.stringify(masked)), { lineWidth: 0 });
}

/** pino level names for the spec's four levels. */
export function pinoLevel(level: AgentLogLevel): 'debug' | 'info' | 'warn' | 'error' {
  return level === 'warning' ? 'warn' : level;
}