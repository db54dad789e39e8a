/** What of a chunk is worth a vector (src/embedding/meaning.ts). */
import { describe, expect, it } from 'vitest';
import { hasQuotedLines, meaningfulText } from '../../src/embedding/meaning.ts';

describe('meaningfulText', () => {
  it('drops the quote of a stored message and its attribution, keeps the reply', () => {
    const text = 'Sounds good, see you at ten.\n\nOn Tue, 4 Mar 2026 at 09:12, Ann Lee <ann@example.com> wrote:\n> Shall we meet at ten?\n> Ann';
    expect(meaningfulText(text, { quotesStored: true })).toBe('Sounds good, see you at ten.');
    expect(meaningfulText(text, { quotesStored: false })).toBe(text);
    expect(hasQuotedLines(text)).toBe(true);
    expect(hasQuotedLines('No quote > here')).toBe(false);
  });

  it('a chunk that is all quote of a stored message has nothing worth a vector', () => {
    expect(meaningfulText('> Shall we meet at ten?\n>\n> Ann', { quotesStored: true })).toBe('');
  });

  it('cuts the signature at "-- " (not at a bare "--" divider) and drops "Sent from my …" lines', () => {
    expect(meaningfulText('Invoice paid.\n-- \nBob Stone\nCFO', { quotesStored: false })).toBe('Invoice paid.');
    expect(meaningfulText('Part one\n--\nPart two', { quotesStored: false })).toBe('Part one\n--\nPart two');
    expect(meaningfulText('On my way.\nSent from my iPhone', { quotesStored: false })).toBe('On my way.');
  });

  it('drops ASCII-armoured blocks and base64 runs, keeps long words, paths and hashes in lower case', () => {
    const pgp = 'Signed note.\n-----BEGIN PGP SIGNATURE-----\niQEzBAEBCAAdFiEEk1Xq9Zb2o7Lr4ZrQ0x1mB5tU8Zk\n=Ab12\n-----END PGP SIGNATURE-----';
    expect(meaningfulText(pgp, { quotesStored: false })).toBe('Signed note.');
    const b64 = `Scan follows: ${'QUJDREVGR0hJSktMTU5PUFFSU1RVVldYWVo0MjEy'.repeat(3)}MzQ= end`;
    expect(meaningfulText(b64, { quotesStored: false })).toBe('Scan follows:   end');
    const kept = 'commit 3f9a1c0e5b7d2a4c6e8f0b1d3a5c7e9f1b3d5a7c fixes /usr/local/share/applications/memex.desktop';
    expect(meaningfulText(kept, { quotesStored: false })).toBe(kept);
  });

  it('keeps short texts that are words; only no word at all means no vector', () => {
    expect(meaningfulText('ok', { quotesStored: false })).toBe('ok');
    expect(meaningfulText('12:30', { quotesStored: false })).toBe('12:30');
    expect(meaningfulText('!!! ???', { quotesStored: false })).toBe('');
  });
});
