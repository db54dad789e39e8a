/**
 * The original of every collected message (issue 40 items 1 and 3), on the active backend with a real gateway
 * (object store in a temp folder) and the real importer:
 * - `memex import mail` stores each message's bytes; GET /v1/documents/{id}/original and `memex open --raw ID`
 *   give them back byte for byte; the same message from a Maildir and from an mbox is one object;
 * - export lists them with their bytes; backup → restore keeps them; forget removes the object; gc keeps a
 *   linked one and collects one nothing names;
 * - `memex reindex --reparse` (POST /v1/admin/email/reparse) makes a new version from the original when the stored
 *   text differs; `memex import mail --rescan` replaces text stored by an older memex with a new version of the
 *   same document and stores the original it lacked;
 * - bad input to the originals route gets a 4xx and stores nothing.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { runOpenCommand } from '../../src/cli/search.ts';
import { openDatabase } from '../../src/db/index.ts';
import { LocalObjectStore, objectKeyFor, type ObjectStore } from '../../src/files/object-store.ts';
import { restoreBackup } from '../../src/maintenance/backup.ts';
import { collectGarbage } from '../../src/maintenance/gc.ts';
import { backend, createServerDatabase, createTestDatabase } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { tmpDir } from './helpers.ts';

/** A message with LF line ends, so the Maildir file and the mbox copy hold the same bytes. */
function message(n: number, body = `Hello, this is message ${n}.\nIt has a second line about the harbour.\n`): string {
  return [
    `From: Sender ${n} <sender${n}@orig.example>`,
    'To: jane.doe@example.org',
    `Subject: Original ${n}`,
    `Date: Thu, 23 Nov 2023 10:${String(n % 60).padStart(2, '0')}:00 +0000`,
    `Message-ID: <orig-${n}@orig.example>`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    '',
    body,
  ].join('\n');
}

function maildir(dir: string, messages: Record<string, string>): string {
  for (const d of ['cur', 'new', 'tmp']) fs.mkdirSync(path.join(dir, d), { recursive: true });
  for (const [name, text] of Object.entries(messages)) fs.writeFileSync(path.join(dir, 'cur', `${name}:2,S`), text);
  return dir;
}

function sink() {
  const chunks: Buffer[] = [];
  return {
    write: (s: string | Uint8Array) => (chunks.push(Buffer.from(s)), true),
    isTTY: false,
    get text() {
      return Buffer.concat(chunks).toString('utf8');
    },
    get bytes() {
      return Buffer.concat(chunks);
    },
  };
}

let gw: TestGateway;
let url: string;
let store: ObjectStore;
let work: string;

async function importMail(args: string[]) {
  const o = sink();
  const e = sink();
  const code = await runMailImport(['mail', ...args, '--url', url, '--token', TEST_TOKEN], { out: o, err: e, env: { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(work, 'state.json') } });
  return { code, out: o.text, err: e.text };
}

async function docOf(messageId: string) {
  const r = await gw.db.query<{ doc_id: string; version_number: number; text: string }>(
    `SELECT doc_id, version_number, text FROM documents WHERE is_active_version AND metadata->>'message_id' = $1`,
    [messageId],
  );
  expect(r.rows).toHaveLength(1);
  return r.rows[0];
}

async function original(docId: string) {
  return gw.app.inject({ method: 'GET', url: `/v1/documents/${docId}/original`, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
}

async function originalRows(docId: string) {
  return (await gw.db.query<{ file_sha256: string; kind: string }>('SELECT file_sha256, kind FROM document_originals WHERE doc_id = $1', [docId])).rows;
}

beforeAll(async () => {
  work = tmpDir('memex-originals-');
  // The database URL in the config, as a server has it: a PostgreSQL backup runs pg_dump with it.
  const testDb = await createTestDatabase();
  gw = await startTestGateway({ testDb, config: { databaseUrl: testDb.url } as never, files: {} });
  store = gw.files!.store;
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  url = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
}, 120_000);

afterAll(async () => {
  await gw?.close();
  await fsp.rm(work, { recursive: true, force: true });
});

describe(`the original of a message, on ${backend}`, () => {
  it('is stored by the import and downloadable byte for byte, by the route and by memex open --raw', async () => {
    const raw = `${message(1)}\n-- \nSender One\n`;
    const md = maildir(path.join(work, 'Maildir'), { '1700000001.M1.host': raw, '1700000002.M2.host': message(2) });
    const first = await importMail([md]);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/done: 2 messages, 2 new/);
    expect(first.out).toMatch(/2 originals kept/);

    const doc = await docOf('orig-1@orig.example');
    const res = await original(doc.doc_id);
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('message/rfc822');
    expect(res.headers['content-disposition']).toMatch(/^attachment; filename="/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['content-security-policy']).toContain('sandbox');
    expect(res.rawPayload.equals(Buffer.from(raw))).toBe(true);

    const out = sink();
    const code = await runOpenCommand([doc.doc_id, '--raw', '--url', url, '--token', TEST_TOKEN], { out, err: sink(), env: {} });
    expect(code).toBe(0);
    expect(out.bytes.equals(Buffer.from(raw))).toBe(true);

    // A document without an original (not a message) answers 404, and so does --raw.
    const note = await gw.request('POST', '/v1/ingest', { source_type: 'note', source_id: 'n1', content: { data: 'A note, no message' } });
    expect((await original(note.json().doc_id)).statusCode).toBe(404);
    const err = sink();
    expect(await runOpenCommand([note.json().doc_id, '--raw', '--url', url, '--token', TEST_TOKEN], { out: sink(), err, env: {} })).not.toBe(0);
    expect(err.text).toMatch(/no original is kept/);
  });

  it('is one object for the same message read from a Maildir and from an mbox', async () => {
    const raw = message(3);
    await importMail([maildir(path.join(work, 'Maildir3'), { '1700000003.M3.host': raw })]);
    const mboxDir = path.join(work, 'mbox3');
    fs.mkdirSync(mboxDir);
    fs.writeFileSync(path.join(mboxDir, 'Archive.mbox'), `From MAILER-DAEMON Thu Nov 23 10:03:00 2023\n${raw}\n`);
    const again = await importMail([mboxDir]);
    expect(again.code).toBe(0);
    expect(again.out).toMatch(/0 new, 1 duplicates/);
    const doc = await docOf('orig-3@orig.example');
    const rows = await originalRows(doc.doc_id);
    expect(rows).toHaveLength(1);
    const sha = rows[0].file_sha256;
    expect((await gw.db.query('SELECT 1 FROM files WHERE file_sha256 = $1', [sha])).rows).toHaveLength(1);
    expect(await store.has(sha)).toBe(true);
  });

  it('is in the export with its bytes', async () => {
    const doc = await docOf('orig-2@orig.example');
    const res = await gw.request('GET', '/v1/export?format=ndjson');
    expect(res.statusCode).toBe(200);
    const line = res.body.split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((o) => o.type === 'document' && o.doc_id === doc.doc_id);
    expect(line.originals).toHaveLength(1);
    expect(line.originals[0]).toMatchObject({ kind: 'rfc822', mime_type: 'message/rfc822', size_bytes: Buffer.byteLength(message(2)) });
    expect(Buffer.from(line.originals[0].data_base64, 'base64').toString('utf8')).toBe(message(2));
  });

  it('rebuilds a message from its original with reindex --reparse: a new version of the same document', async () => {
    const doc = await docOf('orig-2@orig.example');
    // The text an older memex stored (cut by its body cleaner), as a new version the way a collector would have sent it.
    const cut = await gw.request('POST', '/v1/ingest', {
      source_type: 'email_local', source_id: 'email:orig-2@orig.example', title: 'Original 2', content: { data: 'Hello, this is message 2.' },
      metadata: { message_id: 'orig-2@orig.example' }, content_timestamp: '2023-11-23T10:02:00Z',
    });
    expect(cut.statusCode).toBe(202);
    expect(cut.json().doc_id).not.toBe(doc.doc_id);
    const before = await docOf('orig-2@orig.example');
    expect(before.text).not.toContain('harbour');
    const res = await gw.request('POST', '/v1/admin/email/reparse');
    expect(res.statusCode).toBe(200);
    const r = res.json();
    expect(r.repaired).toBeGreaterThanOrEqual(1);
    expect(r.failed).toBe(0);
    const after = await docOf('orig-2@orig.example');
    expect(after.doc_id).not.toBe(before.doc_id);
    expect(after.version_number).toBe(before.version_number + 1);
    expect(after.text).toContain('second line about the harbour');
    const identities = await gw.db.query(`SELECT DISTINCT external_id FROM documents WHERE metadata->>'message_id' = 'orig-2@orig.example'`);
    expect(identities.rows).toHaveLength(1);
    // The new version is linked to the same original; a second reparse changes nothing.
    expect((await originalRows(after.doc_id)).length).toBe(1);
    const again = (await gw.request('POST', '/v1/admin/email/reparse')).json();
    expect(again.repaired).toBe(0);
    expect(again.unchanged).toBeGreaterThanOrEqual(3);
  });

  it('import mail --rescan replaces text an older memex stored by a new version, and stores the original it lacked', async () => {
    const raw = message(4, 'Applied and queued for v5.4.\n---\n arch/mips/ps2/rom.c | 12 ++++\n');
    // What an older memex stored: the body cut at `---`, and no original.
    const old = await gw.request('POST', '/v1/ingest', {
      source_type: 'email_local',
      source_id: 'email:orig-4@orig.example',
      title: 'Original 4',
      content: { data: 'Applied and queued for v5.4.' },
      metadata: { message_id: 'orig-4@orig.example' },
      content_timestamp: '2023-11-23T10:04:00Z',
    });
    expect(old.statusCode).toBe(202);
    const md = maildir(path.join(work, 'Maildir4'), { '1700000004.M4.host': raw });
    const first = await importMail([md]);
    expect(first.code).toBe(0);
    await importMail([md]); // the manifest now knows it unchanged
    const rescan = await importMail([md, '--rescan']);
    expect(rescan.code).toBe(0);
    expect(rescan.out).toMatch(/mail rescan: \d+ repaired \(new versions\), \d+ unchanged, 0 new, 0 failed/);
    // The summary counts as the coverage line does: a message stored again as a new version is updated, not new.
    expect(first.out).toMatch(/coverage of .*Maildir4: 1 in the source: 1 stored \(1 updated\)/);
    expect(first.out).toMatch(/done: 1 messages, 0 new, 1 updated \(a new version\), 0 duplicates/);
    const versions = await gw.db.query<{ doc_id: string; version_number: number }>(
      `SELECT doc_id, version_number FROM documents WHERE source_type = 'email_local' AND external_id = 'email:orig-4@orig.example' ORDER BY version_number`,
    );
    expect(versions.rows.length).toBeGreaterThanOrEqual(2);
    const doc = await docOf('orig-4@orig.example');
    expect(doc.version_number).toBeGreaterThan(1);
    expect((await gw.db.query(`SELECT DISTINCT external_id FROM documents WHERE metadata->>'message_id' = 'orig-4@orig.example'`)).rows).toHaveLength(1);
    const res = await original(doc.doc_id);
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.toString('utf8')).toBe(raw);
  });

  it('survives a backup and restore', async () => {
    const doc = await docOf('orig-1@orig.example');
    const bytes = (await original(doc.doc_id)).rawPayload;
    const res = await gw.app.inject({ method: 'POST', url: '/v1/admin/backup', headers: { authorization: `Bearer ${TEST_TOKEN}` } });
    expect(res.statusCode).toBe(200);
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'memex-originals-restore-'));
    const file = path.join(dir, 'backup.tar');
    await fsp.writeFile(file, res.rawPayload);
    const objects = path.join(dir, 'restored', 'objects');
    const target = await LocalObjectStore.open({ root: objects });
    let drop: (() => Promise<void>) | undefined;
    let where: { dataDir?: string; url?: string };
    if (backend === 'postgres') {
      const empty = await createServerDatabase();
      drop = empty.drop;
      where = { url: empty.url };
    } else where = { dataDir: path.join(dir, 'restored') };
    await restoreBackup(file, {
      dataDir: where.dataDir ?? path.join(dir, 'restored'),
      databaseUrl: where.url,
      store: target,
      maxObjectBytes: 1 << 24,
    });
    const db = await openDatabase({ dataDir: where.dataDir, databaseUrl: where.url });
    const restored = await startTestGateway({ testDb: { db, drop: () => db.close() }, files: { store: target, dataDir: objects } });
    try {
      const again = await restored.app.inject({ method: 'GET', url: `/v1/documents/${doc.doc_id}/original`, headers: { authorization: `Bearer ${TEST_TOKEN}` } });
      expect(again.statusCode).toBe(200);
      expect(again.rawPayload.equals(bytes)).toBe(true);
    } finally {
      await restored.close();
      await drop?.();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  }, 180_000);

  it('gc keeps an original a document names and collects one nothing names', async () => {
    const doc = await docOf('orig-3@orig.example');
    const [{ file_sha256: kept }] = await originalRows(doc.doc_id);
    // An original whose link is gone (the row of a version erased some other way): nothing names it.
    const orphanBytes = Buffer.from(message(99));
    const put = await store.put((await import('node:stream')).Readable.from([orphanBytes]), { maxBytes: 1 << 20 });
    await gw.db.query(
      `INSERT INTO files (file_sha256, object_key, storage_backend, mime_type, size_bytes, enrichment_status, created_at)
       VALUES ($1, $2, 'local', 'message/rfc822', $3, 'skipped', now() - interval '2 hours')`,
      [put.sha256, put.objectKey, put.sizeBytes],
    );
    await gw.db.query(`UPDATE files SET created_at = now() - interval '2 hours' WHERE file_sha256 = $1`, [kept]);
    const r = await collectGarbage(gw.db, store, { graceMs: 0 });
    expect(r.files).toBeGreaterThanOrEqual(1);
    expect(await store.has(put.sha256)).toBe(false);
    expect(await store.has(kept)).toBe(true);
    expect((await original(doc.doc_id)).statusCode).toBe(200);
  });

  it('is erased by forget: the object file is gone', async () => {
    const doc = await docOf('orig-3@orig.example');
    const [{ file_sha256: sha }] = await originalRows(doc.doc_id);
    const file = (store as LocalObjectStore).localPath(objectKeyFor(sha));
    expect(fs.existsSync(file)).toBe(true);
    const res = await gw.request('POST', '/v1/forget', { doc_id: doc.doc_id });
    expect(res.statusCode).toBe(200);
    expect(fs.existsSync(file)).toBe(false);
    expect((await gw.db.query('SELECT 1 FROM files WHERE file_sha256 = $1', [sha])).rows).toHaveLength(0);
    expect((await original(doc.doc_id)).statusCode).toBe(404);
  });

  it('refuses bad uploads with a 4xx and keeps nothing', async () => {
    const form = (parts: [string, string | Blob][]) => {
      const f = new FormData();
      for (const [k, v] of parts) f.append(k, v);
      return f;
    };
    const send = async (body: FormData) => {
      const r = await fetch(`${url}/v1/ingest/originals`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}` }, body });
      return { status: r.status, body: (await r.json()) as any };
    };
    const objectsBefore = (await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM files')).rows[0].n;
    const note = (await gw.request('POST', '/v1/ingest', { source_type: 'note', source_id: 'n2', content: { data: 'not a message' } })).json().doc_id;
    const bytes = new Blob([message(77)], { type: 'message/rfc822' });
    const r = await send(form([
      ['meta', JSON.stringify({ doc_id: 'not-a-uuid' })], ['original', bytes],
      ['meta', JSON.stringify({ doc_id: '00000000-0000-4000-8000-000000000000' })], ['original', bytes],
      ['meta', JSON.stringify({ doc_id: note })], ['original', bytes],
      ['meta', JSON.stringify({ doc_id: note, kind: 'zip' })], ['original', bytes],
    ]));
    expect(r.status).toBe(207);
    expect(r.body.results.map((x: any) => x.status_code)).toEqual([422, 404, 422, 422]);
    expect((await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM files')).rows[0].n).toBe(objectsBefore);
    expect(await store.has((await import('node:crypto')).createHash('sha256').update(message(77)).digest('hex'))).toBe(false);
    const notMultipart = await fetch(`${url}/v1/ingest/originals`, { method: 'POST', headers: { authorization: `Bearer ${TEST_TOKEN}`, 'content-type': 'application/json' }, body: '{}' });
    expect(notMultipart.status).toBe(422);
  });
});
