/**
 * The one option parser of the `memex` verbs. A verb declares its options once (name, kind, short alias,
 * description); every verb's command line is read here, with node:util's parseArgs doing the reading, so a
 * mistake reads the same in every verb: "Unknown option '--x'", "Option '--url <value>' argument missing",
 * "Option '--json' does not take an argument", "Unexpected argument 'x'". Numbers are checked against their
 * bounds with one message shape (`--limit must be an integer from 1 to 50, got "0"`).
 *
 * A verb whose arguments are query words (`memex search '"device tree"' -word`) reads single-dash words that
 * are not its short options as words wherever they stand, and everything after `--` (issue 46).
 */
import { parseArgs } from 'node:util';
import { UsageError } from '../util/errors.ts';

export type OptionKind = 'string' | 'number' | 'boolean' | 'list';

export interface OptionSpec {
  kind: OptionKind;
  /** One-letter alias (`-k`). */
  short?: string;
  /** What it does, for the reader of the declaration (the verb's usage text is written by hand). */
  description?: string;
  /** The value when the option is absent (booleans: false, lists: [] unless given). */
  default?: string | number;
  /** number: the bounds, inclusive; an integer unless `real`. */
  min?: number;
  max?: number;
  real?: boolean;
  /** number: what follows the option's name when a value is refused (default: `must be an integer from MIN to MAX, got "RAW"`). */
  invalid?: string;
  /** string: `--name` alone means `--name=BARE`; only the `=` form carries another value (`--redact` vs `--redact=phones`). */
  bare?: string;
}

export type OptionSpecs = Record<string, OptionSpec>;

type ValueOf<S extends OptionSpec> = S['kind'] extends 'boolean'
  ? boolean
  : S['kind'] extends 'list'
    ? string[]
    : S['kind'] extends 'number'
      ? S extends { default: number } ? number : number | undefined
      : S extends { default: string } ? string : string | undefined;

export type OptionValues<O extends OptionSpecs> = { [K in keyof O]: ValueOf<O[K]> };

/** How a verb takes what is not an option: not at all, as positionals, or as query words (see above). */
export type Positionals = 'none' | 'any' | 'words';

export interface ParsedArgs<O extends OptionSpecs> {
  values: OptionValues<O>;
  /** The positionals, or the query words. */
  args: string[];
}

/**
 * Splits a command line whose positionals are query words into its options and its words: a single-dash word
 * that is not one of the short options is a word wherever it stands (`-word`, `-"a phrase"`); `--long` options
 * stay options (a mistyped one is still an error); everything after `--` is words.
 */
export function splitQueryArgs(argv: string[], options: OptionSpecs): { optionArgs: string[]; words: string[] } {
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
    // A value-taking option's value is the next argument (unless given as --name=value), even when it starts with a dash.
    const kind = name === undefined ? undefined : options[name]?.kind;
    if (kind !== undefined && kind !== 'boolean' && !a.includes('=') && i + 1 < argv.length) optionArgs.push(argv[++i]);
  }
  return { optionArgs, words };
}

function numberValue(name: string, spec: OptionSpec, raw: string): number {
  const n = Number(raw);
  const ok = raw.trim() !== '' && (spec.real ? Number.isFinite(n) : Number.isInteger(n)) && n >= (spec.min ?? -Infinity) && n <= (spec.max ?? Infinity);
  if (!ok) throw new UsageError(`--${name} ${spec.invalid ?? `must be an integer from ${spec.min ?? 1} to ${spec.max}, got "${raw}"`}`);
  return n;
}

/** Reads `argv` by `options`; a UsageError (or parseArgs's ERR_PARSE_ARGS_* error) for any mistake. */
export function parseOptions<O extends OptionSpecs>(argv: string[], options: O, positionals: Positionals = 'none'): ParsedArgs<O> {
  let args = argv;
  // `--name` alone of a bare-valued option is `--name=BARE` (before the end of options only).
  const bare = Object.entries(options).filter(([, o]) => o.bare !== undefined);
  if (bare.length) {
    const end = args.indexOf('--');
    args = args.map((a, i) => {
      const hit = (end < 0 || i < end) && bare.find(([name]) => a === `--${name}`);
      return hit ? `${a}=${hit[1].bare}` : a;
    });
  }
  let words: string[] | undefined;
  if (positionals === 'words') ({ optionArgs: args, words } = splitQueryArgs(args, options));
  const nodeOptions: Record<string, { type: 'string' | 'boolean'; short?: string; multiple?: boolean }> = {};
  for (const [name, o] of Object.entries(options)) {
    nodeOptions[name] = { type: o.kind === 'boolean' ? 'boolean' : 'string', ...(o.short ? { short: o.short } : {}), ...(o.kind === 'list' ? { multiple: true } : {}) };
  }
  const parsed = parseArgs({ args, options: nodeOptions, allowPositionals: positionals !== 'none', strict: true });
  const values: Record<string, unknown> = {};
  for (const [name, o] of Object.entries(options)) {
    const raw = parsed.values[name] as string | string[] | boolean | undefined;
    if (o.kind === 'boolean') values[name] = raw === true;
    else if (o.kind === 'list') values[name] = (raw as string[] | undefined) ?? [];
    else if (o.kind === 'number') values[name] = raw === undefined ? o.default : numberValue(name, o, raw as string);
    else values[name] = raw ?? o.default;
  }
  return { values: values as OptionValues<O>, args: words ?? parsed.positionals };
}
