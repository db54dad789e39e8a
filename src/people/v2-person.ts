/**
 * The v2 person envelope (spec-notes A2.5) adapted to a contact card, and the people source a v2 envelope
 * upserts under.
 */
import { canonicalIdentifier, canonicalPhone } from '../identity/identifiers.ts';
import { normaliseContact, normaliseValues, type PersonInput } from './normalise.ts';

export interface PersonPayloadV2 {
  external_id: string;
  display_name: string;
  given_name?: string | null;
  family_name?: string | null;
  organization?: string | null;
  nicknames?: string[] | null;
  notes?: string | null;
  photo_hash?: string | null;
  change_token?: string | null;
  version?: number;
  deleted?: boolean;
  identifiers?: { kind: string; value_raw: string; value_canonical?: string | null; label?: string | null; priority?: number | null; verified?: boolean | null }[] | null;
}

/**
 * A v2 person payload as a card (spec-notes A2.5): phone and chat-handle identifiers that read as
 * phones become phones, email-like ones emails, short codes and social ids stay identifiers of
 * their kind, and kinds we cannot link are kept in the notes as `<kind>:<raw>`.
 */
export function personFromV2(p: PersonPayloadV2, region: string): PersonInput {
  const base = normaliseContact(
    { external_id: p.external_id, display_name: p.display_name, given_name: p.given_name, family_name: p.family_name,
      organization: p.organization, nicknames: p.nicknames, notes: p.notes, photo_hash: p.photo_hash,
      change_token: p.change_token, version: p.version ?? 1, deleted: p.deleted ?? false },
    region,
  );
  const unlinkable: string[] = [];
  for (const i of p.identifiers ?? []) {
    const kind = i.kind.trim().toLowerCase();
    const given = (i.value_canonical ?? '').trim() || i.value_raw;
    const value = { value: given, value_raw: i.value_raw, label: i.label ?? null, priority: i.priority ?? 100, verified: i.verified ?? true };
    if (kind === 'email' || ((kind === 'imessage' || kind === 'chatapp') && given.includes('@'))) {
      base.emails.push(...normaliseValues([value], 'email', region));
    } else if (kind === 'phone' || kind === 'shortcode' || ((kind === 'imessage' || kind === 'chatapp') && canonicalPhone(given, region))) {
      base.phones.push(...normaliseValues([value], 'phone', region));
    } else if (kind === 'chatapp' || kind === 'imessage' || kind === 'social') {
      const c = canonicalIdentifier(kind === 'social' ? 'social' : 'chatapp', given, region);
      if (c) base.others.push({ kind: c.kind, value: c.value, raw: i.value_raw, label: value.label, priority: value.priority, verified: value.verified });
    } else {
      unlinkable.push(`${kind}:${i.value_raw}`);
    }
  }
  if (unlinkable.length) base.notes = [base.notes, unlinkable.join('; ')].filter(Boolean).join('\n');
  return base;
}

/** `<source_type>:<provider or default>:<account or default>` (spec-notes A2.5). */
export function v2PeopleSource(s: { source_type: string; source_provider?: string | null; source_account_id?: string | null }): string {
  return `${s.source_type}:${s.source_provider || 'default'}:${s.source_account_id || 'default'}`;
}
