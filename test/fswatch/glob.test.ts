import { describe, expect, it } from 'vitest';
import { checkGlob, globMatches } from '../../src/agent/collectors/fswatch/glob.ts';
import { ignoredName } from '../../src/agent/collectors/fswatch/manager.ts';
import { isUnder } from '../../src/agent/collectors/fswatch/paths.ts';

describe('watch glob filters', () => {
  it.each([
    ['*.md', 'a.md', true],
    ['*.md', 'deep/er/a.md', true], // basename match, as the localfs collector
    ['*.md', 'a.markdown', false],
    ['notes/**/*.md', 'notes/a.md', true],
    ['notes/**/*.md', 'notes/x/y/a.md', true],
    ['notes/**/*.md', 'other/a.md', false],
    ['*.{md,txt}', 'q/a.txt', true],
    ['*.{md,txt}', 'q/a.pdf', false],
    ['*', 'a/b/c.bin', true],
    ['file?.txt', 'file1.txt', true],
    ['file?.txt', 'file10.txt', false],
    ['[!a]*.txt', 'b.txt', true],
    ['[!a]*.txt', 'a.txt', false],
    ['docs/**', 'docs/a/b.pdf', true],
    ['a.b', 'axb', false], // dots are literal
  ])('%s vs %s -> %s', (glob, rel, expected) => {
    expect(globMatches(glob, rel)).toBe(expected);
  });

  it('rejects globs that cannot be relative filters', () => {
    expect(checkGlob('/etc/*')).toMatch(/relative/);
    expect(checkGlob('')).toBeTruthy();
    expect(checkGlob(3)).toBeTruthy();
    expect(checkGlob('*.md')).toBeNull();
  });

  it('ignores hidden, backup and temp names; isUnder never lets ../ through', () => {
    for (const n of ['.DS_Store', '.git', '~$report.docx', 'notes.md~', 'x.tmp', 'a.swp', 'b.part']) expect(ignoredName(n)).toBe(true);
    for (const n of ['notes.md', 'report.pdf', 'tmp.txt']) expect(ignoredName(n)).toBe(false);
    expect(isUnder('/a/b/c', '/a/b')).toBe(true);
    expect(isUnder('/a/b', '/a/b')).toBe(true);
    expect(isUnder('/a/bc', '/a/b')).toBe(false);
    expect(isUnder('/a', '/a/b')).toBe(false);
  });
});
