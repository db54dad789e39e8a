/**
 * Server configuration, read once from the environment (src/config/env.ts) and validated.
 */
import { ConfigError, bool, defineSettings, filePath, int, list, oneOf, read, size, string } from './env.ts';
import { parseAllowedHosts } from '../util/request-host.ts';

export const DEV_PLACEHOLDER_TOKEN = 'changeme';

/**
 * Values that sample configurations and tutorials put where a secret belongs: a token or secret set to one of
 * them is refused (gateway tokens, the agent's secret). Compared in lower case.
 */
const PLACEHOLDER_SECRETS = new Set([DEV_PLACEHOLDER_TOKEN, 'change-me', 'change_me', 'changethis', 'change-this', 'secret', 'password', 'token', 'replace-me', 'xxx']);

export function isPlaceholderSecret(value: string): boolean {
  return PLACEHOLDER_SECRETS.has(value.trim().toLowerCase());
}

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
const LOG_LEVELS: readonly LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export interface ServerConfig {
  port: number;
  host: string;
  dataDir: string;
  /** PostgreSQL server URL; when unset the embedded PGlite under dataDir is used. */
  databaseUrl: string | undefined;
  /** Gateway bearer token; undefined disables gateway auth (loopback only). */
  authToken: string | undefined;
  /** ALLOWED_HOSTS: names the gateway answers to besides localhost and IP addresses (src/util/request-host.ts). */
  allowedHosts: string[];
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

export { ConfigError, parseByteSize } from './env.ts';

/** The server's settings (docs/configuration.md is generated from these declarations). */
export const SERVER_SETTINGS = defineSettings('server', 'Server', {
  PORT: int({ default: 8085, min: 0, max: 65535, description: 'port of the gateway' }),
  HOST: string({
    default: '127.0.0.1',
    description: 'address to bind; a non-loopback address is refused unless `AUTH_TOKEN` is set',
  }),
  ALLOWED_HOSTS: list({
    default: [],
    lowerCase: true,
    description:
      'host names (`name`, `name:port`, `*.domain`) the server answers to besides `localhost`, `*.localhost`, IP addresses and `HOST`: the names a reverse proxy sends; any other `Host` gets 421 and a page of another origin 403 (DNS rebinding, docs/architecture.md "Security")',
  }),
  DATA_DIR: filePath({
    default: './data',
    description: 'where the embedded database (`DATA_DIR/pglite`), the generated token, models and stored files live',
  }),
  DATABASE_URL: string({
    secret: true,
    pattern: /^postgres(ql)?:\/\//,
    expected: 'start with postgres:// or postgresql://',
    description: '`postgres://…` of a PostgreSQL server (>= 15, with pgvector) to use instead of the embedded PGlite',
  }),
  AUTH_TOKEN: string({
    secret: true,
    defaultText: 'generated',
    description: 'bearer token of the gateway; when unset, a random token is generated on first start and kept in `DATA_DIR/auth-token` (mode 0600): the server never runs without one. A placeholder (`changeme`, `secret`, …) is refused',
  }),
  CATALOG_TOKEN: string({ secret: true, defaultText: '`AUTH_TOKEN`', description: 'bearer token of the internal catalog API (`/v1/catalog/*`)' }),
  CONTEXT_REQUIRE_CATALOG_TOKEN: bool({
    default: false,
    description: '`true`: `GET /v1/context/general` takes `CATALOG_TOKEN` instead of `AUTH_TOKEN` (spec 4.3 rule 6, 5.4); the server refuses to start without `CATALOG_TOKEN`',
  }),
  LOG_LEVEL: oneOf(LOG_LEVELS, { default: 'info', description: 'least severe log level written; logs never contain tokens, query strings or document text' }),
  LOG_FORMAT: oneOf(['auto', 'json', 'pretty'] as const, {
    default: 'auto',
    description: '`auto`: readable lines when stdout is a terminal, JSON lines otherwise (src/util/log.ts)',
  }),
  BODY_LIMIT: size({ default: '10mb', description: 'largest JSON request body; a larger one gets 413' }),
  DEFAULT_PHONE_REGION: string({
    default: 'US',
    pattern: /^[A-Za-z]{2}$/,
    expected: 'be a two-letter region code',
    description: 'region (ISO 3166 alpha-2) used to read national phone numbers into E.164',
  }),
});

export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase();
  return h === 'localhost' || h === '::1' || h === '[::1]' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(h);
}

export function loadServerConfig(env: NodeJS.ProcessEnv = process.env): ServerConfig {
  const S = SERVER_SETTINGS;
  const host = read(env, S.HOST);
  const authToken = read(env, S.AUTH_TOKEN);
  const catalogToken = read(env, S.CATALOG_TOKEN);
  const contextRequireCatalogToken = read(env, S.CONTEXT_REQUIRE_CATALOG_TOKEN);
  if (contextRequireCatalogToken && !catalogToken) {
    throw new ConfigError('CONTEXT_REQUIRE_CATALOG_TOKEN=true needs CATALOG_TOKEN to be set');
  }
  for (const [name, token] of [['AUTH_TOKEN', authToken], ['CATALOG_TOKEN', catalogToken]] as const) {
    if (token !== undefined && isPlaceholderSecret(token)) {
      throw new ConfigError(`${name} is a placeholder ("${token.trim()}"), not a secret: set a long random value, or unset AUTH_TOKEN to have one generated in DATA_DIR/auth-token`);
    }
  }
  if (!isLoopbackHost(host) && !authToken) {
    throw new ConfigError(`refusing to listen on non-loopback HOST=${host} without AUTH_TOKEN`);
  }
  const allowedHosts = read(env, S.ALLOWED_HOSTS);
  try {
    parseAllowedHosts(allowedHosts, 'ALLOWED_HOSTS');
  } catch (err) {
    throw new ConfigError((err as Error).message);
  }
  return {
    port: read(env, S.PORT),
    host,
    dataDir: read(env, S.DATA_DIR),
    databaseUrl: read(env, S.DATABASE_URL),
    authToken,
    allowedHosts,
    catalogToken,
    logLevel: read(env, S.LOG_LEVEL),
    logFormat: read(env, S.LOG_FORMAT),
    bodyLimitBytes: read(env, S.BODY_LIMIT),
    defaultPhoneRegion: read(env, S.DEFAULT_PHONE_REGION).toUpperCase(),
    contextRequireCatalogToken,
  };
}
