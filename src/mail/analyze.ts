/**
 * Email metadata, intent classification, noise scoring and PII redaction, with the rules of host-agent
 * spec §2.3 and spec-notes B2.3 (the behaviour of the system the spec describes); redaction is the precise
 * one of src/privacy/redact.ts (same markers and categories, no hashes or dates taken). Plain functions:
 * the collectors call them directly.
 */
import { hasPromoSubject, isBulkSender } from './noise.ts';
import { ALL_REDACTIONS, resolveRedactOptions, type RedactOptions } from '../privacy/policy.ts';
import type { ParsedEmail } from './parse.ts';

export { ALL_REDACTIONS, resolveRedactOptions };
/** The precise redactor (src/privacy/redact.ts): the spec's markers and categories, without its false positives. */
export { redactPii } from '../privacy/redact.ts';

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
 * are src/mail/noise.ts's, which the relationship job's noise rule uses too.
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
