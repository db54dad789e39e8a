/**
 * Contact cards in canonical form (spec-notes A4.4): trimmed fields, canonical emails and phones with their raw
 * form, unique address and URL labels, and the content hash that says whether a card changed.
 */
import type { ContactAddressT, ContactUrlT, ContactValueT, PersonPayloadT } from '../schemas/people.ts';
import { canonicalJson, sha256Hex } from '../util/hash.ts';
import { canonicalEmail, canonicalPhone, type IdentifierKind } from '../identity/identifiers.ts';
import type { CardFields } from '../identity/card-fields.ts';
import type { IdentifierInput } from '../identity/ownership.ts';

/** A contact card in the form the people tables keep; emails/phones already canonical. */
export interface PersonInput extends CardFields {
  external_id: string;
  display_name: string;
  emails: NormalisedValue[];
  phones: NormalisedValue[];
  /** Other identifiers (chat handles, social ids, short codes). */
  others: IdentifierInput[];
  addresses: Required<{ [K in keyof ContactAddressT]: string | null }>[];
  urls: { label: string; url: string }[];
  version: number;
  deleted: boolean;
  change_token: string | null;
}

export interface NormalisedValue {
  value: string;
  value_raw: string;
  label: string | null;
  priority: number;
  verified: boolean;
  /** Kind of the canonical identifier (a phone may turn out to be a short code); null if unusable. */
  kind: IdentifierKind | null;
}


const clean = (s: string | null | undefined): string | null => {
  const t = s?.trim();
  return t ? t : null;
};
const labelOf = (s: string | null | undefined) => clean(s)?.toLowerCase() ?? null;

export function normaliseValues(values: ContactValueT[] | null | undefined, kind: 'email' | 'phone', region: string) {
  const out: NormalisedValue[] = [];
  const seen = new Set<string>();
  for (const v of values ?? []) {
    const raw = clean(v.value_raw) ?? v.value.trim();
    let canon: { kind: IdentifierKind; value: string } | null = null;
    if (kind === 'email') {
      const e = canonicalEmail(v.value) ?? canonicalEmail(raw);
      canon = e ? { kind: 'email', value: e } : null;
    } else {
      canon = canonicalPhone(v.value, region) ?? canonicalPhone(raw, region);
    }
    const value = canon?.value ?? v.value.trim();
    if (seen.has(value)) continue;
    seen.add(value);
    out.push({
      value,
      value_raw: raw,
      label: labelOf(v.label),
      priority: v.priority ?? 100,
      verified: v.verified ?? true,
      kind: canon?.kind ?? null,
    });
  }
  return out;
}

/** A PersonPayloadModel in canonical form; the display name falls back to the name parts. */
export function normaliseContact(p: PersonPayloadT, region: string): PersonInput {
  const emails = normaliseValues(p.emails, 'email', region);
  const phones = normaliseValues(p.phones, 'phone', region);
  const given = clean(p.given_name);
  const family = clean(p.family_name);
  const organization = clean(p.organization);
  const display =
    clean(p.display_name) ??
    (clean([given, family].filter(Boolean).join(' ')) || organization || emails[0]?.value || phones[0]?.value_raw || p.external_id);
  const labels = new Map<string, number>();
  const uniqueLabel = (l: string | null) => {
    const base = l ?? 'other';
    const n = (labels.get(base) ?? 0) + 1;
    labels.set(base, n);
    return n === 1 ? base : `${base}_${n}`;
  };
  const addresses = (p.addresses ?? [])
    .map((a) => ({
      label: labelOf(a.label),
      street: clean(a.street),
      city: clean(a.city),
      region: clean(a.region),
      postal_code: clean(a.postal_code),
      country: clean(a.country),
    }))
    .filter((a) => a.street || a.city || a.region || a.postal_code || a.country)
    .map((a) => ({ ...a, label: uniqueLabel(a.label) }));
  labels.clear();
  const urls = (p.urls ?? [])
    .map((u: ContactUrlT) => ({ label: labelOf(u.label), url: clean(u.url) ?? clean(u.value) }))
    .filter((u): u is { label: string | null; url: string } => !!u.url)
    .map((u) => ({ label: uniqueLabel(u.label), url: u.url }));
  return {
    external_id: p.external_id.trim(),
    display_name: display,
    given_name: given,
    family_name: family,
    organization,
    nicknames: [...new Set((p.nicknames ?? []).map((n) => n.trim()).filter(Boolean))],
    notes: clean(p.notes),
    photo_hash: clean(p.photo_hash),
    emails,
    phones,
    others: [],
    addresses,
    urls,
    version: p.version ?? 1,
    deleted: p.deleted ?? false,
    change_token: clean(p.change_token),
  };
}

/** What the card says, without version and change token: equal hashes mean nothing changed. */
export function contentHash(p: PersonInput): string {
  const { version: _v, change_token: _c, ...content } = p;
  return sha256Hex(canonicalJson(content));
}

/** The identifiers a card links: its usable emails and phones, then the others. */
export function identifiersOf(p: PersonInput): IdentifierInput[] {
  const out: IdentifierInput[] = [];
  for (const v of [...p.emails, ...p.phones]) {
    if (!v.kind) continue;
    out.push({ kind: v.kind, value: v.value, raw: v.value_raw, label: v.label, priority: v.priority, verified: v.verified });
  }
  return [...out, ...p.others];
}

/** The person fields a card states. */
export function fieldsOf(p: PersonInput): CardFields {
  return {
    display_name: p.display_name,
    given_name: p.given_name,
    family_name: p.family_name,
    organization: p.organization,
    nicknames: p.nicknames,
    notes: p.notes,
    photo_hash: p.photo_hash,
  };
}
