/** Shared fixtures for the people tests: contact cards, sync requests, document ingests. */
import type { TestGateway } from '../helpers/gateway.ts';

let seq = 0;

export function card(overrides: Record<string, unknown> = {}): Record<string, any> {
  seq += 1;
  return {
    external_id: `card-${seq}`,
    display_name: `Person ${seq}`,
    emails: [],
    phones: [],
    ...overrides,
  };
}

export async function syncContacts(
  gw: TestGateway,
  people: Record<string, unknown>[],
  extra: Record<string, unknown> = {},
) {
  const res = await gw.request('POST', '/catalog/contacts/ingest', {
    source: 'host_contacts',
    device_id: 'laptop-1',
    batch_id: `b-${Math.random().toString(36).slice(2)}`,
    since_token: null,
    people,
    ...extra,
  });
  if (res.statusCode !== 200) throw new Error(`contacts ingest ${res.statusCode}: ${res.body}`);
  return res.json();
}

/** Ingests a message whose sender is `from` (email or phone) through /v1/ingest. */
export async function ingestMessage(gw: TestGateway, from: string, type: 'email' | 'phone', name?: string, text?: string) {
  const res = await gw.request('POST', '/v1/ingest', {
    source_type: type === 'email' ? 'email' : 'sms',
    source_id: `msg-${Math.random().toString(36).slice(2)}`,
    content: { mime_type: 'text/plain', data: text ?? `Hello from ${from}` },
    people: [{ identifier: from, identifier_type: type, role: 'sender', display_name: name }],
  });
  if (res.statusCode !== 202) throw new Error(`ingest ${res.statusCode}: ${res.body}`);
  return res.json();
}

export async function personOfDoc(gw: TestGateway, docId: string, role = 'sender'): Promise<string> {
  const r = await gw.db.query<{ person_id: string }>('SELECT person_id FROM document_people WHERE doc_id = $1 AND role = $2', [
    docId,
    role,
  ]);
  return r.rows[0].person_id;
}

export async function livePeopleCount(gw: TestGateway): Promise<number> {
  const r = await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM people WHERE merged_into IS NULL AND NOT deleted');
  return r.rows[0].n;
}
