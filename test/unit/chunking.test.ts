import { describe, expect, it } from 'vitest';
import { CHUNK_SIZE, chunkText } from '../../src/catalog/chunking.ts';

describe('chunking', () => {
  it('keeps a short text as one chunk', () => {
    expect(chunkText('A short note.')).toEqual([{ text: 'A short note.', start: 0, end: 13 }]);
  });

  it('splits long text into overlapping chunks cut at whitespace, covering all of it', () => {
    const words = Array.from({ length: 900 }, (_, i) => `word${i}`);
    const text = words.join(' ');
    const chunks = chunkText(text);
    expect(chunks.length).toBeGreaterThan(4);
    for (const c of chunks) {
      expect(c.text.length).toBeLessThanOrEqual(CHUNK_SIZE);
      expect(text.slice(c.start, c.end)).toBe(c.text);
      // Cut at whitespace: no chunk starts or ends inside a word.
      expect(c.start === 0 || text[c.start - 1] === ' ').toBe(true);
      expect(c.end === text.length || text[c.end] === ' ').toBe(true);
    }
    for (let i = 1; i < chunks.length; i++) expect(chunks[i].start).toBeLessThan(chunks[i - 1].end);
    expect(chunks.at(-1)!.end).toBe(text.length);
    const seen = new Set(chunks.flatMap((c) => c.text.split(' ')));
    expect(words.every((w) => seen.has(w))).toBe(true);
  });

  it('returns nothing for blank text', () => {
    expect(chunkText('   \n  ')).toEqual([]);
  });
});
