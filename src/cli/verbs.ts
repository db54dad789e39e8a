/**
 * The `memex` verbs as one table: each verb is declared once with its lines in `memex help` and how it runs,
 * and src/cli/main.ts generates the help text, the dispatch, which verbs keep the process running and the
 * hint for a locked database from it. A verb's own options, and its `--help`, are its module's.
 */

export interface Verb {
  name: string;
  /** Other names it answers to (`memex --help`). */
  aliases?: readonly string[];
  /** Its lines in `memex help`: the command, padded to the description column, and the description. */
  help: string;
  /** Runs until stopped (the servers, the MCP stdio loop): the process does not end when `run` returns. */
  keepsRunning?: boolean;
  /** What to do instead when the embedded database belongs to another process (DatabaseLockedError). */
  lockedHint?: string;
  /** The arguments after the verb; a number returned is the exit status. */
  run(args: string[]): Promise<number | void>;
}

export function defineVerb(verb: Verb): Verb {
  return verb;
}

/** The verb named `name` (or one of its aliases). */
export function findVerb(verbs: readonly Verb[], name: string): Verb | undefined {
  return verbs.find((v) => v.name === name || v.aliases?.includes(name));
}

/** `memex help`: the header, every verb's lines in the table's order, and the footer. */
export function helpText(verbs: readonly Verb[], header: string, footer: string): string {
  return `${header}\n${verbs.map((v) => v.help).join('\n')}\n\n${footer}`;
}
