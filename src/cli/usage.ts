/**
 * What the verbs under src/cli/ share when they read their options: what counts as a usage mistake, the
 * message it prints (`memex VERB: …`, a blank line, the verb's usage; exit status 2), and integer options.
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

/** An integer option from 1 to max, `def` when absent; a UsageError naming the option otherwise. */
export function intOption(raw: string | undefined, name: string, def: number, max: number): number {
  if (raw === undefined) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1 || n > max) throw new UsageError(`${name} must be an integer from 1 to ${max}, got "${raw}"`);
  return n;
}
