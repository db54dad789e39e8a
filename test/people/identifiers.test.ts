import { describe, expect, it } from 'vitest';
import { canonicalEmail, canonicalIdentifier, canonicalPhone } from '../../src/identity/identifiers.ts';

// Real-world ways people write numbers, each with the E.164 form it must become.
describe('E.164 canonicalisation of real-world phone formats', () => {
  it.each([
    // United States, national forms (default region US)
    ['US', '5084109572', '+15084109572'],
    ['US', '508-410-9572', '+15084109572'],
    ['US', '(508) 410-9572', '+15084109572'],
    ['US', '508.410.9572', '+15084109572'],
    ['US', '508 410 9572', '+15084109572'],
    ['US', '1 (508) 410-9572', '+15084109572'],
    ['US', '1-508-410-9572', '+15084109572'],
    ['US', '011 44 20 7946 0958', '+442079460958'], // US international dialling prefix
    ['US', '  +1 508 410 9572  ', '+15084109572'], // stray whitespace
    ['US', 'P:+15084109572', '+15084109572'], // chat database handle
    ['US', 'tel:+1-508-410-9572', '+15084109572'], // tel: URI from a vCard 4.0
    // Extensions are dropped from the identity (the line is the person)
    ['US', '508-410-9572 ext. 204', '+15084109572'],
    ['US', '(508) 410-9572 x204', '+15084109572'],
    ['US', '+1 508 410 9572;ext=204', '+15084109572'],
    // International forms
    ['US', '+44 (0)20 7946 0958', '+442079460958'],
    ['US', '+49 (030) 901820', '+4930901820'],
    ['US', '+33 6 12 34 56 78', '+33612345678'],
    ['US', '+61 2 9374 4000', '+61293744000'],
    ['US', '+91 98765 43210', '+919876543210'],
    ['US', '+55 11 91234-5678', '+5511912345678'],
    // National forms of other regions when the default region is set to them
    ['GB', '020 7946 0958', '+442079460958'],
    ['GB', '07911 123456', '+447911123456'],
    ['DE', '030 901820', '+4930901820'],
    ['DE', '0049 30 901820', '+4930901820'],
    ['FR', '06 12 34 56 78', '+33612345678'],
    ['JP', '03-3224-5000', '+81332245000'],
  ])('[%s] %j -> %s', (region, raw, e164) => {
    expect(canonicalPhone(raw, region)).toEqual({ kind: 'phone', value: e164 });
  });

  it.each([
    ['US', ''],
    ['US', '()-.'],
    ['US', 'n/a'],
    ['US', '555-0100'], // seven digits without an area code
    ['US', '+1 123 456 7890'], // area codes never start with 1
    ['US', '020 7946 0958'], // a UK national number read as American
    ['US', '+44 20'], // truncated
    ['US', '12345678901234567890'],
  ])('[%s] rejects %j', (region, raw) => {
    expect(canonicalPhone(raw, region)).toBeNull();
  });

  it('keeps service short codes as their own kind', () => {
    expect(canonicalPhone('72166')).toEqual({ kind: 'shortcode', value: '72166' });
    expect(canonicalIdentifier('phone', '262-966')).toEqual({ kind: 'shortcode', value: '262966' });
  });

  it('canonicalises emails: trimmed, lower-cased, IDNA domain', () => {
    expect(canonicalEmail(' Ann.Lee@Example.COM ')).toBe('ann.lee@example.com');
    expect(canonicalEmail('mailto:Bob@Example.org')).toBe('bob@example.org');
    expect(canonicalEmail('"Ann" <ann@münchen.example>')).toBe('ann@xn--mnchen-3ya.example');
    expect(canonicalEmail('no-at-sign')).toBeNull();
  });
});
