/**
 * Snippets: matched words are marked by stem (the query's lexemes come from PostgreSQL), the best
 * fragments are chosen, and a text without a match still gives its start.
 */
import { describe, expect, it } from 'vitest';
import { makeSnippet } from '../../src/search/snippet.ts';

const LONG =
  'Quarterly budget review with the finance team. ' +
  Array.from({ length: 60 }, (_, i) => `filler${i}`).join(' ') +
  ' The runners were running late for the contract signing.';

describe('makeSnippet', () => {
  it('marks inflected forms of a lexeme, keeping the original spelling and case', () => {
    const s = makeSnippet('Budgets and BUDGET lines were budgeted.', ['budget']);
    expect(s).toBe('«Budgets» and «BUDGET» lines were «budgeted».');
  });

  it('splits words at apostrophes and hyphens as PostgreSQL does', () => {
    expect(makeSnippet("O'Reilly's e-mail", ['reilli', 'mail'])).toBe("O'«Reilly»'s e-«mail»");
  });

  it('picks fragments around distant matches, in text order, joined by an ellipsis', () => {
    const s = makeSnippet(LONG, ['budget', 'contract']);
    expect(s).toContain('«budget»');
    expect(s).toContain('«contract»');
    expect(s).toContain(' … ');
    expect(s.indexOf('«budget»')).toBeLessThan(s.indexOf('«contract»'));
    expect(s).not.toContain('filler30 ');
  });

  it('prefers the fragment holding more distinct query words', () => {
    const s = makeSnippet(LONG, ['run', 'contract'], { fragmentWords: 12, maxFragments: 1, maxChars: 4000 });
    expect(s).toContain('«running»');
    expect(s).toContain('runners'); // stem "runner", not the lexeme "run"
    expect(s).not.toContain('«runners»');
    expect(s).toContain('«contract»');
  });

  it('without a match returns the start of the text, unmarked', () => {
    const s = makeSnippet(LONG, ['zebra']);
    expect(s.startsWith('Quarterly budget review')).toBe(true);
    expect(s).not.toContain('«');
  });

  it('an empty or word-less text gives itself', () => {
    expect(makeSnippet('', ['a'])).toBe('');
    expect(makeSnippet(' … ', ['a'])).toBe('…');
  });
});
