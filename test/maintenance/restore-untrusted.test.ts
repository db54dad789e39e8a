/**
 * A backup file from anywhere is never code (issue 47 item 3). A format-1 backup — a pg_dump archive
 * whose CHECK function runs `COPY … TO PROGRAM`, or a PGlite data directory carrying its own function
 * and trigger — is refused and runs nothing. A format-2 backup whose manifest or rows name a table or
 * column memex's migrations did not make is refused, and a good one leaves the target with exactly
 * the functions and triggers memex's migrations make.
 */
import crypto from 'node:crypto';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase, type Database } from '../../src/db/index.ts';
import { writeBackup } from '../../src/maintenance/backup.ts';
import { backend, createServerDatabase, createTestDatabase } from '../helpers/db.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { runMemex } from '../helpers/memex-bin.ts';

let gw: TestGateway;
let dir: string;
let sourceUrl: string | undefined;
let members: [string, Buffer][];
const drops: (() => Promise<void>)[] = [];

function tarOf(list: [string, Buffer][]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  for (const [name, body] of list) pack.entry({ name }, body);
  pack.finalize();
  return new Promise((resolve) => pack.on('end', () => resolve(Buffer.concat(chunks))));
}

async function untar(bytes: Buffer): Promise<[string, Buffer][]> {
  const out: [string, Buffer][] = [];
  const extract = tar.extract();
  extract.on('entry', (h, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => (out.push([h.name, Buffer.concat(chunks)]), next()));
  });
  await new Promise<void>((resolve, reject) => {
    extract.on('finish', resolve).on('error', reject);
    extract.end(bytes);
  });
  return out;
}

async function target(name: string) {
  const dataDir = path.join(dir, name);
  await fsp.mkdir(dataDir, { recursive: true });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, TMPDIR: dir, DATA_DIR: dataDir };
  let url: string | undefined;
  if (backend === 'postgres') {
    const empty = await createServerDatabase();
    drops.push(empty.drop);
    url = env.DATABASE_URL = empty.url;
  }
  return { dataDir, env, url };
}

/** Functions and triggers in public, by name (what a restored database could run). */
async function code(db: Database): Promise<string[]> {
  const r = await db.query<{ n: string }>(
    `SELECT 'function ' || p.proname AS n FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace WHERE s.nspname = 'public'
     UNION ALL SELECT 'trigger ' || t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace s ON s.oid = c.relnamespace
      WHERE s.nspname = 'public' AND NOT t.tgisinternal
     UNION ALL SELECT 'check ' || k.conname FROM pg_constraint k JOIN pg_namespace s ON s.oid = k.connamespace WHERE s.nspname = 'public' AND k.contype = 'c'
     ORDER BY 1`,
  );
  return r.rows.map((x) => x.n);
}

beforeAll(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'memex-restore-untrusted-'));
  const testDb = await createTestDatabase();
  sourceUrl = testDb.url;
  gw = await startTestGateway({ testDb, config: { databaseUrl: testDb.url } as any, files: {} });
  for (let i = 0; i < 3; i++) {
    const res = await gw.request('POST', '/v1/ingest', { source_type: 'note', source_id: `n${i}`, title: `Note ${i}`, content: { data: `Ferry times ${i}` } });
    expect(res.statusCode).toBe(202);
  }
  const chunks: Buffer[] = [];
  const out = new Writable({ write: (c, _e, done) => (chunks.push(c), done()) });
  await writeBackup({ db: gw.db, databaseUrl: testDb.url, store: gw.files!.store, maxObjectBytes: 1 << 20 } as any, out);
  members = await untar(Buffer.concat(chunks));
}, 240_000);

afterAll(async () => {
  await gw?.close();
  for (const d of drops) await d().catch(() => undefined);
  await fsp.rm(dir, { recursive: true, force: true });
});

describe(`restoring an untrusted backup on ${backend}`, () => {
  it('refuses a format-1 database dump that carries code, and runs none of it', async () => {
    const marker = path.join(os.tmpdir(), `memex-evil-${crypto.randomBytes(6).toString('hex')}`);
    let dumpMember: [string, Buffer];
    if (backend === 'postgres') {
      const evil = await createServerDatabase();
      drops.push(evil.drop);
      const db = await openDatabase({ databaseUrl: evil.url });
      await db.exec(`CREATE FUNCTION public.memex_check() RETURNS boolean LANGUAGE plpgsql AS $$
        BEGIN EXECUTE format('COPY (SELECT 1) TO PROGRAM %L', 'id > ${marker}'); RETURN true; END $$`);
      await db.exec(`INSERT INTO system_settings (key, value) VALUES ('planted', '1'::jsonb)`);
      await db.exec(`ALTER TABLE system_settings ADD CONSTRAINT planted CHECK (memex_check())`);
      await db.close();
      fs.rmSync(marker, { force: true }); // it ran once here, where it was planted
      const file = path.join(dir, 'evil.dump');
      execFileSync('pg_dump', ['--format=custom', '--no-owner', '--no-privileges', `--file=${file}`, `--dbname=${evil.url}`]);
      dumpMember = ['database/postgres.dump', await fsp.readFile(file)];
    } else {
      const db = await openDatabase({});
      await db.exec(`CREATE FUNCTION public.planted_fn() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$`);
      await db.exec(`CREATE TRIGGER planted BEFORE INSERT ON documents FOR EACH ROW EXECUTE FUNCTION planted_fn()`);
      dumpMember = ['database/pglite.tar.gz', Buffer.from(await (await db.dumpDataDir!()).arrayBuffer())];
      await db.close();
    }
    const v1 = { type: 'memex-backup', format_version: 1, created_at: '2026-11-25T10:00:00.000Z', database: backend, objects: 0, documents: 0 };
    const file = path.join(dir, 'format-1.tar');
    await fsp.writeFile(file, await tarOf([dumpMember, ['memex-backup.json', Buffer.from(JSON.stringify(v1))]]));

    const t = await target('format-1');
    const r = await runMemex(['restore', file], t.env, { timeoutMs: 300_000 });
    expect(fs.existsSync(marker), 'the dump ran COPY … TO PROGRAM').toBe(false);
    expect(r.code, r.stdout + r.stderr).toBe(1);
    expect(r.stderr.trim()).toMatch(/^memex restore: this is a format-1 backup .*can carry code/);
    expect(fs.existsSync(path.join(t.dataDir, 'pglite'))).toBe(false);
    if (t.url) {
      const c = new pg.Client({ connectionString: t.url });
      await c.connect();
      const n = (await c.query(`SELECT count(*)::int AS n FROM pg_proc p JOIN pg_namespace s ON s.oid = p.pronamespace WHERE s.nspname = 'public'`)).rows[0].n;
      await c.end();
      expect(n).toBe(0);
    }
  }, 600_000);

  it("refuses a format-2 backup naming a table or column that is not memex's", async () => {
    const manifest = JSON.parse(members[0][1].toString());
    const withManifest = (m: unknown): [string, Buffer][] => [['memex-backup.json', Buffer.from(JSON.stringify(m))], ...members.slice(1)];
    const docs = members.find(([n]) => n.startsWith('database/documents/'))!;
    const cases: [string, [string, Buffer][], RegExp][] = [
      ['a foreign table', withManifest({ ...manifest, tables: [...manifest.tables, { name: 'pg_evil', columns: ['x'], rows: 0 }] }), /table pg_evil, which is not one of memex's tables/],
      [
        'a foreign column',
        withManifest({ ...manifest, tables: manifest.tables.map((t: any) => (t.name === 'documents' ? { ...t, columns: [...t.columns, 'evil'] } : t)) }),
        /table documents does not match memex's.*columns memex does not have: evil/,
      ],
      [
        'a row with a foreign key',
        members.map(([n, b]): [string, Buffer] => (n === docs[0] ? [n, Buffer.from(b.toString().replace(/^\{/, '{"evil": "x", '))] : [n, b])),
        /a row of documents has a column "evil"/,
      ],
      ['a table name that is SQL', withManifest({ ...manifest, tables: [{ name: 'documents"; DROP TABLE people; --', columns: ['x'], rows: 0 }] }), /malformed at \/tables\/0\/name/],
    ];
    for (const [name, list, message] of cases) {
      const t = await target(`v2-${name.replace(/\W+/g, '-')}`);
      const file = path.join(dir, `${name.replace(/\W+/g, '-')}.tar`);
      await fsp.writeFile(file, await tarOf(list));
      const r = await runMemex(['restore', file], t.env, { timeoutMs: 300_000 });
      expect(r.code, `${name}: ${r.stderr}`).toBe(1);
      expect(r.stderr.trim(), name).toMatch(message);
      expect(fs.existsSync(path.join(t.dataDir, 'pglite')), name).toBe(false);
    }
  }, 900_000);

  it('leaves exactly the functions and triggers memex makes', async () => {
    const t = await target('good');
    const file = path.join(dir, 'good.tar');
    await fsp.writeFile(file, await tarOf(members));
    const r = await runMemex(['restore', file], t.env, { timeoutMs: 300_000 });
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/3 document versions/);
    const restored = await openDatabase({ dataDir: t.url ? undefined : t.dataDir, databaseUrl: t.url, migrate: false });
    const fresh = await createTestDatabase();
    try {
      expect(await code(restored)).toEqual(await code(fresh.db));
      expect((await restored.query<{ n: number }>('SELECT count(*)::int AS n FROM documents')).rows[0].n).toBe(3);
    } finally {
      await restored.close();
      await fresh.drop();
    }
    void sourceUrl;
  }, 600_000);
});
