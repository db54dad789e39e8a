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
  it("a phrase's words are marked where the phrase is, not where a word of it stands alone", () => {
    const text = 'The tree in the garden fell. Update the device tree bindings. A device was lost.';
    const phrases = { phrases: [[{ lexeme: 'devic', at: 0 }, { lexeme: 'tree', at: 1 }]], free: new Set<string>() };
    expect(makeSnippet(text, ['devic', 'tree'], undefined, phrases)).toBe('The tree in the garden fell. Update the «device» «tree» bindings. A device was lost.');
    // A word the query also holds on its own stays marked everywhere.
    const withTree = { ...phrases, free: new Set(['tree']) };
    expect(makeSnippet(text, ['devic', 'tree'], undefined, withTree)).toBe('The «tree» in the garden fell. Update the «device» «tree» bindings. A device was lost.');
    // A stop word inside the phrase keeps its place.
    const gap = { phrases: [[{ lexeme: 'declar', at: 0 }, { lexeme: 'function', at: 2 }]], free: new Set<string>() };
    expect(makeSnippet('a function: implicit declaration of function foo', ['declar', 'function'], undefined, gap)).toBe(
      'a function: implicit «declaration» of «function» foo',
    );
    // Not found in this passage: the words stay marked.
    expect(makeSnippet('the tree and a device', ['devic', 'tree'], undefined, phrases)).toBe('the «tree» and a «device»');
  });

  it('marks inflected forms of a lexeme, keeping the original spelling and case', () => {
    const s = makeSnippet('Budgets and BUDGET lines were budgeted.', ['budget']);
    expect(s).toBe('«Budgets» and «BUDGET» lines were «budgeted».');
  });

  it('a reply\'s own words before what it quotes, among fragments as good', () => {
    const text = `On Mon, Ann wrote:\n> Is the budget ready? The budget review is Friday.\n${'> filler line here\n'.repeat(10)}\nYes, the budget is ready.`;
    const s = makeSnippet(text, ['budget'], { fragmentWords: 6, maxFragments: 1, maxChars: 4000 });
    expect(s).toContain('the «budget» is ready');
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
