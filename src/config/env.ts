/**
 * The one reader of memex's environment variables. Each component declares its settings once, next to
 * the code that uses them (`defineSettings` in src/config/server.ts, src/search/config.ts, …): the
 * variable's name, kind, default, bounds, a one-line description and who reads it. The same declaration
 * parses the environment here and writes the reference table in docs/configuration.md
 * (`memex config --markdown`; test/config-docs.test.ts fails when the two drift apart).
 *
 * Parsing rules, the same for every variable: unset or blank is the default (so `FOO=` in a .env file
 * means "not set"); anything else must parse, or a ConfigError names the variable, what it must be and
 * the value it got (never the value of a secret). The CLI prints a ConfigError as one line
 * (`memex: configuration error: …`) and exits 1, never with a stack trace.
 */
import path from 'node:path';
import { codedError } from '../util/errors.ts';

export class ConfigError extends codedError('CONFIG.INVALID') {
  override name = 'ConfigError';
}

export type SettingKind = 'int' | 'number' | 'bool' | 'string' | 'enum' | 'list' | 'path' | 'size' | 'url';

export interface Setting<T> {
  /** The environment variable; filled in by defineSettings from the declaration's key. */
  name: string;
  kind: SettingKind;
  /** What the code gets when the variable is unset or blank. */
  default: T;
  /** How the docs show the default when the code computes it from other settings (`DATA_DIR/objects`). */
  defaultText?: string;
  description: string;
  /** The component that reads it (the group's, set by defineSettings). */
  component: string;
  /** Never echoed in errors, masked by `memex config`. */
  secret?: boolean;
  /** Taken exactly as set, spaces included; only an absent variable is unset (prefixes such as "query: "). */
  keepRaw?: boolean;
  min?: number;
  max?: number;
  values?: readonly string[];
  /** Turns the trimmed, non-empty text into the value; throws ConfigError naming the variable. */
  parse(raw: string): T;
}

/** What a declaration says besides its default; name and component come from the group. */
type Spec = Omit<Setting<unknown>, 'name' | 'component' | 'kind' | 'parse' | 'default' | 'values'>;
type Bounds = { min: number; max: number };

export interface SettingsGroup {
  component: string;
  /** Heading of the group in docs/configuration.md. */
  title: string;
  settings: Setting<unknown>[];
}

/** The error every setting throws: `NAME must <expected>, got "<value>"` (value left out for secrets). */
export function invalid(s: Pick<Setting<unknown>, 'name' | 'secret'>, expected: string, raw: string): ConfigError {
  return new ConfigError(`${s.name} must ${expected}${s.secret ? '' : `, got "${raw}"`}`);
}

function make<T>(kind: SettingKind, spec: Spec & { default: T; values?: readonly string[] }, parse: (this: Setting<T>, raw: string) => T): Setting<T> {
  const s: Setting<T> = { name: '', component: '', kind, ...spec, parse: (raw) => parse.call(s, raw) };
  return s;
}

/** A whole number within bounds (digits only: "1e3" and "-1" are refused). */
export function int(spec: Spec & Bounds & { default: number }): Setting<number>;
export function int(spec: Spec & Bounds & { default?: undefined }): Setting<number | undefined>;
export function int(spec: Spec & Bounds & { default?: number }): Setting<number | undefined> {
  return make('int', { ...spec, default: spec.default },  function (raw) {
    if (!/^\d+$/.test(raw)) throw invalid(this, 'be an integer', raw);
    return inRange(this, Number(raw));
  });
}

/** Any finite number within bounds (decimals allowed: "0.02", "1.5"). */
export function number(spec: Spec & { default: number; min: number; max?: number }): Setting<number> {
  return make('number', spec, function (raw) {
    const n = Number(raw);
    if (!Number.isFinite(n) || n < this.min! || n > (this.max ?? Infinity)) {
      throw invalid(this, this.max === undefined ? `be a number >= ${this.min}` : `be a number between ${this.min} and ${this.max}`, raw);
    }
    return n;
  });
}

function inRange(s: Setting<unknown>, n: number): number {
  if (n < s.min! || n > s.max!) throw new ConfigError(`${s.name} must be between ${s.min} and ${s.max}, got ${n}`);
  return n;
}

const TRUE = ['1', 'true', 'yes', 'on'];
const FALSE = ['0', 'false', 'no', 'off'];

export function bool(spec: Spec & { default: boolean }): Setting<boolean>;
export function bool(spec: Spec & { default?: undefined }): Setting<boolean | undefined>;
export function bool(spec: Spec & { default?: boolean }): Setting<boolean | undefined> {
  return make('bool', { ...spec, default: spec.default }, function (raw) {
    const v = raw.toLowerCase();
    if (TRUE.includes(v)) return true;
    if (FALSE.includes(v)) return false;
    throw invalid(this, 'be true or false', raw);
  });
}

/** One of a few words, compared lower-cased; `aliases` are older spellings accepted for a value. */
export function oneOf<V extends string>(values: readonly V[], spec: Spec & { default: NoInfer<V>; aliases?: Record<string, NoInfer<V>> }): Setting<V>;
export function oneOf<V extends string>(values: readonly V[], spec: Spec & { default?: undefined; aliases?: Record<string, NoInfer<V>> }): Setting<V | undefined>;
export function oneOf<V extends string>(values: readonly V[], spec: Spec & { default?: V; aliases?: Record<string, V> }): Setting<V | undefined> {
  const { aliases, ...rest } = spec;
  return make('enum', { ...rest, default: rest.default, values }, function (raw) {
    const v = raw.toLowerCase();
    if ((values as readonly string[]).includes(v)) return v as V;
    if (aliases?.[v]) return aliases[v];
    const expected = values.length === 2 ? `be ${values[0]} or ${values[1]}` : `be one of ${values.join(', ')}`;
    throw invalid(this, expected, raw);
  });
}

/** Free text; `pattern` and `expected` check its shape. */
export function string(spec: Spec & StringOpts & { default: string }): Setting<string>;
export function string(spec: Spec & StringOpts & { default?: undefined }): Setting<string | undefined>;
export function string(spec: Spec & StringOpts & { default?: string }): Setting<string | undefined> {
  const { pattern, expected, ...rest } = spec;
  return make('string', { ...rest, default: rest.default }, function (raw) {
    if (pattern && !pattern.test(raw)) throw invalid(this, expected ?? `match ${pattern}`, raw);
    return raw;
  });
}
type StringOpts = { pattern?: RegExp; expected?: string };

/** Items separated by `separator` (default a comma), each trimmed, empty ones dropped. */
export function list(spec: Spec & { default: string[]; separator?: string; lowerCase?: boolean }): Setting<string[]> {
  const { separator = ',', lowerCase = false, ...rest } = spec;
  return make('list', rest, (raw) =>
    raw
      .split(separator)
      .map((item) => (lowerCase ? item.trim().toLowerCase() : item.trim()))
      .filter(Boolean),
  );
}

/** A file or folder, resolved against the working directory. */
export function filePath(spec: Spec & { default: string }): Setting<string>;
export function filePath(spec: Spec & { default?: undefined }): Setting<string | undefined>;
export function filePath(spec: Spec & { default?: string }): Setting<string | undefined> {
  const s = make('path', { ...spec, default: spec.default }, (raw) => path.resolve(raw));
  if (s.default !== undefined) s.default = path.resolve(s.default);
  if (spec.default !== undefined) s.defaultText ??= `\`${spec.default}\``;
  return s;
}

/** Bytes, written "10mb", "512kb" or "1048576" (at least 1kb). */
export function size(spec: Spec & { default: string }): Setting<number>;
export function size(spec: Spec & { default?: undefined }): Setting<number | undefined>;
export function size(spec: Spec & { default?: string }): Setting<number | undefined> {
  const defaultText = spec.defaultText ?? (spec.default === undefined ? undefined : `\`${spec.default}\``);
  const s = make<number | undefined>('size', { ...spec, default: undefined, defaultText }, function (raw) {
    return parseByteSize(raw, this.name);
  });
  if (spec.default !== undefined) s.default = parseByteSize(spec.default, 'default');
  return s;
}

/** An http(s) URL; trailing slashes are dropped so paths can be appended. */
export function url(spec: Spec & { default: string; expected?: string }): Setting<string>;
export function url(spec: Spec & { default?: undefined; expected?: string }): Setting<string | undefined>;
export function url(spec: Spec & { default?: string; expected?: string }): Setting<string | undefined> {
  const { expected = 'be an http(s) URL', ...rest } = spec;
  return make('url', { ...rest, default: rest.default }, function (raw) {
    let u: URL;
    try {
      u = new URL(raw);
    } catch {
      throw invalid(this, expected, raw);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid(this, expected, raw);
    return raw.replace(/\/+$/, '');
  });
}

/** Parses "10mb", "512kb", "1048576" into bytes. */
export function parseByteSize(raw: string, key: string): number {
  const m = /^(\d+)\s*(b|kb|k|mb|m|gb|g)?$/i.exec(raw.trim());
  if (!m) throw new ConfigError(`${key} must be a size like 10mb or 1048576, got "${raw}"`);
  const n = Number(m[1]);
  const unit = (m[2] ?? 'b').toLowerCase();
  const mult = unit.startsWith('k') ? 1024 : unit.startsWith('m') ? 1024 ** 2 : unit.startsWith('g') ? 1024 ** 3 : 1;
  const bytes = n * mult;
  if (bytes < 1024) throw new ConfigError(`${key} must be at least 1kb, got "${raw}"`);
  return bytes;
}

/**
 * Names a component's settings after their keys and registers them for the docs. The keys are the
 * variables' names, so a reader writes `read(env, S.PORT)` and a search for `PORT` finds both.
 */
export function defineSettings<S extends Record<string, Setting<any>>>(component: string, title: string, settings: S): S & { group: SettingsGroup } {
  for (const [name, s] of Object.entries(settings)) {
    s.name = name;
    s.component = component;
  }
  return { ...settings, group: { component, title, settings: Object.values(settings) } };
}

/** The value of one setting in `env`: its default when unset or blank, else the parsed text. */
export function read<T>(env: NodeJS.ProcessEnv, setting: Setting<T>): T {
  const value = env[setting.name];
  if (setting.keepRaw) return value === undefined ? setting.default : (value as T);
  if (value === undefined || value.trim() === '') return setting.default;
  return setting.parse(value.trim());
}

/** Whether the variable is set to something (not blank): for defaults that depend on another setting. */
export function isSet(env: NodeJS.ProcessEnv, setting: Setting<unknown>): boolean {
  return (env[setting.name]?.trim() ?? '') !== '';
}

/** What a value of the setting looks like, for the docs' "accepts" column. */
export function accepts(s: Setting<unknown>): string {
  const range = s.max === undefined ? `>= ${s.min}` : `${s.min}–${s.max}`;
  switch (s.kind) {
    case 'int':
      return `integer ${range}`;
    case 'number':
      return `number ${range}`;
    case 'bool':
      return '`true` / `false`';
    case 'enum':
      return s.values!.map((v) => `\`${v}\``).join(', ');
    case 'list':
      return 'list';
    case 'path':
      return 'path';
    case 'size':
      return 'size (`512kb`, `10mb`, bytes)';
    case 'url':
      return 'http(s) URL';
    case 'string':
      return s.secret ? 'secret' : 'text';
  }
}

function shownDefault(s: Setting<unknown>): string {
  if (s.defaultText !== undefined) return s.defaultText;
  const d = s.default;
  if (d === undefined || d === '' || (Array.isArray(d) && d.length === 0)) return '—';
  return `\`${Array.isArray(d) ? d.join(',') : String(d)}\``;
}

/** The Markdown table of some groups' settings, as docs/*.md carry it between `<!-- settings: … -->` markers. */
export function settingsTable(groups: SettingsGroup[]): string {
  const rows = groups.flatMap((g) => g.settings.map((s) => `| \`${s.name}\` | ${shownDefault(s)} | ${accepts(s)} | ${s.description} |`));
  return ['| variable | default | accepts | meaning |', '|---|---|---|---|', ...rows].join('\n');
}
