/** The stored form of a declared MIME type (src/util/mime-type.ts, issue 47 item 1). */
import { describe, expect, it } from 'vitest';
import { normaliseMimeType, normaliseOptionalMimeType, OCTET_STREAM } from '../../src/util/mime-type.ts';

describe('normaliseMimeType', () => {
  it('refuses every type Chromium reads as SVG although it is not one', () => {
    for (const t of ['image/svg+xml x', 'image/svg+xml,', 'image/svg+xml ,', 'image/svg+xml(x)', 'image/svg+xml, text/html', 'image/svg+xml ;x', 'image/svg+xml; charset=utf-8 x']) {
      expect(normaliseMimeType(t), t).toBe(OCTET_STREAM);
    }
  });

  it('keeps a well-formed type as its lower-case type/subtype, parameters dropped', () => {
    expect(normaliseMimeType('image/png')).toBe('image/png');
    expect(normaliseMimeType('Image/PNG')).toBe('image/png');
    expect(normaliseMimeType('  image/jpeg  ')).toBe('image/jpeg');
    expect(normaliseMimeType('text/plain; charset=UTF-8')).toBe('text/plain');
    expect(normaliseMimeType('text/plain;charset="utf-8";format=flowed')).toBe('text/plain');
    expect(normaliseMimeType('application/octet-stream; name="a \\"b\\".pdf"')).toBe('application/octet-stream');
    expect(normaliseMimeType('text/plain;')).toBe('text/plain');
    expect(normaliseMimeType('application/vnd.openxmlformats-officedocument.wordprocessingml.document')).toBe(
      'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
    );
    // An SVG declared as one stays one (the UI never shows it; the server serves it as a download).
    expect(normaliseMimeType('image/svg+xml')).toBe('image/svg+xml');
  });

  it('turns what does not parse into application/octet-stream', () => {
    for (const t of ['', ' ', 'image', 'image/', '/png', 'image/png/x', 'image/ png', 'image/png\n', 'image/png\u0000', 'image/pn g', 'imagé/png', 'image/png; a', 'image/png; a="unterminated', 'text/plain; a=b c']) {
      expect(normaliseMimeType(t), JSON.stringify(t)).toBe(OCTET_STREAM);
    }
    expect(normaliseMimeType(42)).toBe(OCTET_STREAM);
    expect(normaliseMimeType(null)).toBe(OCTET_STREAM);
    expect(normaliseMimeType(`image/${'x'.repeat(128)}`)).toBe(OCTET_STREAM);
    expect(normaliseMimeType(`text/plain; a=${'b'.repeat(2000)}`)).toBe(OCTET_STREAM);
  });

  it('reads a long run of separators in one pass (no backtracking)', () => {
    const t = `a/b${'; ;'.repeat(300)}x`;
    expect(normaliseMimeType(t)).toBe(OCTET_STREAM);
    expect(normaliseMimeType(`a/b${'; ;'.repeat(300)}`)).toBe('a/b');
  });

  it('leaves an absent type absent', () => {
    expect(normaliseOptionalMimeType(undefined)).toBeNull();
    expect(normaliseOptionalMimeType(null)).toBeNull();
    expect(normaliseOptionalMimeType('')).toBeNull();
    expect(normaliseOptionalMimeType('image/svg+xml x')).toBe(OCTET_STREAM);
  });
});
