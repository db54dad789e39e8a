/**
 * The words that make an email noise (host-agent spec §2.3), in one place: the collectors' noise score
 * (src/mail/analyze.ts) tests them here, and the relationship job's SQL (src/relationships/recompute.ts)
 * gets the same arrays as parameters, so the two cannot disagree on which mail is promotional or bulk.
 */

/**
 * Promotional subject words: the spec's sale, offer, discount, deal, promo, newsletter, subscribe and
 * unsubscribe, with their plurals. Matched as whole words, so "An ideal plan" is not a deal and
 * "resubscribed" is not a subscription.
 */
export const PROMO_SUBJECT_WORDS: readonly string[] = [
  'sale', 'sales', 'offer', 'offers', 'discount', 'discounts', 'deal', 'deals',
  'promo', 'promos', 'promotion', 'promotional', 'newsletter', 'newsletters', 'subscribe', 'unsubscribe',
];

/** Bulk-sender words, matched anywhere in the lowercased sender address ("news.noreply@…" counts). */
export const BULK_SENDER_WORDS: readonly string[] = ['noreply', 'no-reply', 'donotreply', 'mailer', 'newsletter'];

/**
 * What separates the words of a lowercased subject. A POSIX and a JavaScript regular expression alike, so
 * SQL's regexp_split_to_array and String.split cut a subject into the same words.
 */
export const SUBJECT_WORD_SEPARATOR = '[^a-z0-9_]+';

const separator = new RegExp(SUBJECT_WORD_SEPARATOR);
const promoWords = new Set(PROMO_SUBJECT_WORDS);

export function hasPromoSubject(subject: string): boolean {
  return subject.toLowerCase().split(separator).some((w) => promoWords.has(w));
}

export function isBulkSender(sender: string): boolean {
  const s = sender.toLowerCase();
  return BULK_SENDER_WORDS.some((w) => s.includes(w));
}
