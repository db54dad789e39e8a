/**
 * The environment reader (src/config/env.ts) and the documentation written from the same declarations:
 * every `<!-- settings: … -->` table in docs/ must be what scripts/config-docs.ts writes, and every variable
 * src/ reads or docs/ name must be declared.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, bool, defineSettings, int, list, read, string } from '../src/config/env.ts';
import { ALL_SETTINGS, renderSettingsBlocks, settingErrors } from '../src/cli/settings.ts';

const root = path.join(import.meta.dirname, '..');
const declared = ALL_SETTINGS.flatMap((g) => g.settings);
const names = new Set(declared.map((s) => s.name));

describe('reading a setting', () => {
  const S = defineSettings('test', 'Test', {
    T_INT: int({ default: 5, min: 1, max: 9, description: 'n' }),
    T_FLAG: bool({ default: false, description: 'f' }),
    T_TOKEN: string({ secret: true, pattern: /^x/, expected: 'start with x', description: 't' }),
    T_PREFIX: string({ default: '', keepRaw: true, description: 'p' }),
    T_LIST: list({ default: ['a'], lowerCase: true, description: 'l' }),
  });

  it('unset or blank is the default; values are trimmed', () => {
    expect(read({}, S.T_INT)).toBe(5);
    expect(read({ T_INT: '  ' }, S.T_INT)).toBe(5);
    expect(read({ T_INT: ' 7 ' }, S.T_INT)).toBe(7);
    expect(read({ T_FLAG: 'ON' }, S.T_FLAG)).toBe(true);
    expect(read({ T_LIST: ' B, ,C ' }, S.T_LIST)).toEqual(['b', 'c']);
    expect(read({}, S.T_LIST)).toEqual(['a']);
  });

  it('keepRaw takes the value as set, spaces included', () => {
    expect(read({ T_PREFIX: 'query: ' }, S.T_PREFIX)).toBe('query: ');
  });

  it('a bad value is a one-line ConfigError naming the variable, what it must be and the value', () => {
    expect(() => read({ T_INT: 'five' }, S.T_INT)).toThrow(new ConfigError('T_INT must be an integer, got "five"'));
    expect(() => read({ T_INT: '10' }, S.T_INT)).toThrow(new ConfigError('T_INT must be between 1 and 9, got 10'));
    expect(() => read({ T_FLAG: 'maybe' }, S.T_FLAG)).toThrow(new ConfigError('T_FLAG must be true or false, got "maybe"'));
  });

  it('never repeats a secret', () => {
    expect(() => read({ T_TOKEN: 'hunter2' }, S.T_TOKEN)).toThrow(new ConfigError('T_TOKEN must start with x'));
  });

  it('settingErrors lists every bad variable at once', () => {
    expect(settingErrors({ PORT: 'eighty', SEARCH_BOOSTS: 'maybe' })).toEqual([
      'PORT must be an integer, got "eighty"',
      'SEARCH_BOOSTS must be true or false, got "maybe"',
    ]);
    expect(settingErrors({})).toEqual([]);
  });
});

describe('the declarations', () => {
  it('declare each variable once, with a description and a default within its bounds', () => {
    expect(names.size).toBe(declared.length);
    for (const s of declared) {
      expect(s.description, s.name).not.toBe('');
      if (typeof s.default === 'number') {
        expect(s.default, s.name).toBeGreaterThanOrEqual(s.min ?? -Infinity);
        expect(s.default, s.name).toBeLessThanOrEqual(s.max ?? Infinity);
      }
      if (s.values && s.default !== undefined) expect(s.values, s.name).toContain(s.default);
    }
  });

  it('cover every variable src/ reads', () => {
    // Operating-system conventions, not memex settings.
    const os = new Set(['HOME', 'XDG_CONFIG_HOME', 'XDG_STATE_HOME', 'TZ']);
    const read = new Set<string>();
    const walk = (dir: string) => {
      for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
        const p = path.join(dir, e.name);
        if (e.isDirectory()) walk(p);
        else if (e.name.endsWith('.ts')) {
          for (const m of fs.readFileSync(p, 'utf8').matchAll(/\benv\.([A-Z][A-Z0-9_]+)\b|\benv\[['"]([A-Z][A-Z0-9_]+)['"]\]/g)) read.add(m[1] ?? m[2]);
        }
      }
    };
    walk(path.join(root, 'src'));
    expect([...read].filter((n) => !names.has(n) && !os.has(n))).toEqual([]);
  });
});

describe('docs written from the declarations', () => {
  const docs = fs.readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md'));

  it('every settings table is what scripts/config-docs.ts writes', () => {
    for (const name of docs) {
      const page = fs.readFileSync(path.join(root, 'docs', name), 'utf8');
      expect(page, `docs/${name} differs from the declarations: run node --import tsx scripts/config-docs.ts`).toBe(renderSettingsBlocks(page));
    }
  });

  it('docs/configuration.md lists every setting', () => {
    expect(fs.readFileSync(path.join(root, 'docs', 'configuration.md'), 'utf8')).toContain('<!-- settings: all -->');
  });

  it('docs name no variable of a memex family that is not declared', () => {
    // SEARCH_TOKEN is the spec's, for a search service memex does not have (docs/configuration.md says so).
    const family = /`((?:SEARCH|EMBEDDING|EXTRACT|OCR|S3|EGRESS|RELATIONSHIPS?|LLM|SVC|GC|MCP|OBJECT_STORE|FILE)_[A-Z0-9_]+)/g;
    const unknown = new Set<string>();
    for (const name of [...docs.map((d) => path.join('docs', d)), 'README.md']) {
      for (const m of fs.readFileSync(path.join(root, name), 'utf8').matchAll(family)) {
        if (!names.has(m[1]) && m[1] !== 'SEARCH_TOKEN') unknown.add(`${name}: ${m[1]}`);
      }
    }
    expect([...unknown]).toEqual([]);
  });
});

describe('memex config', () => {
  it('shows set values (secrets masked) and defaults, and exits 1 listing every problem', async () => {
    const { runConfigCommand } = await import('../src/cli/settings.ts');
    let text = '';
    const code = runConfigCommand([], { AUTH_TOKEN: 'hunter2', PORT: '9000', SEARCH_BOOSTS: 'maybe' }, (s) => (text += s));
    expect(code).toBe(1);
    expect(text).toMatch(/^ {2}PORT +"9000"$/m);
    expect(text).toMatch(/^ {2}AUTH_TOKEN +\*{8}$/m);
    expect(text).not.toContain('hunter2');
    expect(text).toMatch(/^ {2}LOG_LEVEL +\(default: info\)$/m);
    expect(text).toContain('error: SEARCH_BOOSTS must be true or false, got "maybe"');
    expect(runConfigCommand([], {}, () => {})).toBe(0);
  });
});
