/**
 * Email metadata, intent classification, noise scoring and PII redaction, with exactly the rules of
 * host-agent spec §2.3 and spec-notes B2.3 (the behaviour of the system the spec describes). Plain
 * functions: the collectors call them directly.
 */
import { findNumbers, type CountryCode } from 'libphonenumber-js/max';
import { hasPromoSubject, isBulkSender } from '../../util/email-noise.ts';
import { ALL_REDACTIONS, resolveRedactOptions, type RedactOptions } from '../../privacy/policy.ts';
import type { ParsedEmail } from './parse.ts';

export { ALL_REDACTIONS, resolveRedactOptions };

export type IntentValue =
  | 'bill'
  | 'receipt'
  | 'orderConfirmation'
  | 'appointment'
  | 'actionRequired'
  | 'notification'
  | 'promotional'
  | 'newsletter'
  | 'personal'
  | 'unknown';

export interface IntentClassification {
  primaryIntent: IntentValue;
  confidence: number;
  secondaryIntents: IntentValue[];
  extractedEntities: Record<string, string>;
}

/** First-match rules on the lowercased subject/body/sender (spec-notes B2.3). */
export function classifyIntent(input: { subject: string; body: string; sender?: string | null }): IntentClassification {
  const subject = input.subject.toLowerCase();
  const body = input.body;
  const bodyLower = body.toLowerCase();
  const sender = (input.sender ?? '').toLowerCase();
  const has = (text: string, ...words: string[]) => words.some((w) => text.includes(w));
  const result = (primaryIntent: IntentValue, confidence: number, entities: Record<string, string> = {}, secondary: IntentValue[] = []): IntentClassification => ({
    primaryIntent,
    confidence,
    secondaryIntents: secondary,
    extractedEntities: entities,
  });

  if (has(subject, 'bill', 'invoice', 'statement')) {
    const amount = /\$[\d,]+\.?\d*/.exec(body);
    return result('bill', 0.8, amount ? { amount: amount[0] } : {});
  }
  if (has(subject, 'receipt', 'payment confirmation')) {
    const order = /order[# ]+[\w-]+/i.exec(body);
    return result('receipt', 0.85, order ? { order_number: order[0] } : {});
  }
  if (subject.includes('order') && has(subject, 'confirm', 'shipped')) return result('orderConfirmation', 0.8);
  if (has(subject, 'appointment', 'meeting') || bodyLower.includes('calendar invite')) {
    return result('appointment', 0.75, {}, ['actionRequired']);
  }
  if (has(subject, 'action required', 'attention needed', 'urgent')) return result('actionRequired', 0.7);
  if (has(subject, 'sale', 'offer', 'discount')) return result('promotional', 0.8);
  if (subject.includes('newsletter') || sender.includes('newsletter')) return result('newsletter', 0.85);
  return result('unknown', 0.3);
}

export interface NoiseInput {
  subject?: string | null;
  from?: string[] | null;
  listUnsubscribe?: string | null;
}

/**
 * Noise score: List-Unsubscribe +3, promotional subject +2, bulk sender +2; noise iff score >= 2. The words
 * are src/util/email-noise.ts's, which the relationship job's noise rule uses too.
 */
export function noiseScore(input: NoiseInput): number {
  let score = 0;
  if (input.listUnsubscribe !== undefined && input.listUnsubscribe !== null) score += 3;
  if (hasPromoSubject(input.subject ?? '')) score += 2;
  if (isBulkSender(input.from?.[0] ?? '')) score += 2;
  return score;
}

export function isNoiseEmail(input: NoiseInput): boolean {
  return noiseScore(input) >= 2;
}

/** Regions whose national numbers (written with their trunk 0) are looked for besides NANP ones. */
const NATIONAL_REGIONS: CountryCode[] = ['GB', 'DE', 'FR', 'IT', 'ES', 'NL', 'BE', 'CH', 'AT', 'IE', 'AU', 'NZ', 'IN', 'JP', 'BR', 'ZA'];

const digitCount = (s: string) => s.replace(/\D/g, '').length;

// The typings leave out `leniency`, which the matcher takes (libphonenumber's Leniency levels).
type Finder = (
  text: string,
  o: { defaultCountry: CountryCode; leniency: 'POSSIBLE' | 'VALID'; v2: true },
) => { startsAt: number; endsAt: number }[];
const find = findNumbers as unknown as Finder;

/**
 * Phone numbers as libphonenumber's matcher finds them (findNumbers), in any common formatting:
 * numbers written with a + and country code (any region); North American numbers (10 digits,
 * area codes the metadata does not list, such as 555, included); national numbers of other
 * regions written with their trunk 0 ("020 7946 0958", "06 12 34 56 78"). Returns [start, end) ranges.
 */
function phoneRanges(text: string): [number, number][] {
  const out: [number, number][] = [];
  // The matcher is slow on long text (tens of ms per 5 KB): it only sees the runs of digits and
  // separators long enough to hold a number, each with a little context.
  for (const c of text.matchAll(/\+?\(?\d[\d \t().\-\/]{5,}\d/g)) {
    const at = c.index!;
    const span = c[0];
    for (const m of find(span, { defaultCountry: 'US', leniency: 'POSSIBLE', v2: true })) {
      const raw = span.slice(m.startsAt, m.endsAt);
      if (raw.trimStart().startsWith('+') || digitCount(raw) >= 10) out.push([at + m.startsAt, at + m.endsAt]);
    }
    if (!/(^|\D)\(?0\d/.test(span)) continue;
    for (const region of NATIONAL_REGIONS) {
      for (const m of find(span, { defaultCountry: region, leniency: 'VALID', v2: true })) {
        const raw = span.slice(m.startsAt, m.endsAt);
        if (/^\(?0/.test(raw) && digitCount(raw) >= 9) out.push([at + m.startsAt, at + m.endsAt]);
      }
    }
  }
  return out;
}

/** Replaces the ranges (overlaps merged) with a marker. */
function replaceRanges(text: string, ranges: [number, number][], marker: string): string {
  if (ranges.length === 0) return text;
  const sorted = [...ranges].sort((a, b) => a[0] - b[0]);
  let out = '';
  let at = 0;
  for (const [start, end] of sorted) {
    if (end <= at) continue;
    out += text.slice(at, Math.max(at, start)) + (start >= at ? marker : '');
    at = end;
  }
  return out + text.slice(at);
}

/**
 * Account numbers written in groups with one separator (cards "4111 1111 1111 1111", "12-3456-78901"),
 * 8+ digits, inner groups of 3+ digits (so dates like 2024-01-15 are not accounts), not SSN-shaped.
 */
const GROUPED_ACCOUNT_RE = /\b\d{2,}([ -])\d{3,}(?:\1\d{3,})*(?:\1\d{1,2})?\b/g;
/** IBANs, with or without their spaces ("DE89 3704 0044 0532 0130 00"). */
const IBAN_RE = /\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?\b/g;

/**
 * Redaction order matters and is the spec's: emails, phones, account numbers, SSN. The spec's
 * three phone patterns run first, then libphonenumber's matcher for the formats they miss (spaces,
 * other regions). A 10-digit run becomes a phone before the account rule sees it; an SSN-shaped
 * 123-45-6789 survives the phone and account rules (3-2-4 digits) and is caught last.
 */
export function redactPii(text: string, options: RedactOptions = ALL_REDACTIONS): string {
  let out = text;
  if (options.emails) out = out.replace(/[\w.-]+@[\w.-]+/g, '[EMAIL_REDACTED]');
  if (options.phones) {
    // The matcher first: it sees "+1 (508) 410-9572" whole, where a spec pattern would take a part.
    out = replaceRanges(out, phoneRanges(out), '[PHONE_REDACTED]');
    out = out.replace(/\b\d{3}[-.]?\d{3}[-.]?\d{4}\b/g, '[PHONE_REDACTED]');
    out = out.replace(/\(\d{3}\)\s*\d{3}[-.]?\d{4}/g, '[PHONE_REDACTED]');
    out = out.replace(/\+\d{1,3}\s*\d{3}[-.]?\d{3}[-.]?\d{4}/g, '[PHONE_REDACTED]');
  }
  if (options.account_numbers) {
    // A phone number is not an account number, also when phone redaction is off.
    const isPhone = (m: string) => /^\d{3}[-. ]?\d{3}[-. ]?\d{4}$/.test(m) || phoneRanges(m).some(([a, b]) => a === 0 && b === m.length);
    const grouped = (m: string) => digitCount(m) >= 8 && !/^\d{3}-\d{2}-\d{4}$/.test(m) && !isPhone(m);
    out = out.replace(IBAN_RE, (m) => (digitCount(m) >= 8 ? '[ACCOUNT_REDACTED]' : m));
    out = out.replace(GROUPED_ACCOUNT_RE, (m) => (grouped(m) ? '[ACCOUNT_REDACTED]' : m));
    out = out.replace(/\b\d{8,}\b/g, '[ACCOUNT_REDACTED]');
  }
  if (options.ssn) out = out.replace(/\b\d{3}-\d{2}-\d{4}\b/g, '[SSN_REDACTED]');
  return out;
}

/** Effective redaction of a mail source: source override, then module default, then all on. */
export function effectiveRedaction(
  sourceOverride: boolean | RedactOptions | undefined,
  moduleDefault: boolean | RedactOptions | undefined,
): RedactOptions {
  return resolveRedactOptions(sourceOverride ?? moduleDefault ?? true);
}

export interface EmailMetadata {
  subject: string | null;
  from: string[];
  to: string[];
  cc: string[];
  date: string | null;
  messageId: string | null;
  inReplyTo: string | null;
  references: string[];
  listUnsubscribe: string | null;
  hasAttachments: boolean;
  attachmentCount: number;
  bodyPreview: string;
  isNoiseEmail: boolean;
  intentClassification: IntentClassification;
}

export function stripTags(html: string): string {
  return html.replace(/<[^>]+>/g, '');
}

/** Metadata of a parsed message (spec §2.3). Accepts a partial object: missing lists are empty. */
export function emailMetadata(email: Partial<ParsedEmail>): EmailMetadata {
  const plain = email.bodyPlainText ?? null;
  const html = email.bodyHTML ?? null;
  const body = plain ?? (html !== null ? stripTags(html) : '');
  const attachments = email.attachments ?? [];
  const from = email.from ?? [];
  return {
    subject: email.subject ?? null,
    from,
    to: email.to ?? [],
    cc: email.cc ?? [],
    date: email.date ?? null,
    messageId: email.messageId ?? null,
    inReplyTo: email.inReplyTo ?? null,
    references: email.references ?? [],
    listUnsubscribe: email.listUnsubscribe ?? null,
    hasAttachments: attachments.length > 0,
    attachmentCount: attachments.length,
    bodyPreview: Array.from(body).slice(0, 200).join(''),
    isNoiseEmail: isNoiseEmail({ subject: email.subject, from, listUnsubscribe: email.listUnsubscribe }),
    intentClassification: classifyIntent({ subject: email.subject ?? '', body: plain ?? html ?? '', sender: from[0] ?? null }),
  };
}
