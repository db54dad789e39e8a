/**
 * The `memex` verbs as one table. Each verb is declared once: its lines in `memex help`, its usage, its options
 * (read by the one parser, src/cli/options.ts), whether it talks to a server, and how it runs. runVerb owns what
 * every verb shares:
 *
 *   --help, -h   the usage on standard output, exit 0
 *   a mistake    `memex VERB: message`, a blank line and the usage on standard error, exit 2 (an unknown option,
 *                a missing or bad value, a UsageError the verb throws)
 *   --url, --token (--gateway, the old name of --url)
 *                with `server`: the client rule of src/client/target.ts (the flags, then MEMEX_URL / AUTH_TOKEN,
 *                then DATA_DIR/auth-token), resolved once; `server: true` hands `run` a ready client, `server:
 *                'optional'` the running server when one answers, else the database
 *   a refusal    a server's refusal (ClientError) or one of the verb's `reported` errors: `memex VERB: message`,
 *                exit 1
 *   progress     `progress: true`: the shared progress bar (src/cli/progress.ts) on standard error when it is a
 *                terminal (and the verb has no --no-progress given), none otherwise
 *
 * src/cli/main.ts generates `memex help`, the dispatch, which verbs keep the process running and the hint for a
 * locked database from the table.
 */
import type { Database } from '../db/types.ts';
import type { ServerClient } from '../client/server.ts';
import type { ServerTarget, TargetFlags } from '../client/target.ts';
import { ClientError } from '../client/errors.ts';
import { parseOptions, type OptionSpecs, type OptionValues, type Positionals } from './options.ts';
import { progressBar, type ProgressBar } from './progress.ts';
import { isUsageError, usageMessage } from './usage.ts';

export interface Output {
  write(s: string | Uint8Array): unknown;
  isTTY?: boolean;
}

/** Where a verb writes and what it reads; the process's own by default (tests give theirs). */
export interface VerbIo {
  out?: Output;
  err?: Output;
  env?: NodeJS.ProcessEnv;
  /** `server: 'optional'`: opens the configured database when no server answers (default: src/cli/database.ts). */
  openDatabase?: () => Promise<Database>;
  /** Ends a verb that runs until stopped (`import mail --watch`; else SIGINT or SIGTERM does). */
  signal?: AbortSignal;
  /** `import mail --watch`: called once the watch is on (tests). */
  onWatching?: () => void;
}

/** The options a server verb takes besides its own. */
const SERVER_OPTIONS = {
  url: { kind: 'string', description: 'server URL (default: MEMEX_URL, else http://127.0.0.1:$PORT)' },
  gateway: { kind: 'string', description: 'old name of --url' },
  token: { kind: 'string', description: 'bearer token (default: AUTH_TOKEN, else the file DATA_DIR/auth-token)' },
} as const satisfies OptionSpecs;

const HELP_OPTION = { help: { kind: 'boolean', short: 'h', description: 'this text' } } as const satisfies OptionSpecs;

type Values<O extends OptionSpecs> = OptionValues<O & typeof SERVER_OPTIONS & typeof HELP_OPTION>;

export interface VerbContext<O extends OptionSpecs = OptionSpecs> {
  /** The positionals (or query words) after the options; everything after the verb for a `passThrough` verb. */
  args: string[];
  values: Values<O>;
  out: Output;
  err: Output;
  env: NodeJS.ProcessEnv;
  io: VerbIo;
  /** `server: true`: where the server is, and a client for it. */
  target: ServerTarget;
  client: ServerClient;
  /** `server` verbs: --url, --token, --gateway as given. */
  flags: TargetFlags;
  /**
   * `server` verbs: the client rule on the flags and the environment, with `configured` (a configuration file the
   * verb read) after the variables; a UsageError for a URL that is not http(s).
   */
  resolveTarget(configured?: { url?: string; token?: string; source: string }): ServerTarget;
  /** `server: 'optional'`: `viaServer` with the running server when one answers, else `viaDatabase` on the database. */
  serverOrDatabase<T>(viaServer: (server: ServerClient) => Promise<T>, viaDatabase: (db: Database) => Promise<T>): Promise<T>;
  /** `server: 'optional'`: the running server, or undefined when none answers. */
  runningServer(): Promise<ServerClient | undefined>;
  /** `progress: true`: a bar on standard error with cli-progress's `format`, or null (not a terminal, --no-progress). */
  progress(format: string, opts?: { hideCursor?: boolean }): ProgressBar | null;
  /** One line `memex VERB: message` on standard error. */
  say(message: string): void;
}

export interface VerbSpec<O extends OptionSpecs = OptionSpecs> {
  name: string;
  /** Other names it answers to (`memex --help`). */
  aliases?: readonly string[];
  /** Its lines in `memex help`: the command, padded to the description column, and the description. */
  help: string;
  /** What --help prints, and a mistake after its message. */
  usage?: string;
  /** Its own options (--help, and --url/--token with `server`, are the table's). */
  options?: O;
  /** What it takes besides options (default: nothing). */
  positionals?: Positionals;
  /**
   * Talks to a server: true for a client of the running server, 'optional' for the running server or else the
   * database, 'configured' when the verb reads a configuration file first and calls resolveTarget itself.
   */
  server?: boolean | 'optional' | 'configured';
  /** Draws the shared progress bar. */
  progress?: boolean;
  /** Errors of the verb's own (besides a server's refusal) printed as `memex VERB: message`, exit 1. */
  reported?: readonly (abstract new (...args: never[]) => Error)[];
  /** Reads its command line itself (`memex agent`, `memex import PATH`): `args` is everything after the verb. */
  passThrough?: boolean;
  /** Runs until stopped (the servers, the MCP stdio loop): the process does not end when `run` returns. */
  keepsRunning?: boolean;
  /** What to do instead when the embedded database belongs to another process (DatabaseLockedError). */
  lockedHint?: string;
  /** The verb's work; a number returned is the exit status (default 0). */
  run(ctx: VerbContext<O>): Promise<number | void>;
}

export type Verb = VerbSpec<any>;

export function defineVerb<O extends OptionSpecs = Record<never, never>>(verb: VerbSpec<O>): VerbSpec<O> {
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

const unavailable = (what: string, verb: string) => () => {
  throw new Error(`memex ${verb}: ${what} is for verbs declared with server`);
};

/** Runs `verb` on the arguments after its name; the exit status. */
export async function runVerb<O extends OptionSpecs>(verb: VerbSpec<O>, argv: string[], io: VerbIo = {}): Promise<number> {
  const out = io.out ?? process.stdout;
  const err = io.err ?? process.stderr;
  const env = io.env ?? process.env;
  const usage = verb.usage ?? '';
  const say = (message: string) => void err.write(`memex ${verb.name}: ${message}\n`);
  const mistake = (message: string) => {
    err.write(`${usageMessage(verb.name, message, usage)}\n`);
    return 2;
  };
  const ctx = { out, err, env, io, say } as VerbContext<O>;
  try {
    if (verb.passThrough) ctx.args = argv;
    else {
      const options = { ...(verb.server ? SERVER_OPTIONS : {}), ...verb.options, ...HELP_OPTION };
      const parsed = parseOptions(argv, options, verb.positionals ?? 'none');
      ctx.values = parsed.values as Values<O>;
      ctx.args = parsed.args;
      if (ctx.values.help) {
        out.write(`${usage}\n`);
        return 0;
      }
    }
    const v = (ctx.values ?? {}) as Record<string, unknown> & TargetFlags;
    ctx.flags = { url: v.url, gateway: v.gateway, token: v.token };
    ctx.progress = (format, opts = {}) => (verb.progress && !v['no-progress'] ? progressBar(format, err as NodeJS.WritableStream, opts) : null);
    const { resolveServerTarget } = await import('../client/target.ts');
    ctx.resolveTarget = (configured) => resolveServerTarget(ctx.flags, env, say, configured);
    if (verb.server === true) {
      const { createServerClient } = await import('../client/server.ts');
      ctx.target = ctx.resolveTarget();
      ctx.client = createServerClient(ctx.target);
    } else {
      Object.defineProperty(ctx, 'target', { get: unavailable('target', verb.name) });
      Object.defineProperty(ctx, 'client', { get: unavailable('client', verb.name) });
    }
    if (verb.server === 'optional') {
      const server = await import('../client/server.ts');
      const openDatabase = io.openDatabase ?? (async () => (await import('./database.ts')).operatorDatabase());
      ctx.runningServer = () => server.runningServer(ctx.flags, env);
      ctx.serverOrDatabase = (viaServer, viaDatabase) => server.serverOrDatabase({ flags: ctx.flags, env, openDatabase }, viaServer, viaDatabase);
    } else {
      ctx.runningServer = unavailable('runningServer', verb.name);
      ctx.serverOrDatabase = unavailable('serverOrDatabase', verb.name);
    }
    return (await verb.run(ctx)) ?? 0;
  } catch (e) {
    if (isUsageError(e)) return mistake(e.message);
    if (e instanceof ClientError || verb.reported?.some((c) => e instanceof c)) {
      say((e as Error).message);
      return 1;
    }
    throw e;
  }
}
