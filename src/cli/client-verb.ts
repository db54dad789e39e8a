/**
 * What the client verbs (search, ask, open, tag, saved, people) share: the options that find the server
 * (--url, --token; --gateway as an old name of --url), --json and --help, and runVerb, which owns them: it
 * prints the usage for --help (exit 0), a usage mistake with the usage (exit 2), and a server's refusal
 * (exit 1). The verb parses its own options and runs its body with the client.
 */
import { createServerClient, type ServerClient } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { resolveServerTarget } from '../client/target.ts';
import { isUsageError, usageMessage } from './usage.ts';

export interface CommandIo {
  out?: { write(s: string): unknown; isTTY?: boolean };
  err?: { write(s: string): unknown };
  env?: NodeJS.ProcessEnv;
}

/** The options every client verb takes, as its usage lists them. */
export const CLIENT_OPTIONS_USAGE = `  --url URL          server URL (default: MEMEX_URL, else http://127.0.0.1:$PORT, PORT 8085)
  --token TOKEN      bearer token (default: AUTH_TOKEN, else the file DATA_DIR/auth-token)
  --json             print the server's JSON answer
  -h, --help         this text`;

export const targetOptions = {
  url: { type: 'string' },
  gateway: { type: 'string' },
  token: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
} as const;


type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

/**
 * Splits a search or ask command line into its options and its query words. A query is written with the query
 * language's own dashes (`-word`, `-"a phrase"`), so a single-dash word that is not one of the verb's short
 * options is a query word wherever it stands: `memex search '"device tree"' -word` excludes "word" instead of
 * failing with "Unknown option '-w'". `--long` options stay options (a mistyped one is still an error), and
 * everything after `--` is query.
 */
export function splitQueryArgs(argv: string[], options: OptionSpec): { optionArgs: string[]; words: string[] } {
  const shorts = new Map<string, string>();
  for (const [name, o] of Object.entries(options)) if (o.short) shorts.set(o.short, name);
  const optionArgs: string[] = [];
  const words: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      words.push(...argv.slice(i + 1));
      break;
    }
    let name: string | undefined;
    if (a.startsWith('--')) name = a.slice(2).split('=')[0];
    else if (/^-[^-]$/.test(a)) name = shorts.get(a[1]);
    if (name === undefined && !a.startsWith('--')) {
      words.push(a);
      continue;
    }
    optionArgs.push(a);
    // A string option's value is the next argument (unless given as --name=value), even when it starts with a dash.
    if (name !== undefined && options[name]?.type === 'string' && !a.includes('=') && i + 1 < argv.length) optionArgs.push(argv[++i]);
  }
  return { optionArgs, words };
}

/** Runs one verb: parses, finds the server, and turns usage and server errors into exit codes 2 and 1. */
export async function runVerb(
  verb: string,
  usage: string,
  io: CommandIo,
  body: (client: ServerClient, out: NonNullable<CommandIo['out']>) => Promise<number>,
  parse: () => { help: boolean; target: { url?: string; gateway?: string; token?: string } },
): Promise<number> {
  const out = io.out ?? process.stdout;
  const err = io.err ?? process.stderr;
  const env = io.env ?? process.env;
  let client: ServerClient;
  try {
    const p = parse();
    if (p.help) {
      out.write(`${usage}\n`);
      return 0;
    }
    client = createServerClient(resolveServerTarget(p.target, env, (m) => err.write(`memex ${verb}: ${m}\n`)));
  } catch (e) {
    if (isUsageError(e)) {
      err.write(`${usageMessage(verb, e.message, usage)}\n`);
      return 2;
    }
    throw e;
  }
  try {
    return await body(client, out);
  } catch (e) {
    if (e instanceof ClientError) {
      err.write(`memex ${verb}: ${e.message}\n`);
      return 1;
    }
    throw e;
  }
}
