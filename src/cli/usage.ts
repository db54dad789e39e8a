/**
 * What the verbs under src/cli/ share when they read their options: what counts as a usage mistake, the
 * message it prints (`memex VERB: …`, a blank line, the verb's usage; exit status 2), and the usage lines of
 * the client options.
 */
import { UsageError } from '../util/errors.ts';

/** A usage mistake: a UsageError, or one of node:util parseArgs's ERR_PARSE_ARGS_* errors (unknown option …). */
export function isUsageError(e: unknown): e is Error {
  return e instanceof UsageError || !!(e as { code?: string } | null)?.code?.startsWith('ERR_PARSE_ARGS');
}

/** What a usage mistake prints: `memex VERB: message`, a blank line and the verb's usage (no final newline). */
export function usageMessage(verb: string, message: string, usage: string): string {
  return `memex ${verb}: ${message}\n\n${usage}`;
}

/** The options every client verb takes, as its usage lists them (search, ask, open, tag, saved). */
export const CLIENT_OPTIONS_USAGE = `  --url URL          server URL (default: MEMEX_URL, else http://127.0.0.1:$PORT, PORT 8085)
  --token TOKEN      bearer token (default: AUTH_TOKEN, else the file DATA_DIR/auth-token)
  --json             print the server's JSON answer
  -h, --help         this text`;
