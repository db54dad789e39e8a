/**
 * Redaction policies: which categories of personal data (emails, phones, account numbers, SSNs) a copy of
 * text has replaced by markers. One vocabulary for the three places that decide one: what the mail
 * collectors store (src/agent/collectors/email/store-redaction.ts), what leaves the machine
 * (src/privacy/egress.ts) and the agent's POST /v1/email/redact-pii.
 */

/** Host-agent spec §2.1 `redact_pii` object: one switch per category. */
export interface RedactOptions {
  emails: boolean;
  phones: boolean;
  account_numbers: boolean;
  ssn: boolean;
}

export const REDACT_CATEGORIES = ['emails', 'phones', 'account_numbers', 'ssn'] as const satisfies readonly (keyof RedactOptions)[];

export const ALL_REDACTIONS: Readonly<RedactOptions> = Object.freeze({ emails: true, phones: true, account_numbers: true, ssn: true });
export const NO_REDACTIONS: Readonly<RedactOptions> = Object.freeze({ emails: false, phones: false, account_numbers: false, ssn: false });

export function redactsAnything(o: RedactOptions): boolean {
  return REDACT_CATEGORIES.some((c) => o[c]);
}

/**
 * A short stable name of a policy: `none`, `all`, or the categories on, comma-joined in the fixed order
 * ("emails,phones"). Logged per egress call and kept in the import manifest.
 */
export function policyLabel(o: RedactOptions): string {
  const on = REDACT_CATEGORIES.filter((c) => o[c]);
  if (on.length === 0) return 'none';
  if (on.length === REDACT_CATEGORIES.length) return 'all';
  return on.join(',');
}

/**
 * Options as the API and configuration take them: a boolean (all on / all off) or an object whose missing
 * keys default to true (spec §2.1). Throws TypeError with a readable message on anything else.
 */
export function resolveRedactOptions(options: unknown): RedactOptions {
  if (options === undefined || options === null) return { ...ALL_REDACTIONS };
  if (typeof options === 'boolean') {
    return { emails: options, phones: options, account_numbers: options, ssn: options };
  }
  if (typeof options !== 'object' || Array.isArray(options)) {
    throw new TypeError('options must be a boolean or an object with emails, phones, account_numbers, ssn');
  }
  const out = { ...ALL_REDACTIONS };
  for (const [k, v] of Object.entries(options as Record<string, unknown>)) {
    if (!(k in out)) throw new TypeError(`options.${k} is not a redaction type (emails, phones, account_numbers, ssn)`);
    if (typeof v !== 'boolean') throw new TypeError(`options.${k} must be a boolean`);
    out[k as keyof RedactOptions] = v;
  }
  return out;
}

/**
 * A policy written as a list, the way `--redact=emails,phones` and EGRESS_REDACT take it: `all`, `none`,
 * or category names (`accounts` and `account-numbers` are accepted for account_numbers). Throws TypeError
 * naming the unknown word.
 */
export function parsePolicyList(text: string): RedactOptions {
  const words = text
    .split(',')
    .map((w) => w.trim().toLowerCase())
    .filter((w) => w !== '');
  if (words.length === 0) throw new TypeError(`expected all, none or a list of ${REDACT_CATEGORIES.join(', ')}`);
  if (words.length === 1 && (words[0] === 'all' || words[0] === 'none')) return { ...(words[0] === 'all' ? ALL_REDACTIONS : NO_REDACTIONS) };
  const out = { ...NO_REDACTIONS };
  for (const w of words) {
    const name = w === 'accounts' || w === 'account-numbers' ? 'account_numbers' : w;
    if (!(REDACT_CATEGORIES as readonly string[]).includes(name)) {
      throw new TypeError(`"${w}" is not a redaction category (all, none, ${REDACT_CATEGORIES.join(', ')})`);
    }
    out[name as keyof RedactOptions] = true;
  }
  return out;
}

/** "emails, phones and account numbers": the categories on, for sentences people read. */
export function describeCategories(o: RedactOptions): string {
  const names: Record<keyof RedactOptions, string> = { emails: 'email addresses', phones: 'phone numbers', account_numbers: 'account numbers', ssn: 'SSNs' };
  const on = REDACT_CATEGORIES.filter((c) => o[c]).map((c) => names[c]);
  if (on.length === 0) return 'nothing';
  return on.length === 1 ? on[0] : `${on.slice(0, -1).join(', ')} and ${on[on.length - 1]}`;
}
