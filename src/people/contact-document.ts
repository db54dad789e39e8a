/**
 * The contact document of a card: the `contact` document stored through the catalog beside the people tables,
 * its text (spec-notes A4.4 layout), identity and idempotency key.
 */
import type { CatalogDocumentRequest } from '../catalog/types.ts';
import type { Queryable } from '../db/types.ts';
import type { DocumentPersonT } from '../schemas/ingest.ts';
import { sha256Hex } from '../util/hash.ts';
import { contentHash, fieldsOf, type PersonInput } from './normalise.ts';

/** The contact document's text (spec-notes A4.4 layout). */
export function contactText(p: PersonInput): string {
  const lines: string[] = [];
  if (p.display_name) lines.push(p.display_name);
  const name = [p.given_name, p.family_name].filter(Boolean).join(' ');
  if (name) lines.push(`Name: ${name}`);
  if (p.organization) lines.push(`Organization: ${p.organization}`);
  if (p.nicknames.length) lines.push(`Nicknames: ${p.nicknames.join(', ')}`);
  for (const e of p.emails) lines.push(`Email: ${e.value}`);
  for (const ph of p.phones) lines.push(`Phone: ${ph.value}`);
  for (const a of p.addresses) {
    const parts = [a.street, a.city, a.region, a.postal_code, a.country].filter(Boolean);
    if (parts.length) lines.push(`Address: ${parts.join(', ')}`);
  }
  for (const u of p.urls) lines.push(`URL: ${u.url}`);
  if (p.notes) lines.push(`Notes: ${p.notes}`);
  return lines.length ? lines.join('\n') : `Contact ${p.external_id}`;
}

export function contactExternalId(source: string, externalId: string): string {
  return `contact:${source}:${externalId}`;
}

/** The catalog request of a contact card: source_type contact, metadata.contact, people from identifiers. */
export function contactDocument(source: string, p: PersonInput, now = new Date()): CatalogDocumentRequest {
  const externalId = contactExternalId(source, p.external_id);
  const text = contactText(p);
  const textSha = sha256Hex(text);
  const contact = {
    ...fieldsOf(p),
    version: p.version,
    deleted: p.deleted,
    emails: p.emails.map(({ kind: _k, ...v }) => v),
    phones: p.phones.map(({ kind: _k, ...v }) => v),
    addresses: p.addresses,
    urls: p.urls,
  };
  const people: DocumentPersonT[] = [
    ...p.emails.map((e) => ({ identifier: e.value_raw, identifier_type: 'email', role: 'contact' as const, label: e.label, display_name: p.display_name })),
    ...p.phones.map((ph) => ({ identifier: ph.value_raw, identifier_type: ph.kind === 'shortcode' ? 'shortcode' : 'phone', role: 'contact' as const, label: ph.label, display_name: p.display_name })),
    { identifier: p.display_name, identifier_type: 'name', role: 'contact' as const, display_name: p.display_name },
  ];
  // Haven keys on text, version and deletion only; the card's hash is added so that a change the
  // text does not show (a label, a priority) still makes a new version.
  const idempotency = sha256Hex(`${externalId}:${textSha}:${p.version}:${p.deleted ? 'True' : 'False'}:${contentHash(p)}`);
  return {
    idempotency_key: idempotency,
    source_type: 'contact',
    source_id: externalId,
    external_id: externalId,
    source_provider: source,
    content_sha256: textSha,
    text,
    title: p.display_name || p.organization || p.external_id,
    content_timestamp: now.toISOString(),
    content_timestamp_type: 'modified',
    mime_type: 'text/plain',
    people,
    metadata: { source: 'contacts', text_sha256: textSha, contact, change_token: p.change_token },
    facet_overrides: { has_attachments: false, attachment_count: 0 },
  };
}

/** The active contact document of a card, if any. */
export async function activeContactDoc(db: Queryable, source: string, externalId: string): Promise<string | null> {
  const r = await db.query<{ doc_id: string }>(
    `SELECT doc_id FROM documents WHERE source_type = 'contact' AND external_id = $1 AND is_active_version LIMIT 1`,
    [contactExternalId(source, externalId)],
  );
  return r.rows[0]?.doc_id ?? null;
}
