import { describe, expect, it } from 'vitest';
import { normaliseText } from '../../src/util/hash.ts';

describe('normaliseText (every document text on its way into the catalog)', () => {
  it('removes NUL, turns unpaired surrogates into U+FFFD and CR/CRLF into LF, and trims', () => {
    // PostgreSQL text cannot hold NUL and its jsonb refuses an escaped unpaired surrogate: either one made a 500.
    expect(normaliseText('  a\uD800b\u0000c\r\nd\re\uDC00 ')).toBe('a\uFFFDbc\nd\ne\uFFFD');
    // A surrogate pair (an emoji) is kept.
    expect(normaliseText('ok \uD83D\uDE00')).toBe('ok 😀');
  });
});
