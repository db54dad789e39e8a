import { describe, expect, it } from 'vitest';
import { canonicalEmail, canonicalPhone, identifierKindOf } from '../../src/identity/identifiers.ts';

describe('phone canonicalisation to E.164', () => {
  it.each([
    ['5084109572', '+15084109572'],
    ['508-410-9572', '+15084109572'],
    ['(508) 410-9572', '+15084109572'],
    ['508.410.9572', '+15084109572'],
    ['508 410 9572', '+15084109572'],
    ['15084109572', '+15084109572'],
    ['+15084109572', '+15084109572'],
    ['+1 (508) 410-9572', '+15084109572'],
    ['P:(717) 580-5345', '+17175805345'],
    ['+1 508 410 9572 ext. 12', '+15084109572'],
    ['+44 20 7946 0958', '+442079460958'],
    ['+33 1 42 68 53 00', '+33142685300'],
    ['+49 30 901820', '+4930901820'],
    ['+81 3-3224-5000', '+81332245000'],
  ])('%s -> %s', (raw, e164) => {
    expect(canonicalPhone(raw, 'US')).toEqual({ kind: 'phone', value: e164 });
  });

  it('reads national numbers in the configured region', () => {
    expect(canonicalPhone('020 7946 0958', 'GB')).toEqual({ kind: 'phone', value: '+442079460958' });
    expect(canonicalPhone('020 7946 0958', 'US')).toBeNull();
  });

  it('keeps short codes as shortcodes', () => {
    expect(canonicalPhone('12345')).toEqual({ kind: 'shortcode', value: '12345' });
    expect(canonicalPhone('S:262966')).toEqual({ kind: 'shortcode', value: '262966' });
  });

  it.each(['', '()-.', 'call me', '555-0100', '+1 123'])('rejects %j', (raw) => {
    expect(canonicalPhone(raw)).toBeNull();
  });
});

describe('email canonicalisation', () => {
  it('lower-cases, trims and punycodes the domain', () => {
    expect(canonicalEmail('  Bob@Example.COM ')).toBe('bob@example.com');
    expect(canonicalEmail('Üser@bücher.example')).toBe('üser@xn--bcher-kva.example');
    expect(canonicalEmail('E:ann@example.com')).toBe('ann@example.com');
    expect(canonicalEmail('Ann Lee <ann@example.com>')).toBe('ann@example.com');
    expect(canonicalEmail('not an email')).toBeNull();
  });

  it('infers identifier kinds when no type is given', () => {
    expect(identifierKindOf(undefined, 'x@y.z')).toBe('email');
    expect(identifierKindOf(undefined, '+1 508 410 9572')).toBe('phone');
    expect(identifierKindOf('imessage', 'handle')).toBe('chatapp');
    expect(identifierKindOf('name', 'Ann')).toBeNull();
  });
});
