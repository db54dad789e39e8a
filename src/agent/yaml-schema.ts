/**
 * A YAML file declared once, as a TypeBox schema: each key with its default, its bounds, a one-line description and
 * the check of its value. The same declaration
 *   - types the value read (`StaticDecode` of the schema),
 *   - reads a parsed document (`readDocument`): defaults filled in, the first problem reported as one line naming
 *     the file and the key, e.g. `agent.yaml: modules.ocr.timeout_ms must be an integer >= 1, got "fast"`,
 *   - writes the docs' table of every key (`documentTable`; a test fails when docs and schema drift apart).
 *
 * TypeBox's own checker is not used to read: its messages are JSON Schema's, and a hand-written YAML file is read
 * with a few liberties it does not take (a key with no value is unset, enum words in any case, `~` in paths).
 * What a reader adds to TypeBox's vocabulary is carried in the schemas' options (`Extras` below).
 */
import os from 'node:os';
import path from 'node:path';
import { OptionalKind, TransformKind, Type, type StaticDecode, type TProperties, type TSchema, type TTransform } from '@sinclair/typebox';
import { expandHome } from '../util/fs.ts';
import { parseDuration, parseSchedule, ScheduleError, type Schedule } from './sources/schedule.ts';

/** A broken rule of an object or a list: `key` is relative to it; without `got` the message ends after `must`. */
export interface Problem {
  key: string;
  must: string;
  got?: unknown;
}

/** What the reader knows of a schema besides JSON Schema. */
interface Extras {
  description?: string;
  /** How the docs show a default the reader computes (or that a value of another key decides). */
  defaultText?: string;
  /** A string that may be empty (a secret, whose emptiness a rule of its object refuses with its own words). */
  blank?: boolean;
  /** A string read without the blanks around it. */
  trim?: boolean;
  /** A key read only when the keys read before it say so (`type: imap`); otherwise it is accepted and left out. */
  readWhen?: (before: never) => boolean;
  /** A value's own check: what it must be, or undefined when it is fine. */
  check?: (value: never) => string | undefined;
  /** An object's or a list's check across its keys or items, after they were read. */
  rules?: (value: never) => Problem | undefined;
  /** A list's or a union's error text when the value is not one (`must be a list of non-empty strings`). */
  must?: string;
  /** Keys an object accepts and does not read (the spec names them), with why: key → description. */
  accepted?: Record<string, string>;
  format?: string;
  default?: unknown;
}

type Options = Omit<Extras, 'default' | 'format'>;

// -------------------------------------------------------------------------------------------------------------------
// The vocabulary. Each makes a plain TypeBox schema; the reader and the docs table read its options.

export const yes = (description: string, options: Options = {}) => Type.Boolean({ default: true, description, ...options });
export const no = (description: string, options: Options = {}) => Type.Boolean({ default: false, description, ...options });

/** A whole number; without `max`, any from `min` up. */
export function int(description: string, bounds: Options & { default?: number; min: number; max?: number }) {
  const { min, max, ...options } = bounds;
  return Type.Integer({ description, minimum: min, maximum: max, ...options });
}

/** A finite number above `above`. */
export function number(description: string, bounds: { default: number; above: number }) {
  return Type.Number({ description, default: bounds.default, exclusiveMinimum: bounds.above });
}

/** A non-empty string (unless `blank`). */
export function text(description: string, options: Options & { default?: string } = {}) {
  return Type.String({ description, ...options });
}

/** One of a few words, read in any case. */
export function oneOf<const V extends string>(values: readonly V[], description: string, options: Options & { default?: NoInfer<V> } = {}) {
  // Written out: Type.Union types a tuple of literals, not a list of them, and makes one value no union at all.
  return Type.Unsafe<V>({ anyOf: values.map((v) => Type.Literal(v)), description, ...options });
}

/** A file or folder: `~` is the home folder, relative paths are the working directory's. A default may start with
 * `$XDG_STATE_HOME/` ($XDG_STATE_HOME unset: ~/.local/state), the way the docs write it. */
export function filePath(description: string, options: Options & { default?: string } = {}) {
  return Type.String({ description, format: 'path', ...options });
}

/** A list of non-empty strings. */
export function texts(description: string, options: Options & { default?: string[] } = {}) {
  return Type.Array(Type.String(), { description, default: [], must: 'must be a list of non-empty strings', ...options });
}

/** A list of paths (see filePath). */
export function paths(description: string, options: Options = {}) {
  return Type.Array(Type.String({ format: 'path' }), { description, default: [], must: 'must be a list of non-empty strings', ...options });
}

/** `30s`, `10m`, `1h`, `1d` or a number of seconds, read as milliseconds (src/agent/sources/schedule.ts). */
export function duration(description: string, options: Options & { default: string }) {
  return Type.Unsafe<number>({ description, format: 'duration', ...options });
}

/** `{every: 15m}` or `{cron: "0 * * * *"}` (docs/sources.md). */
export function schedule(description: string) {
  return Type.Optional(Type.Unsafe<Schedule>({ description, format: 'schedule' }));
}

/** A mapping of the given keys only (an unknown key is an error: a typo must not leave a module off). */
export function section<P extends TProperties>(description: string, properties: P, options: Options = {}) {
  return Type.Object(properties, { description, ...options });
}

/** A list of mappings of the given keys. */
export function sections<S extends TSchema>(description: string, item: S, options: Options = {}) {
  return Type.Array(item, { description, default: [], must: 'must be a list', ...options });
}

/** A list of mappings the reader does not look into (their owner checks them). */
export function mappings(description: string) {
  return Type.Array(Type.Record(Type.String(), Type.Unknown()), { description, default: [], must: 'must be a list of mappings' });
}

/** A list of anything (its owner checks the items). */
export function list(description: string) {
  return Type.Array(Type.Unknown(), { description, default: [], must: 'must be a list' });
}

/** `true`, `false` or a mapping of `object`'s keys. */
export function flagOr<S extends TSchema>(object: S, description: string, options: Options = {}) {
  return Type.Union([Type.Boolean(), object], { description, ...options });
}

/**
 * `schema` read, then shaped by `decode` into what the program uses (a key renamed, a value derived). The file is
 * never written back from a configuration, so there is no encoding.
 */
export function shaped<S extends TSchema, U>(schema: S, decode: (value: StaticDecode<S>) => U): TTransform<S, U> {
  return Type.Transform(schema)
    .Decode(decode)
    .Encode(() => {
      throw new Error('a configuration is never written back to its file');
    });
}

// -------------------------------------------------------------------------------------------------------------------
// Reading.

export interface ReadContext {
  /** The name errors start with (`agent.yaml`). */
  file: string;
  env: NodeJS.ProcessEnv;
  /** The error thrown for a problem, given its one-line message. */
  error(message: string): Error;
}

type Node = TSchema & Extras & {
  type?: string;
  properties?: Record<string, Node>;
  items?: Node;
  anyOf?: Node[];
  const?: unknown;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
};

/** Reads a parsed document (a mapping) against `schema`; throws `ctx.error(…)` at the first problem. */
export function readDocument<S extends TSchema>(schema: S, document: Record<string, unknown>, ctx: ReadContext): StaticDecode<S> {
  return new Reader(ctx).value(schema as Node, document, '') as StaticDecode<S>;
}

/** $XDG_STATE_HOME, or its default ~/.local/state. */
export function xdgStateHome(env: NodeJS.ProcessEnv): string {
  return env.XDG_STATE_HOME?.trim() || path.join(os.homedir(), '.local', 'state');
}

const join = (at: string, key: string): string => (key.startsWith('[') || !at ? `${at}${key}` : `${at}.${key}`);
const isMapping = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isSection = (s: Node): boolean => s.type === 'object' && s.properties !== undefined;
const isOptional = (s: Node): boolean => (s as unknown as Record<symbol, unknown>)[OptionalKind] === 'Optional';
const isEnum = (s: Node): boolean => s.anyOf !== undefined && s.anyOf.every((m) => typeof m.const === 'string');

class Reader {
  constructor(private readonly ctx: ReadContext) {}

  fail(key: string, must: string, value: unknown): never {
    this.problem('', { key, must, got: value });
  }

  problem(at: string, p: Problem): never {
    const got = 'got' in p ? `, got ${p.got === undefined ? 'nothing' : JSON.stringify(p.got)}` : '';
    throw this.ctx.error(`${this.ctx.file}: ${join(at, p.key)} ${p.must}${got}`);
  }

  value(s: Node, v: unknown, at: string): unknown {
    const read = this.read(s, v, at);
    const transform = (s as unknown as Record<symbol, { Decode(v: unknown): unknown } | undefined>)[TransformKind];
    return transform ? transform.Decode(read) : read;
  }

  private read(s: Node, v: unknown, at: string): unknown {
    if (s.format === 'duration' || s.format === 'schedule') return this.timing(s.format, v, at);
    if (isEnum(s)) return this.word(s, v, at);
    if (s.anyOf) return this.flagOr(s, v, at);
    if (isSection(s)) return this.section(s, v, at);
    switch (s.type) {
      case 'object': // a mapping the reader does not look into
      case undefined: // anything
        return v;
      case 'array':
        return this.list(s, v, at);
      case 'boolean':
        if (typeof v !== 'boolean') this.fail(at, 'must be true or false', v);
        return v;
      case 'integer':
        return this.integer(s, v, at);
      case 'number':
        if (typeof v !== 'number' || !Number.isFinite(v) || v <= s.exclusiveMinimum!) this.fail(at, `must be a number > ${s.exclusiveMinimum}`, v);
        return v;
      case 'string':
        return this.string(s, v, at);
      default:
        throw new Error(`${at}: the reader has no rule for a schema of type ${s.type}`);
    }
  }

  private section(s: Node, v: unknown, at: string): Record<string, unknown> {
    if (!isMapping(v)) this.fail(at, 'must be a mapping', v);
    const allowed = [...Object.keys(s.properties!), ...Object.keys(s.accepted ?? {})];
    for (const key of Object.keys(v)) {
      if (!allowed.includes(key)) throw this.ctx.error(`${this.ctx.file}: unknown key ${join(at, key)} (allowed: ${allowed.join(', ')})`);
    }
    const out: Record<string, unknown> = {};
    for (const [key, p] of Object.entries(s.properties!)) {
      if (p.readWhen && !p.readWhen(out as never)) continue;
      const given = v[key];
      const where = join(at, key);
      // A key with nothing after it (`key:`) is unset, as if absent.
      if (given !== undefined && given !== null) out[key] = this.value(p, given, where);
      else if (p.default !== undefined) out[key] = this.value(p, this.defaultOf(p), where);
      else if (isSection(p) && !isOptional(p)) out[key] = this.value(p, {}, where);
      else if (!isOptional(p)) this.fail(where, 'is required', given);
    }
    this.rules(s, out, at);
    return out;
  }

  /** Defaults are read like values (paths resolved, durations parsed); a fresh copy each time. */
  private defaultOf(s: Node): unknown {
    const d = s.default;
    if (typeof d === 'string' && s.format === 'path' && d.startsWith('$XDG_STATE_HOME/')) {
      return path.join(xdgStateHome(this.ctx.env), d.slice('$XDG_STATE_HOME/'.length));
    }
    return structuredClone(d);
  }

  private rules(s: Node, v: unknown, at: string): void {
    const broken = s.rules?.(v as never);
    if (broken) this.problem(at, broken);
  }

  private list(s: Node, v: unknown, at: string): unknown[] {
    const must = s.must ?? 'must be a list';
    if (!Array.isArray(v)) this.fail(at, must, v);
    const item = s.items!;
    // Items that are mappings of known keys name themselves in errors (`sources[1].id`); other items are the
    // list's (`folders must be a list of non-empty strings`).
    if (!isSection(item)) {
      const fits = (x: unknown) => (item.type === 'string' ? typeof x === 'string' && x.trim() !== '' : item.type === 'object' ? typeof x === 'object' && x !== null : true);
      if (!v.every(fits)) this.fail(at, must, v);
    }
    const out = v.map((x, i) => this.value(item, x, isSection(item) ? `${at}[${i}]` : at));
    this.rules(s, out, at);
    return out;
  }

  private integer(s: Node, v: unknown, at: string): number {
    const max = s.maximum ?? Number.MAX_SAFE_INTEGER;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < s.minimum! || v > max) {
      this.fail(at, s.maximum === undefined ? `must be an integer >= ${s.minimum}` : `must be an integer between ${s.minimum} and ${s.maximum}`, v);
    }
    return v;
  }

  private string(s: Node, v: unknown, at: string): string {
    if (typeof v !== 'string' || (!s.blank && v.trim() === '')) this.fail(at, 'must be a non-empty string', v);
    const value = s.trim ? v.trim() : v;
    const bad = s.check?.(value as never);
    if (bad) this.fail(at, bad, value);
    return s.format === 'path' ? path.resolve(expandHome(value)) : value;
  }

  private word(s: Node, v: unknown, at: string): string {
    const values = s.anyOf!.map((m) => m.const as string);
    const word = typeof v === 'string' ? v.toLowerCase() : v;
    if (typeof word !== 'string' || !values.includes(word)) this.fail(at, `must be one of ${values.join(', ')}`, v);
    return word;
  }

  private flagOr(s: Node, v: unknown, at: string): unknown {
    if (typeof v === 'boolean') return v;
    if (!isMapping(v)) this.fail(at, s.must ?? 'must be true, false or a mapping', v);
    return this.value(s.anyOf!.find(isSection)!, v, at);
  }

  private timing(format: 'duration' | 'schedule', v: unknown, at: string): unknown {
    try {
      return format === 'duration' ? parseDuration(v, at) : parseSchedule(v, at);
    } catch (err) {
      if (err instanceof ScheduleError) throw this.ctx.error(`${this.ctx.file}: ${err.message}`);
      throw err;
    }
  }
}

// -------------------------------------------------------------------------------------------------------------------
// The docs table: one row per key, in the schema's order; `[]` marks the keys of a list's items.

/** The Markdown table of every key of `schema`. */
export function documentTable(schema: TSchema): string {
  const rows: string[] = [];
  const row = (key: string, s: Node | undefined, accepts: string, description = '') =>
    rows.push(`| \`${key}\` | ${s ? shownDefault(s) : '—'} | ${accepts} | ${description.replace(/\|/g, '\\|')} |`);
  const walk = (s: Node, at: string): void => {
    if (isSection(s)) {
      if (at) row(at, undefined, 'mapping', s.description);
      for (const [key, p] of Object.entries(s.properties!)) walk(p, join(at, key));
      for (const [key, why] of Object.entries(s.accepted ?? {})) row(join(at, key), undefined, 'accepted, not used', why);
    } else if (s.type === 'array' && isSection(s.items!)) {
      row(at, undefined, 'list of mappings', s.description);
      for (const [key, p] of Object.entries(s.items!.properties!)) walk(p, `${at}[].${key}`);
    } else if (s.anyOf && !isEnum(s)) {
      const object = s.anyOf.find(isSection)!;
      row(at, s, `\`true\` / \`false\` / mapping of ${Object.keys(object.properties!).join(', ')}`, s.description);
      for (const [key, p] of Object.entries(object.properties!)) walk(p, `${at}.${key}`);
    } else {
      row(at, s, accepts(s), s.description);
    }
  };
  walk(schema as Node, '');
  return ['| key | default | accepts | meaning |', '|---|---|---|---|', ...rows].join('\n');
}

function accepts(s: Node): string {
  if (s.format === 'duration') return 'duration (`30s`, `10m`, `1h`, `1d`)';
  if (s.format === 'schedule') return '`{every: 15m}` or `{cron: "0 * * * *"}`';
  if (isEnum(s)) return s.anyOf!.map((m) => `\`${m.const as string}\``).join(', ');
  switch (s.type) {
    case 'boolean':
      return '`true` / `false`';
    case 'integer':
      return s.maximum === undefined ? `integer >= ${s.minimum}` : `integer ${s.minimum}–${s.maximum}`;
    case 'number':
      return `number > ${s.exclusiveMinimum}`;
    case 'string':
      return s.format === 'path' ? 'path' : 'text';
    case 'array':
      return s.items!.format === 'path' ? 'list of paths' : s.items!.type === 'string' ? 'list of text' : s.items!.type === 'object' ? 'list of mappings' : 'list';
    default:
      return 'anything';
  }
}

function shownDefault(s: Node): string {
  if (s.defaultText !== undefined) return s.defaultText;
  const d = s.default;
  if (d === undefined || (Array.isArray(d) && d.length === 0)) return '—';
  return `\`${Array.isArray(d) ? `[${d.join(', ')}]` : String(d)}\``;
}
