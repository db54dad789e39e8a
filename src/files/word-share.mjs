// How much of a text is words: tells a PDF text layer that is text from one that is glyph codes.
// Plain JavaScript because the PDF worker (pdf-worker.mjs) runs it; types in word-share.d.mts.

/** Below this share of word-like text, a PDF's text layer is taken as unreadable. */
export const UNREADABLE_BELOW = 0.5;

/**
 * Share (0..1) of the non-space characters of `text` that belong to word-like tokens: letters of one case
 * pattern (lower, Upper-then-lower, or ALL CAPS; in Latin script with a fifth of them vowels) possibly
 * joined by an apostrophe or hyphen, numbers, or
 * runs of CJK/other caseless letters, with punctuation around them. Text from fonts without a Unicode map
 * mixes digits, letters and case inside tokens ("3HQČåQt", "SURVWĜHGN=") and scores low.
 * @param {string} text
 */
function latinVowels(core) {
  // Words in Latin script carry vowels; glyph codes shifted into letters mostly do not ("DQG" for "and").
  if (!/^[\p{Script=Latin}'’-]+$/u.test(core)) return true;
  const letters = core.normalize('NFD').replace(/[^A-Za-z]/g, '');
  if (letters.length < 2) return true;
  const vowels = letters.replace(/[^aeiouyAEIOUY]/g, '').length;
  return vowels > 0 && (letters.length < 4 || vowels / letters.length >= 0.2);
}

export function wordShare(text) {
  let word = 0;
  let total = 0;
  for (const token of text.split(/\s+/)) {
    if (!token) continue;
    total += token.length;
    const core = token.replace(/^[\p{P}\p{S}]+|[\p{P}\p{S}]+$/gu, '');
    if (!core) continue;
    const cased = /^(\p{Ll}+|\p{Lu}\p{Ll}*|\p{Lu}+)(['’-](\p{Ll}+|\p{Lu}\p{Ll}*|\p{Lu}+))*$/u.test(core);
    const caseless = /^[\p{Lo}\p{Lm}\p{M}]+$/u.test(core);
    const number = /^\d+([.,:/-]\d+)*%?$/.test(core);
    if ((cased && latinVowels(core)) || caseless || number) word += token.length;
  }
  return total === 0 ? 1 : word / total;
}
