/**
 * Canonical forms of the identifiers a person is known by, so the same human is found whatever
 * format a source wrote: phones in E.164, emails lower-cased with an ASCII (punycode) domain,
 * chat handles and social ids trimmed and lower-cased.
 */
import { domainToASCII } from 'node:url';
import { parsePhoneNumberFromString, type CountryCode } from 'libphonenumber-js/max';

export const IDENTIFIER_KINDS = ['phone', 'email', 'chatapp', 'shortcode', 'social'] as const;
export type IdentifierKind = (typeof IDENTIFIER_KINDS)[number];

export interface CanonicalIdentifier {
  kind: IdentifierKind;
  value: string;
}

/** Chat databases prefix handles with E: (email), P: (phone) or S: (sms). */
function stripHandlePrefix(raw: string): string {
  return raw.trim().replace(/^[EPS]:/i, '').trim();
}

export function canonicalEmail(raw: string): string | null {
  let s = stripHandlePrefix(raw).replace(/^mailto:/i, '');
  const angle = /<([^>]+)>/.exec(s);
  if (angle) s = angle[1];
  s = s.trim();
  const at = s.lastIndexOf('@');
  if (at <= 0 || at === s.length - 1 || /\s/.test(s)) return null;
  const local = s.slice(0, at).toLowerCase();
  const domain = domainToASCII(s.slice(at + 1).toLowerCase());
  if (!domain) return null;
  return `${local}@${domain}`;
}

const SHORTCODE_RE = /^\d{3,6}$/;

/**
 * E.164 for a number libphonenumber finds valid in `region`; else `{kind:'shortcode'}` for 3–6 digit
 * service codes; null when invalid. The library is asked first: short national numbers are real phones
 * in many regions (Andorra `712345`, Niue `7012`, the Faroe Islands `201234`).
 */
export function canonicalPhone(raw: string, region = 'US'): CanonicalIdentifier | null {
  const s = stripHandlePrefix(raw);
  if (!/\d/.test(s)) return null;
  const parsed = parsePhoneNumberFromString(s, region as CountryCode);
  if (parsed?.isValid()) return { kind: 'phone', value: parsed.number };
  const digits = s.replace(/[\s().\-]/g, '');
  if (SHORTCODE_RE.test(digits)) return { kind: 'shortcode', value: digits };
  return null;
}

/** Maps the identifier_type a client sends to our identifier kinds; unknown types are not linkable. */
export function identifierKindOf(type: string | null | undefined, identifier: string): IdentifierKind | null {
  const t = (type ?? '').trim().toLowerCase();
  if (t === 'phone' || t === 'sms' || t === 'tel') return 'phone';
  if (t === 'email' || t === 'mail') return 'email';
  if (t === 'chatapp' || t === 'imessage' || t === 'handle') return 'chatapp';
  if (t === 'shortcode') return 'shortcode';
  if (t === 'social') return 'social';
  if (t !== '') return null;
  // No type given: infer from the value.
  const s = stripHandlePrefix(identifier);
  if (s.includes('@')) return 'email';
  if (/^\+?[\d\s().\-]{3,}$/.test(s)) return 'phone';
  return 'chatapp';
}

/** Canonicalises an identifier of a kind; null when it cannot identify anyone (e.g. an invalid phone). */
export function canonicalIdentifier(
  kind: IdentifierKind,
  raw: string,
  region = 'US',
): CanonicalIdentifier | null {
  switch (kind) {
    case 'email': {
      const v = canonicalEmail(raw);
      return v ? { kind, value: v } : null;
    }
    case 'phone':
    case 'shortcode':
      return canonicalPhone(raw, region);
    default: {
      const v = stripHandlePrefix(raw).toLowerCase();
      return v ? { kind, value: v } : null;
    }
  }
}

/** Canonical form of a person filter typed by a user (search `person=`): email, phone or handle. */
export function canonicalLookupValues(raw: string, region = 'US'): string[] {
  const out = new Set<string>();
  const email = canonicalEmail(raw);
  if (email) out.add(email);
  const phone = canonicalPhone(raw, region);
  if (phone) out.add(phone.value);
  const plain = stripHandlePrefix(raw).toLowerCase();
  if (plain) out.add(plain);
  return [...out];
}
