/**
 * RowCache (src/search/row-cache.ts): a cached row is never older than the change log the index
 * has applied. The race it exists for: a row read before a change, handed back after the change
 * was applied, must not be kept (the next search would show the old title or name).
 */
import { describe, expect, it } from 'vitest';
import { RowCache } from '../../src/search/row-cache.ts';

describe('RowCache', () => {
  it('keeps what it read and answers from memory after that', () => {
    const c = new RowCache<string>(10);
    const first = c.lookup(['a', 'b']);
    expect(first.missing).toEqual(['a', 'b']);
    c.fill(first, new Map([['a', 'A'], ['b', 'B']]));
    const second = c.lookup(['b', 'a', 'b']);
    expect(second.missing).toEqual([]);
    expect(second.found).toEqual(new Map([['b', 'B'], ['a', 'A']]));
  });

  it('drops rows the change log names', () => {
    const c = new RowCache<string>(10);
    c.fill(c.lookup(['a', 'b']), new Map([['a', 'A'], ['b', 'B']]));
    c.invalidate(['a']);
    expect(c.lookup(['a', 'b']).missing).toEqual(['a']);
  });

  it('does not keep a row read before a change that was applied while the read was in flight', () => {
    const c = new RowCache<string>(10);
    const read = c.lookup(['a', 'b']);
    c.invalidate(['a']); // the change is applied before the (older) read comes back
    c.fill(read, new Map([['a', 'old A'], ['b', 'B']]));
    expect(c.lookup(['a']).missing).toEqual(['a']);
    expect(c.lookup(['b']).found.get('b')).toBe('B');
  });

  it('keeps a row read after the change, even while an older read of it is still in flight', () => {
    const c = new RowCache<string>(10);
    const older = c.lookup(['a']);
    c.invalidate(['a']);
    const newer = c.lookup(['a']);
    c.fill(newer, new Map([['a', 'new A']]));
    c.fill(older, new Map([['a', 'old A']]));
    expect(c.lookup(['a']).found.get('a')).toBe('new A');
  });

  it('clear() also refuses reads in flight; a failed read (nothing returned) stores nothing', () => {
    const c = new RowCache<string>(10);
    const read = c.lookup(['a']);
    c.clear();
    c.fill(read, new Map([['a', 'A']]));
    expect(c.size).toBe(0);
    c.fill(c.lookup(['z']), new Map());
    expect(c.lookup(['z']).missing).toEqual(['z']);
  });

  it('holds at most its capacity, least recently used out first; capacity 0 holds nothing', () => {
    const c = new RowCache<number>(2);
    c.fill(c.lookup(['a', 'b']), new Map([['a', 1], ['b', 2]]));
    c.lookup(['a']); // a is now the most recent
    c.fill(c.lookup(['c']), new Map([['c', 3]]));
    expect(c.lookup(['a', 'b', 'c']).missing).toEqual(['b']);
    const none = new RowCache<number>(0);
    none.fill(none.lookup(['a']), new Map([['a', 1]]));
    expect(none.size).toBe(0);
  });
});
