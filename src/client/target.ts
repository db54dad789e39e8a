/**
 * How every client of the public API (the CLI verbs, `memex mcp`, `memex import mail`) finds the running server
 * and its token. One rule, documented in docs/configuration.md:
 *
 *   server URL  --url, else MEMEX_URL, else http://127.0.0.1:$PORT (PORT defaults to 8085)
 *   token       --token, else AUTH_TOKEN, else the file DATA_DIR/auth-token (DATA_DIR defaults to ./data),
 *               which is the token a server without AUTH_TOKEN generates on its first start
 *
 * Older names still work and print a deprecation note: the flag --gateway, the variables MEMEX_GATEWAY_URL and
 * SVC_GATEWAY_URL (URL) and SVC_GATEWAY_TOKEN (token).
 *
 * The module imports nothing heavy: `memex help` and the client verbs load it on every start.
 */
import fs from 'node:fs';
import path from 'node:path';
import { defineSettings, filePath, read, string } from '../config/env.ts';
import { SERVER_SETTINGS } from '../config/server.ts';
import { UsageError } from '../util/errors.ts';

export interface ServerTarget {
  /** Base URL without a trailing slash, e.g. http://127.0.0.1:8085. */
  url: string;
  token: string | undefined;
  /** Where the token came from, for error messages: "--token", "AUTH_TOKEN", a file path, or "none". */
  tokenSource: string;
}

export interface TargetFlags {
  url?: string;
  token?: string;
  /** Deprecated spelling of --url. */
  gateway?: string;
}

/** The client commands' own variables; they also read the server's PORT, AUTH_TOKEN and DATA_DIR (the rule above). */
export const CLIENT_SETTINGS = defineSettings('client', 'Client commands', {
  MEMEX_URL: string({ defaultText: '`http://127.0.0.1:$PORT`', description: 'the server the client commands talk to (after `--url`)' }),
  MEMEX_INGEST_STATE: filePath({
    defaultText: '`$XDG_STATE_HOME/memex/ingest-state.json`',
    description: '`memex ingest`: the state file remembering uploaded files (after `--state`)',
  }),
  MEMEX_MAIL_IMPORT_STATE: filePath({
    defaultText: '`$XDG_STATE_HOME/memex/mail-import-state.json`',
    description: '`memex import mail`: the manifest of what was sent (after `--state`)',
  }),
});

/** Deprecated variable → the name that replaces it. */
const DEPRECATED_URL_VARS = ['MEMEX_GATEWAY_URL', 'SVC_GATEWAY_URL'] as const;
const DEPRECATED_TOKEN_VARS = ['SVC_GATEWAY_TOKEN'] as const;


function nonEmpty(v: string | undefined): string | undefined {
  const t = v?.trim();
  return t ? t : undefined;
}

/** The data directory a local server uses (DATA_DIR, default ./data), as the server resolves it. */
export function clientDataDir(env: NodeJS.ProcessEnv): string {
  return read(env, SERVER_SETTINGS.DATA_DIR);
}

/**
 * Applies the rule above. `warn` receives one line per deprecated name in use (default: stderr).
 * Throws UsageError for a URL that is not http(s).
 */
export function resolveServerTarget(
  flags: TargetFlags,
  env: NodeJS.ProcessEnv = process.env,
  warn: (message: string) => void = (m) => process.stderr.write(`memex: ${m}\n`),
  /**
   * A configuration file the verb was given (`import mail` reads the host agent's gateway settings), consulted
   * after the variables and before the defaults.
   */
  configured?: { url?: string; token?: string; source: string },
): ServerTarget {
  let url = nonEmpty(flags.url);
  if (!url && nonEmpty(flags.gateway)) {
    url = nonEmpty(flags.gateway);
    warn('--gateway is deprecated; use --url');
  }
  url ??= read(env, CLIENT_SETTINGS.MEMEX_URL);
  if (!url) {
    for (const name of DEPRECATED_URL_VARS) {
      const v = nonEmpty(env[name]);
      if (v) {
        url = v;
        warn(`${name} is deprecated; set MEMEX_URL instead`);
        break;
      }
    }
  }
  url ??= nonEmpty(configured?.url);
  url ??= `http://127.0.0.1:${read(env, SERVER_SETTINGS.PORT)}`;
  url = url.replace(/\/+$/, '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    /* reported below */
  }
  if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new UsageError(`the server URL must be http(s)://…, got "${url}"`);
  }

  if (nonEmpty(flags.token)) return { url, token: nonEmpty(flags.token), tokenSource: '--token' };
  const authToken = read(env, SERVER_SETTINGS.AUTH_TOKEN);
  if (authToken) return { url, token: authToken, tokenSource: 'AUTH_TOKEN' };
  for (const name of DEPRECATED_TOKEN_VARS) {
    const v = nonEmpty(env[name]);
    if (v) {
      warn(`${name} is deprecated for memex client commands; set AUTH_TOKEN instead`);
      return { url, token: v, tokenSource: name };
    }
  }
  if (nonEmpty(configured?.token)) return { url, token: nonEmpty(configured?.token), tokenSource: configured!.source };
  const file = path.join(clientDataDir(env), 'auth-token');
  try {
    const token = nonEmpty(fs.readFileSync(file, 'utf8'));
    if (token) return { url, token, tokenSource: file };
  } catch {
    /* no token file: the server may run without one on loopback */
  }
  return { url, token: undefined, tokenSource: 'none' };
}

