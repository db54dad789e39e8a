/**
 * POST /v1/forget on the active backend: a person, an identifier, a document (with a stored file)
 * and a source are erased with what was derived from them; a dry run counts exactly what the real
 * run removes and removes nothing; unrelated documents stay; a block keeps them out afterwards.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { fileUpload } from '../files/multipart.ts';
import { runForgetCommand } from '../../src/cli/forget.ts';

const ME = 'me@home.example';
const CAROL_EMAIL = 'carol@starforce.example';
const CAROL_PHONE = '+1 415 555 0132';
const DAVE = 'dave@duplicate.example';

let gw: TestGateway;

async function ingest(body: Record<string, unknown>) {
  const res = await gw.request('POST', '/v1/ingest', { content_timestamp: '2026-11-01T10:00:00Z', ...body });
  expect([200, 202]).toContain(res.statusCode);
  return res.json();
}

const email = (id: string, text: string, people: Record<string, unknown>[], title = 'Note') =>
  ingest({ source_type: 'email', source_id: id, title, content: { data: text }, people });

async function search(q: string) {
  const res = await gw.request('GET', `/v1/search?q=${encodeURIComponent(q)}`);
  expect(res.statusCode).toBe(200);
  return res.json().hits as { document_id: string; people: { identifier: string }[] }[];
}

async function peopleSearch(q: string) {
  const res = await gw.request('GET', `/search/people?q=${encodeURIComponent(q)}`);
  expect(res.statusCode).toBe(200);
  return res.json().results as unknown[];
}

async function count(sql: string, params: unknown[] = []): Promise<number> {
  return (await gw.db.query<{ n: number }>(sql, params)).rows[0].n;
}

async function forget(body: Record<string, unknown>) {
  return gw.request('POST', '/v1/forget', body);
}

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
  // The owner of the store, so "the only other participant" has a meaning.
  await email('self-1', 'Sent from my desk', [{ identifier: ME, role: 'sender', display_name: 'Me Myself' }]);
  const self = await gw.request('PUT', '/v1/admin/self-person', { identifier: ME });
  expect(self.statusCode).toBe(200);
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

describe('forgetting a person', () => {
  const ids: Record<string, string> = {};

  beforeAll(async () => {
    // Carol's contact card (stored as a contact document too): one person with her name,
    // organisation, email and phone.
    const cards = await gw.request('POST', '/catalog/contacts/ingest', {
      source: 'host_contacts',
      device_id: 'laptop-1',
      batch_id: 'cards-1',
      since_token: null,
      people: [{ external_id: 'card-carol', display_name: 'Carol Danvers', organization: 'Starforce Inc', emails: [{ value: CAROL_EMAIL }], phones: [{ value: CAROL_PHONE }] }],
    });
    expect(cards.statusCode).toBe(200);
    ids.fromCarol = (await email('m-1', 'The quarterly zebra report is attached.', [
      { identifier: CAROL_EMAIL, role: 'sender', display_name: 'Carol Danvers' },
      { identifier: ME, role: 'recipient' },
    ], 'Zebra report')).doc_id;
    // An edit: the first version's words must go too, although it no longer has chunk links.
    await email('m-1', 'The quarterly zebra report, revised with pelican figures.', [
      { identifier: CAROL_EMAIL, role: 'sender', display_name: 'Carol Danvers' },
      { identifier: ME, role: 'recipient' },
    ], 'Zebra report');
    ids.toCarol = (await ingest({
      source_type: 'sms',
      source_id: 'sms-1',
      content: { data: 'See you at the walrus exhibit at noon' },
      people: [{ identifier: ME, role: 'sender' }, { identifier: CAROL_PHONE, identifier_type: 'phone', role: 'recipient' }],
    })).doc_id;
    ids.group = (await email('m-2', 'Dinner plans for the team: kiwi tart for dessert.', [
      { identifier: DAVE, role: 'sender', display_name: 'Dave Duplicate' },
      { identifier: ME, role: 'recipient' },
      { identifier: CAROL_EMAIL, role: 'recipient', display_name: 'Carol Danvers' },
    ], 'Dinner plans')).doc_id;
    ids.unrelated = (await ingest({ source_type: 'note', source_id: 'n-1', title: 'Trip', content: { data: 'Book the train to Lisbon.' } })).doc_id;
    await gw.request('POST', '/v1/admin/relationships/recompute');
  });

  it('a dry run counts what goes and removes nothing; the real run removes exactly that', async () => {
    const carol = (await peopleSearch('Starforce'))[0] as { person_id: string };
    expect(carol).toBeTruthy();
    ids.carol = carol.person_id;
    const top = await gw.request('GET', '/v1/crm/relationships/top?window=365d');
    expect(JSON.stringify(top.json())).toContain(ids.carol);

    const dry = await forget({ person_id: ids.carol, dry_run: true });
    expect(dry.statusCode).toBe(200);
    const plan = dry.json();
    expect(plan.dry_run).toBe(true);
    // Her card, her email (two versions) and the text to her.
    expect(plan.removed).toMatchObject({ documents: 3, versions: 4, people: 1, identifiers: 2, documents_unlinked: 1 });
    expect(plan.removed.chunks).toBeGreaterThanOrEqual(3);
    expect(plan.removed.relationship_edges).toBeGreaterThanOrEqual(1);
    expect(plan.removed.contact_sync_state).toBeGreaterThanOrEqual(1);
    // Nothing happened.
    expect((await gw.request('GET', `/v1/doc/${ids.fromCarol}`)).statusCode).toBe(200);
    expect(await peopleSearch('Danvers')).toHaveLength(1);

    const real = await forget({ person_id: ids.carol });
    expect(real.statusCode).toBe(200);
    expect(real.json()).toMatchObject({ dry_run: false, removed: plan.removed });
  });

  it('leaves nothing of her to find: documents, words, people search, relationships, contacts', async () => {
    expect((await gw.request('GET', `/v1/doc/${ids.fromCarol}`)).statusCode).toBe(404);
    expect((await gw.request('GET', `/v1/doc/${ids.toCarol}`)).statusCode).toBe(404);
    expect(await count(`SELECT count(*)::int AS n FROM documents WHERE external_id IN ('m-1', 'sms-1')`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM documents WHERE source_type = 'contact'`)).toBe(0);
    for (const q of ['zebra', 'pelican', 'walrus']) expect(await search(q)).toEqual([]);
    expect(await count(`SELECT count(*)::int AS n FROM chunks WHERE text LIKE '%zebra%' OR text LIKE '%walrus%'`)).toBe(0);
    for (const q of ['Carol', 'Danvers', 'Starforce', CAROL_EMAIL, '(415) 555-0132']) expect(await peopleSearch(q)).toEqual([]);
    expect(await count(`SELECT count(*)::int AS n FROM person_identifiers WHERE value_canonical IN ($1, '+14155550132')`, [CAROL_EMAIL])).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM ingest_submissions WHERE source_id IN ('m-1', 'sms-1')`)).toBe(0);
    const top = await gw.request('GET', '/v1/crm/relationships/top?window=365d');
    expect(JSON.stringify(top.json())).not.toContain(ids.carol);
    const exported = await gw.request('GET', '/catalog/contacts/export?full=true');
    expect(exported.body).not.toContain('Danvers');
    expect(exported.body).not.toContain(CAROL_EMAIL);
    const person = await gw.request('GET', `/v1/people/${ids.carol}`);
    expect(person.statusCode).toBe(404);
    const ctx = await gw.request('GET', '/v1/context/general');
    expect(ctx.body).not.toContain('Danvers');
    expect(ctx.body).not.toContain('zebra');
  });

  it('keeps the group message, without her, and the unrelated note untouched', async () => {
    const group = await gw.request('GET', `/v1/doc/${ids.group}`);
    expect(group.statusCode).toBe(200);
    const people = group.json().people as { identifier: string }[];
    expect(people.map((p) => p.identifier)).toEqual([DAVE, ME]);
    expect(group.body).not.toContain('carol');
    const hits = await search('kiwi');
    expect(hits.map((h) => h.document_id)).toEqual([ids.group]);
    expect(JSON.stringify(hits)).not.toContain(CAROL_EMAIL);
    expect(await peopleSearch('Dave')).toHaveLength(1);
    expect((await search('Lisbon')).map((h) => h.document_id)).toEqual([ids.unrelated]);
  });

  it('answers 404 for a person who is not there, and 422 for no target or two', async () => {
    expect((await forget({ person_id: ids.carol })).statusCode).toBe(404);
    const none = await forget({ dry_run: true });
    expect(none.statusCode).toBe(422);
    expect(none.json().detail[0]).toMatchObject({ loc: ['body'], type: 'value_error' });
    expect((await forget({ person_id: ids.carol, doc_id: ids.group })).statusCode).toBe(422);
    expect((await forget({ person_id: 'not-a-uuid' })).statusCode).toBe(422);
    expect((await gw.request('POST', '/v1/forget', { doc_id: ids.group }, { authorization: '' })).statusCode).toBe(401);
    expect((await gw.request('GET', `/v1/doc/${ids.group}`)).statusCode).toBe(200);
  });
});

describe('forgetting an identifier with a block', () => {
  it('erases what it sent and skips it when a collector brings it again', async () => {
    const spam = 'offers@junk.example';
    const sent = await email('spam-1', 'Buy cheap flamingo insurance', [{ identifier: spam, role: 'sender' }, { identifier: ME, role: 'recipient' }]);
    const res = await forget({ identifier: spam, block: true });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ removed: { documents: 1, people: 1, identifiers: 1 }, blocked: 1 });
    expect((await gw.request('GET', `/v1/doc/${sent.doc_id}`)).statusCode).toBe(404);

    const again = await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'spam-2',
      content: { data: 'More flamingo insurance' },
      people: [{ identifier: 'Offers <OFFERS@junk.example>', role: 'sender' }, { identifier: ME, role: 'recipient' }],
    });
    expect(again.statusCode).toBe(200);
    expect(again.json()).toMatchObject({ status: 'skipped', skipped: 'blocked_identifier', doc_id: '' });
    const batch = await gw.request('POST', '/v1/ingest:batch', {
      documents: [
        { source_type: 'email', source_id: 'spam-3', content: { data: 'Flamingo again' }, people: [{ identifier: spam, role: 'sender' }] },
        {
          source_type: 'email',
          source_id: 'group-2',
          content: { data: 'Meeting notes about the heron project' },
          people: [{ identifier: DAVE, role: 'sender' }, { identifier: ME, role: 'recipient' }, { identifier: spam, role: 'recipient' }],
        },
      ],
    });
    expect(batch.statusCode).toBeLessThan(300);
    const [skipped, kept] = batch.json().results;
    expect(skipped.submission.skipped).toBe('blocked_identifier');
    expect(kept.submission.skipped).toBeUndefined();
    const keptDoc = await gw.request('GET', `/v1/doc/${kept.submission.doc_id}`);
    expect(keptDoc.body).not.toContain('junk.example');
    expect(await search('flamingo')).toEqual([]);
    expect(await peopleSearch('junk.example')).toEqual([]);
    // The block list holds a hash, not the address.
    expect(await count(`SELECT count(*)::int AS n FROM forget_blocks WHERE identifier_sha256 LIKE '%junk%'`)).toBe(0);
  });
});

describe('forgetting a document and a source', () => {
  it('a file document: every version, its chunks and the stored file', async () => {
    const upload = fileUpload({ path: '/private/diary.txt', mtime: 1767225600 }, Buffer.from('Dear diary, the octopus escaped again.'), 'diary.txt', 'text/plain');
    const res = await gw.app.inject({
      method: 'POST',
      url: '/v1/ingest/file',
      payload: upload.payload,
      headers: { ...upload.headers, authorization: `Bearer ${TEST_TOKEN}` },
    });
    expect(res.statusCode).toBe(202);
    const { doc_id: docId, file_sha256: sha } = res.json();
    expect(await gw.files!.store.has(sha)).toBe(true);
    const out = await forget({ doc_id: docId });
    expect(out.json().removed).toMatchObject({ documents: 1, versions: 1, files: 1 });
    expect(await gw.files!.store.has(sha)).toBe(false);
    expect(await count('SELECT count(*)::int AS n FROM files WHERE file_sha256 = $1', [sha])).toBe(0);
    expect(await search('octopus')).toEqual([]);
  });

  it('a whole source, and only that source', async () => {
    for (let i = 0; i < 3; i++) {
      await ingest({ source_type: 'reminder', source_id: `r-${i}`, content: { data: `Water the cactus number ${i}` } });
    }
    const before = await count('SELECT count(*)::int AS n FROM documents WHERE source_type <> $1', ['reminder']);
    const dry = await forget({ source_type: 'reminder', dry_run: true });
    expect(dry.json().removed.documents).toBe(3);
    const out = await forget({ source_type: 'reminder', block: true });
    expect(out.json().removed.documents).toBe(3);
    expect(await search('cactus')).toEqual([]);
    expect(await count('SELECT count(*)::int AS n FROM documents WHERE source_type <> $1', ['reminder'])).toBe(before);
    const again = await gw.request('POST', '/v1/ingest', { source_type: 'reminder', source_id: 'r-9', content: { data: 'Water the cactus' } });
    expect(again.json()).toMatchObject({ status: 'skipped', skipped: 'blocked_source' });
  });
});

describe('memex forget (the command)', () => {
  it('prints the dry run, refuses without a terminal or --yes, and erases with --yes', async () => {
    const note = await ingest({ source_type: 'note', source_id: 'cli-1', content: { data: 'The albatross password hint' } });
    await gw.app.listen({ port: 0, host: '127.0.0.1' });
    const addr = gw.app.server.address() as { port: number };
    const url = `http://127.0.0.1:${addr.port}`;
    const out: string[] = [];
    // Standard output and error as one list of lines, as a terminal shows them.
    const lines = { write: (s: string | Uint8Array) => void out.push(...String(s).replace(/\n$/, '').split('\n')) };
    const runForget = (argv: string[]) => runForgetCommand(argv, process.env, { out: lines, err: lines });
    {
      const args = ['--doc', note.doc_id, '--url', url, '--token', TEST_TOKEN];
      expect(await runForget([...args, '--dry-run'])).toBe(0);
      expect(out.join('\n')).toMatch(/Would remove:\n\s+documents\s+1 \(1 versions\)/);
      expect((await gw.request('GET', `/v1/doc/${note.doc_id}`)).statusCode).toBe(200);
      // vitest's stdin is not a terminal: nobody could confirm.
      expect(await runForget(args)).toBe(2);
      expect((await gw.request('GET', `/v1/doc/${note.doc_id}`)).statusCode).toBe(200);
      expect(await runForget([...args, '--yes'])).toBe(0);
      expect(out.join('\n')).toContain('Removed:');
      expect((await gw.request('GET', `/v1/doc/${note.doc_id}`)).statusCode).toBe(404);
      expect(await runForget(args)).toBe(1);
      expect(out.at(-1)).toContain('Document not found');
    }
  });
});
