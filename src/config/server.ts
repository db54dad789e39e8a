/**
 * Server configuration, read once from the environment and validated.
 * Every key is documented in docs/configuration.md; keep the two in step.
 */
import path from 'node:path';

export const DEV_PLACEHOLDER_TOKEN = 'changeme';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface ServerConfig {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL server URL; when unset the embedded PGlite under dataDir is used. */
  databaseUrl: string | undefined;
  /** Gateway bearer token; undefined disables gateway auth (loopback only). */
  authToken: string | undefined;
  catalogToken: string | undefined;
  logLevel: LogLevel;
  /** LOG_FORMAT: JSON lines, readable lines, or auto (readable on a terminal, JSON elsewhere). */
  logFormat: 'auto' | 'json' | 'pretty';
  /** Largest JSON request body accepted, in bytes. */
  bodyLimitBytes: number;
  /** Region used to read national phone numbers (ISO 3166 alpha-2). */
  defaultPhoneRegion: string;
  /**
   * CONTEXT_REQUIRE_CATALOG_TOKEN: GET /v1/context/general takes CATALOG_TOKEN instead of AUTH_TOKEN (spec 4.3
   * rule 6, 5.4); the server refuses to start without CATALOG_TOKEN then.
   */
  contextRequireCatalogToken: boolean;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function intFromEnv(env: NodeJS.ProcessEnv, key: string, def: number, min: number, max: number): number {
  const raw = env[key];
  if (raw === undefined || raw.trim() === '') return def;
  if (!/^\d+$/.test(raw.trim())) throw new ConfigError(`${key} must be an integer, got "${raw}"`);
  const n = Number(raw.trim());
  if (n < min || n > max) throw new ConfigError(`${key} must be between ${min} and ${max}, got ${n}`);
  return n;
}

function optional(env: NodeJS.ProcessEnv, key: string): string | undefined {
  const v = env[key];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

/** Parses "10mb", "512kb", "1048576" into bytes. */
export function parseByteSize(raw: string, key: string): number {
  const m = /^(\d+)\s*(b|kb|k|mb|m|gb|g)?$/i.exec(raw.trim());
  if (!m) throw new ConfigError(`${key} must be a size like 10mb or 1048576, got "${raw}"`);
  const n = Number(m[1]);
  const unit = (m[2] ?? 'b').toLowerCase();
  const mult = unit.startsWith('k') ? 1024 : unit.startsWith('m') ? 1024 ** 2 : unit.startsWith('g') ? 1024 ** 3 : 1;
  const bytes = n * mult;
  if (bytes < 1024) throw new ConfigError(`${key} must be at least 1kb, got "${raw}"`);
  return bytes;
}

export function loadServerConfig(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const port = intFromEnv(env, 'PORT', 8085, 0, 65535);
  const host = optional(env, 'HOST') ?? '127.0.0.1';
  const dataDir = path.resolve(optional(env, 'DATA_DIR') ?? './data');
  const databaseUrl = optional(env, 'DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must start with postgres:// or postgresql://');
  }
  const logLevel = (optional(env, 'LOG_LEVEL') ?? 'info').toLowerCase() as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${env.LOG_LEVEL}"`);
  }
  const logFormat = (optional(env, 'LOG_FORMAT') ?? 'auto').toLowerCase() as ServerConfig['logFormat'];
  if (!['auto', 'json', 'pretty'].includes(logFormat)) {
    throw new ConfigError(`LOG_FORMAT must be auto, json or pretty, got "${env.LOG_FORMAT}"`);
  }
  const bodyLimitBytes = parseByteSize(optional(env, 'BODY_LIMIT') ?? '10mb', 'BODY_LIMIT');
  const defaultPhoneRegion = (optional(env, 'DEFAULT_PHONE_REGION') ?? 'US').toUpperCase();
  if (!/^[A-Z]{2}$/.test(defaultPhoneRegion)) {
    throw new ConfigError(`DEFAULT_PHONE_REGION must be a two-letter region code, got "${env.DEFAULT_PHONE_REGION}"`);
  }
  const authToken = optional(env, 'AUTH_TOKEN');
  const contextFlag = (optional(env, 'CONTEXT_REQUIRE_CATALOG_TOKEN') ?? 'false').toLowerCase();
  if (!['true', 'false', '1', '0', 'yes', 'no'].includes(contextFlag)) {
    throw new ConfigError(`CONTEXT_REQUIRE_CATALOG_TOKEN must be true or false, got "${env.CONTEXT_REQUIRE_CATALOG_TOKEN}"`);
  }
  const contextRequireCatalogToken = ['true', '1', 'yes'].includes(contextFlag);
  if (contextRequireCatalogToken && !optional(env, 'CATALOG_TOKEN')) {
    throw new ConfigError('CONTEXT_REQUIRE_CATALOG_TOKEN=true needs CATALOG_TOKEN to be set');
  }
  if (!isLoopbackHost(host) && (!authToken || authToken === DEV_PLACEHOLDER_TOKEN)) {
    throw new ConfigError(
      `refusing to listen on non-loopback HOST=${host} without AUTH_TOKEN (unset or the development placeholder)`,
    );
  }
  return {
    port,
    host,
    dataDir,
    databaseUrl,
    authToken,
    catalogToken: optional(env, 'CATALOG_TOKEN'),
    logLevel,
    logFormat,
    bodyLimitBytes,
    defaultPhoneRegion,
    contextRequireCatalogToken,
  };
}
