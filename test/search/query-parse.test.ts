/**
 * The query parser alone: what a typed query becomes (words, phrases, exclusions, OR groups,
 * operators, the word open to prefix matching). It never throws, whatever the text.
 */
import { describe, expect, it } from 'vitest';
import { dateInterval, parseQuery } from '../../src/search/query-parse.ts';

describe('parseQuery', () => {
  it('words, a phrase, exclusions and OR', () => {
    const p = parseQuery('kernel "null pointer" -oops -"stack trace" NOT ext4 crash OR panic');
    expect(p.groups).toEqual([
      [{ kind: 'word', text: 'kernel' }],
      [{ kind: 'phrase', text: 'null pointer' }],
      [{ kind: 'word', text: 'crash' }, { kind: 'word', text: 'panic' }],
    ]);
    expect(p.excluded).toEqual([
      { kind: 'word', text: 'oops' },
      { kind: 'phrase', text: 'stack trace' },
      { kind: 'word', text: 'ext4' },
    ]);
    expect(p.text).toBe('kernel null pointer crash panic');
    expect(p.prefix).toBe('panic');
  });

  it('operators, with quoted values; unknown names and unusable values stay words', () => {
    const p = parseQuery('from:alice to:"Bob Builder" with:+14155550100 subject:"q3 budget" type:email has:attachment ' +
      'in:thread/0b7c6f1e-8d4a-4c1e-9f00-1234567890ab before:2026-10 after:2026-09-15 on:2026 foo:bar has:pdf before:yesterday');
    expect(p.groups.map((g) => g[0])).toEqual([
      { kind: 'field', field: 'from', value: 'alice', phrase: false },
      { kind: 'field', field: 'to', value: 'Bob Builder', phrase: true },
      { kind: 'field', field: 'with', value: '+14155550100', phrase: false },
      { kind: 'field', field: 'subject', value: 'q3 budget', phrase: true },
      { kind: 'type', value: 'email' },
      { kind: 'attachment' },
      { kind: 'thread', id: '0b7c6f1e-8d4a-4c1e-9f00-1234567890ab' },
      { kind: 'date', op: 'before', start: '2026-10-01T00:00:00.000Z', end: '2026-11-01T00:00:00.000Z' },
      { kind: 'date', op: 'after', start: '2026-09-15T00:00:00.000Z', end: '2026-09-16T00:00:00.000Z' },
      { kind: 'date', op: 'on', start: '2026-01-01T00:00:00.000Z', end: '2027-01-01T00:00:00.000Z' },
      { kind: 'word', text: 'foo:bar' },
      { kind: 'word', text: 'has:pdf' },
      { kind: 'word', text: 'before:yesterday' },
    ]);
    expect(p.prefix).toBe('before:yesterday');
  });

  it('an unbalanced quote is closed at the end; a trailing space or punctuation ends the last word', () => {
    expect(parseQuery('"kernel panic').groups).toEqual([[{ kind: 'phrase', text: 'kernel panic' }]]);
    expect(parseQuery('kernel panic ').prefix).toBeNull();
    expect(parseQuery('what was the budget?').prefix).toBeNull();
    expect(parseQuery('"kernel panic"').prefix).toBeNull();
    expect(parseQuery('kitche').prefix).toBe('kitche');
  });

  it('never throws, whatever the text', () => {
    const odd = ['', '"', '-', '--', '-"', 'OR', 'OR OR', 'NOT', '" OR "', 'from:', 'from: x', '(((', ')', 'in:thread/x', 'on:2026-13', 'on:2026-02-30', ':', 'a:"', '\u0000'];
    for (const q of odd) expect(() => parseQuery(q), q).not.toThrow();
    const rnd = ((s) => () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32))(5);
    const alphabet = ['"', '-', ' ', 'a', 'OR', 'NOT', 'from:', 'on:', '2026-10', '(', ')', ':', 'é', '\t'];
    for (let i = 0; i < 2000; i++) {
      const q = Array.from({ length: 1 + Math.floor(rnd() * 12) }, () => alphabet[Math.floor(rnd() * alphabet.length)]).join('');
      expect(() => parseQuery(q), q).not.toThrow();
    }
  });

  it('dates: days, months, years, date-times; impossible dates are no dates', () => {
    expect(dateInterval('2026-10')).toEqual({ start: '2026-10-01T00:00:00.000Z', end: '2026-11-01T00:00:00.000Z' });
    expect(dateInterval('2026-12')).toEqual({ start: '2026-12-01T00:00:00.000Z', end: '2027-01-01T00:00:00.000Z' });
    expect(dateInterval('2026-02-30')).toBeNull();
    expect(dateInterval('2026-13')).toBeNull();
    expect(dateInterval('2026-10-05T10:00:00Z')).toEqual({ start: '2026-10-05T10:00:00.000Z', end: '2026-10-05T10:00:01.000Z' });
  });
});
