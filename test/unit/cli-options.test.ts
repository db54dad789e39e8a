// The one option parser of the memex verbs (src/cli/options.ts): the mistakes it refuses, and query words.
import { describe, expect, it } from 'vitest';
import { parseOptions } from '../../src/cli/options.ts';

const options = {
  limit: { kind: 'number', short: 'k', min: 1, max: 50, default: 10 },
  type: { kind: 'string' },
  json: { kind: 'boolean' },
  tag: { kind: 'list' },
} as const;

describe('parseOptions', () => {
  it('refuses an unknown option with the one-line error every verb prints', () => {
    expect(() => parseOptions(['--bogus'], options)).toThrow("Unknown option '--bogus'");
  });
  it('refuses an option without its value, and a number out of bounds', () => {
    expect(() => parseOptions(['--type'], options)).toThrow("Option '--type <value>' argument missing");
    expect(() => parseOptions(['-k', '0'], options)).toThrow('--limit must be an integer from 1 to 50, got "0"');
    expect(parseOptions(['-k', '7', '--tag', 'a', '--tag', 'b'], options).values).toMatchObject({ limit: 7, tag: ['a', 'b'], json: false });
    expect(parseOptions([], options).values.limit).toBe(10);
  });
  it('takes everything after -- as positionals', () => {
    expect(parseOptions(['--json', '--', '--bogus', '-k'], options, 'any')).toMatchObject({ args: ['--bogus', '-k'], values: { json: true } });
  });
  it('reads a negative word after a query as a word, not an option (issue 46)', () => {
    const p = parseOptions(['"device tree"', '-word', '-k', '3'], options, 'words');
    expect(p.args).toEqual(['"device tree"', '-word']);
    expect(p.values.limit).toBe(3);
    expect(() => parseOptions(['"device tree"', '-word'], options, 'any')).toThrow("Unknown option '-w'");
  });
});
