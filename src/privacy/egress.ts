/**
 * Egress redaction: where document text leaves the machine, redact the copy that leaves (issue 30).
 *
 * The person's own store keeps mail as written. What protects it is a line at the machine's edge: every
 * call that sends text to another host — a remote LLM answering `ask`, a remote embedding API, an MCP
 * client on another machine — goes through prepareEgress, which applies the egress policy (per category:
 * emails, phones, account numbers, SSN; src/privacy/redact.ts) to the copy it sends and logs one line per
 * call naming the destination, the purpose and the policy (never the text). A destination on this machine
 * (loopback) gets the original.
 *
 * Configuration (environment, read once by the server; docs/configuration.md):
 * - EGRESS_REDACT: the policy for remote destinations — `all` (default), `none`, or a list
 *   (`emails,phones`).
 * - EGRESS_TRUSTED_HOSTS: hosts (`host` or `host:port`) that count as this machine although they are not on
 *   loopback — say, the Ollama box on your own LAN.
 * - EGRESS_REMOTE_HOSTS: loopback hosts that count as remote — a local proxy (LiteLLM, an SSH tunnel) that
 *   forwards to a cloud API.
 */
import pino from 'pino';
import { ConfigError, defineSettings, list, read, string } from '../config/env.ts';
import { isLoopbackHost } from '../config/server.ts';
import { NO_REDACTIONS, parsePolicyList, policyLabel, redactsAnything, type RedactOptions } from './policy.ts';
import { findPii, replaceSpans, type PiiKind } from './redact.ts';

export type EgressPurpose = 'ask' | 'embedding' | 'mcp' | 'gateway';

export interface EgressConfig {
  /** What a remote destination gets redacted. */
  remote: RedactOptions;
  /** Lower-cased `host` or `host:port` entries counted as this machine. */
  trustedHosts: string[];
  /** Lower-cased loopback `host` or `host:port` entries counted as remote. */
  remoteHosts: string[];
}

export interface EgressLogger {
  info(obj: object, msg?: string): void;
  debug(obj: object, msg?: string): void;
}

export const EGRESS_SETTINGS = defineSettings('egress', 'Redaction where text leaves the machine (egress)', {
  EGRESS_REDACT: string({
    default: 'all',
    description: 'what a remote destination gets redacted: `all`, `none`, or a list of `emails`, `phones`, `account_numbers`, `ssn`',
  }),
  EGRESS_TRUSTED_HOSTS: list({
    default: [],
    lowerCase: true,
    description: '`host` or `host:port` list counted as this machine although not on loopback (the Ollama box on your own LAN)',
  }),
  EGRESS_REMOTE_HOSTS: list({
    default: [],
    lowerCase: true,
    description: 'loopback `host:port` list counted as remote: a local proxy (LiteLLM, an SSH tunnel) that forwards to a cloud API',
  }),
});

/** The egress configuration of the environment; a bad EGRESS_REDACT is a ConfigError naming it. */
export function loadEgressConfig(env: NodeJS.ProcessEnv = process.env): EgressConfig {
  const raw = read(env, EGRESS_SETTINGS.EGRESS_REDACT);
  let remote: RedactOptions;
  try {
    remote = parsePolicyList(raw);
  } catch (err) {
    throw new ConfigError(`EGRESS_REDACT: ${(err as Error).message}, got "${raw}"`);
  }
  return { remote, trustedHosts: read(env, EGRESS_SETTINGS.EGRESS_TRUSTED_HOSTS), remoteHosts: read(env, EGRESS_SETTINGS.EGRESS_REMOTE_HOSTS) };
}

let configured: { config: EgressConfig; log: EgressLogger } | undefined;

/** Sets the policy and the log every later call uses (the server does this once at start). */
export function configureEgress(config: EgressConfig, log: EgressLogger): void {
  configured = { config, log };
}

function current(): { config: EgressConfig; log: EgressLogger } {
  // Not configured (a library user, a bench): the environment's policy, logged to stderr like the server.
  configured ??= { config: loadEgressConfig(), log: pino({ level: process.env.LOG_LEVEL ?? 'info' }, pino.destination(2)).child({ component: 'egress' }) };
  return configured;
}

/** `host:port` of a URL (default ports filled in), lower-cased; null when it is not a URL. */
function hostPort(url: string): { host: string; hostPort: string } | null {
  try {
    const u = new URL(url);
    const port = u.port || (u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '');
    const host = u.hostname.toLowerCase();
    return { host, hostPort: port ? `${host}:${port}` : host };
  } catch {
    return null;
  }
}

/** True when text sent to `url` stays on this machine (loopback, or trusted), so it goes as written. */
export function isLocalDestination(url: string, config: EgressConfig = current().config): boolean {
  const hp = hostPort(url);
  if (!hp) return false;
  const listed = (list: string[]) => list.includes(hp.host) || list.includes(hp.hostPort) || list.includes(`[${hp.host}]`);
  if (listed(config.remoteHosts)) return false;
  return isLoopbackHost(hp.host) || listed(config.trustedHosts);
}

/** The policy text sent to `url` gets: nothing for this machine, the configured policy for any other. */
export function egressPolicy(url: string, config: EgressConfig = current().config): RedactOptions {
  return isLocalDestination(url, config) ? { ...NO_REDACTIONS } : config.remote;
}

/** Keys whose values are identifiers or addresses of records, never prose: left alone by the deep walk. */
const ID_KEY = /(?:^|_)(?:id|ids|uri|url|sha256|hash|key|model|role)$/i;

/**
 * The copy of `payload` to send to `url` for `purpose`: every string in it (deeply, except id-like keys)
 * redacted by the destination's policy, and one log line for the call: destination (host and port only),
 * purpose, policy label and how many of each kind were replaced. For a local destination the payload is
 * returned as it is (the line says so, at debug level).
 */
export function prepareEgress<T>(url: string, purpose: EgressPurpose, payload: T): T {
  const { config, log } = current();
  const options = egressPolicy(url, config);
  const destination = hostPort(url)?.hostPort ?? 'unknown';
  if (!redactsAnything(options)) {
    const local = isLocalDestination(url, config);
    (local ? log.debug : log.info).call(log, { destination, purpose, policy: 'none', local }, 'egress: text sent as written');
    return payload;
  }
  const replaced: Partial<Record<PiiKind, number>> = {};
  let strings = 0;
  const redact = (text: string): string => {
    strings++;
    const spans = findPii(text, options);
    for (const s of spans) replaced[s.kind] = (replaced[s.kind] ?? 0) + 1;
    return replaceSpans(text, spans);
  };
  const walk = (v: unknown, key: string): unknown => {
    if (typeof v === 'string') return ID_KEY.test(key) ? v : redact(v);
    if (Array.isArray(v)) return v.map((x) => walk(x, key));
    if (v && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[k] = walk(x, k);
      return out;
    }
    return v;
  };
  const out = walk(payload, '') as T;
  log.info({ destination, purpose, policy: policyLabel(options), strings, replaced }, 'egress: redacted before sending');
  return out;
}
