/**
 * Short national numbers (issue 21 item 3): in many regions a 4–6 digit number is an ordinary phone
 * number. libphonenumber is asked first with the configured region; only a number it does not find valid
 * is a shortcode.
 */
import { describe, expect, it } from 'vitest';
import { canonicalIdentifier, canonicalPhone } from '../../src/identity/identifiers.ts';

describe('short phone numbers', () => {
  it.each([
    ['712345', 'AD', '+376712345'], // Andorra: six-digit mobile numbers
    ['7012', 'NU', '+6837012'], // Niue: four-digit numbers
    ['201234', 'FO', '+298201234'], // Faroe Islands: six-digit numbers
    ['20 12 34', 'FO', '+298201234'],
  ])('%s in %s is the phone %s', (raw, region, e164) => {
    expect(canonicalPhone(raw, region)).toEqual({ kind: 'phone', value: e164 });
    expect(canonicalIdentifier('shortcode', raw, region)).toEqual({ kind: 'phone', value: e164 });
  });

  it('numbers that are not valid phones in the region stay shortcodes', () => {
    expect(canonicalPhone('712345', 'US')).toEqual({ kind: 'shortcode', value: '712345' });
    expect(canonicalPhone('262-966', 'US')).toEqual({ kind: 'shortcode', value: '262966' });
    expect(canonicalPhone('911', 'GB')).toEqual({ kind: 'shortcode', value: '911' });
    expect(canonicalPhone('12', 'US')).toBeNull();
  });
});
