/**
 * `memex restore` of a malformed or cut backup (issue 47 item 6): each one is refused with one line on
 * stderr and exit status 1 — no stack trace, nothing read into memory beyond its bounds, nothing of
 * it left in TMPDIR, and the target (DATA_DIR, or the empty database) exactly as it was. A restore
 * killed part-way leaves the target as it was too, and the next restore removes what it left.
 */
import crypto from 'node:crypto';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import tar from 'tar-stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/index.ts';
import { listMigrations } from '../../src/db/migrate.ts';
import { writeBackup } from '../../src/maintenance/backup.ts';
import { backend, createServerDatabase, createTestDatabase } from '../helpers/db.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';
import { MEMEX_BIN, runMemex } from '../helpers/memex-bin.ts';

let gw: TestGateway;
let dir: string;
let realBackup: Buffer;
const drops: (() => Promise<void>)[] = [];

/** A tar from [name, body] pairs, in order. */
function tarOf(members: [string, Buffer][]): Promise<Buffer> {
  const pack = tar.pack();
  const chunks: Buffer[] = [];
  pack.on('data', (c: unknown) => chunks.push(c as Buffer));
  for (const [name, body] of members) pack.entry({ name }, body);
  pack.finalize();
  return new Promise((resolve) => pack.on('end', () => resolve(Buffer.concat(chunks))));
}

/** A ustar header that claims `size` bytes, followed by only `body` (a member too big to hold in memory). */
function lyingHeader(name: string, size: number, body: Buffer): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write('0000600\0', 100);
  h.write('0000000\0', 108);
  h.write('0000000\0', 116);
  h.write(`${size.toString(8).padStart(11, '0')}\0`, 124);
  h.write(`${Math.floor(Date.now() / 1000).toString(8).padStart(11, '0')}\0`, 136);
  h.write('        ', 148);
  h.write('0', 156);
  h.write('ustar\x0000', 257);
  let sum = 0;
  for (const b of h) sum += b;
  h.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148);
  return Buffer.concat([h, body]);
}

const manifest = (over: Record<string, unknown> = {}) =>
  Buffer.from(
    JSON.stringify({
      type: 'memex-backup',
      format_version: 2,
      created_at: '2026-11-30T10:00:00.000Z',
      database: backend,
      migrations: listMigrations().map((m) => m.version),
      tables: [],
      documents: 0,
      objects: 0,
      ...over,
    }),
  );
const end = Buffer.from(JSON.stringify({ type: 'memex-backup-end', objects: 0 }));

interface Target {
  env: NodeJS.ProcessEnv;
  dataDir: string;
  tmp: string;
  url?: string;
}

async function newTarget(name: string): Promise<Target> {
  const dataDir = path.join(dir, name, 'data');
  const tmp = path.join(dir, name, 'tmp');
  await fsp.mkdir(dataDir, { recursive: true });
  await fsp.mkdir(tmp, { recursive: true });
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: dir, TMPDIR: tmp, DATA_DIR: dataDir, FILE_MAX_BYTES: String(1 << 20) };
  let url: string | undefined;
  if (backend === 'postgres') {
    const empty = await createServerDatabase();
    drops.push(empty.drop);
    url = empty.url;
    env.DATABASE_URL = url;
  }
  return { env, dataDir, tmp, url };
}

async function tablesIn(url: string): Promise<string[]> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return (await c.query(`SELECT relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND relkind = 'r'`)).rows.map(
      (r) => r.relname,
    );
  } finally {
    await c.end();
  }
}

/** The target as it was: no database made, no stored file kept, nothing in TMPDIR. */
/** What memex put in TMPDIR (tsx, which runs the CLI from source here, keeps its own cache there). */
const memexTmp = async (t: Target) => (await fsp.readdir(t.tmp)).filter((n) => n.startsWith('memex'));

async function expectUntouched(t: Target) {
  expect(await memexTmp(t), 'TMPDIR').toEqual([]);
  const left = (await fsp.readdir(t.dataDir)).filter((n) => n !== 'objects');
  expect(left, 'DATA_DIR').toEqual([]);
  const objects = path.join(t.dataDir, 'objects', 'sha256');
  const stored = fs.existsSync(objects) ? (await fsp.readdir(objects, { recursive: true })).filter((n) => /[0-9a-f]{64}$/.test(String(n))) : [];
  expect(stored, 'stored files').toEqual([]);
  if (t.url) expect(await tablesIn(t.url), 'tables in the database').toEqual([]);
}

beforeAll(async () => {
  dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'memex-restore-malformed-'));
  const testDb = await createTestDatabase();
  gw = await startTestGateway({ testDb, config: { databaseUrl: testDb.url } as any, files: {} });
  for (let i = 0; i < 40; i++) {
    const res = await gw.request('POST', '/v1/ingest', {
      source_type: 'note',
      source_id: `n${i}`,
      title: `Tide table ${i}`,
      content: { data: `High water at the harbour is at ${i % 12} o'clock. ${crypto.randomBytes(2000).toString('hex')}` },
      content_timestamp: '2026-11-20T09:00:00Z',
    });
    expect(res.statusCode).toBe(202);
  }
  const chunks: Buffer[] = [];
  const out = new (await import('node:stream')).Writable({
    write(c, _e, done) {
      chunks.push(c);
      done();
    },
  });
  await writeBackup({ db: gw.db, databaseUrl: testDb.url, store: gw.files!.store, maxObjectBytes: 1 << 20 } as any, out);
  realBackup = Buffer.concat(chunks);
}, 240_000);

afterAll(async () => {
  await gw?.close();
  for (const d of drops) await d().catch(() => undefined);
  await fsp.rm(dir, { recursive: true, force: true });
});

describe(`a malformed backup on ${backend}`, () => {
  it('is refused in one line, exit 1, leaving nothing behind', async () => {
    const sha = crypto.createHash('sha256').update(Buffer.alloc(2 << 20, 7)).digest('hex');
    const cases: [string, () => Promise<Buffer>, RegExp][] = [
      ['truncated tar', async () => realBackup.subarray(0, Math.floor(realBackup.length * 0.6)), /cut short|not a whole tar|incomplete/],
      ['missing manifest', () => tarOf([['objects/' + 'a'.repeat(64), Buffer.from('x')]]), /not a memex backup/],
      ['format_version "abc"', () => tarOf([['memex-backup.json', manifest({ format_version: 'abc' })], ['memex-backup-end.json', end]]), /format_version "abc"/],
      ['format_version 0', () => tarOf([['memex-backup.json', manifest({ format_version: 0 })], ['memex-backup-end.json', end]]), /format_version 0/],
      ['format_version 99', () => tarOf([['memex-backup.json', manifest({ format_version: 99 })], ['memex-backup-end.json', end]]), /newer than this memex/],
      ['manifest not JSON', () => tarOf([['memex-backup.json', Buffer.from('{"type": "memex-backup", ')]]), /not JSON/],
      [
        'unknown 2 GiB member',
        async () => Buffer.concat([await tarOf([['memex-backup.json', manifest()]]).then((b) => b.subarray(0, b.length - 1024)), lyingHeader('notes.bin', 2 ** 31, Buffer.alloc(4096))]),
        /unexpected member "notes.bin"/,
      ],
      ['member path with ..', () => tarOf([['memex-backup.json', manifest()], ['objects/../../escaped', Buffer.from('x')], ['memex-backup-end.json', end]]), /unexpected member "objects\/\.\.\/\.\.\/escaped"/],
      ['oversize member', () => tarOf([['memex-backup.json', manifest()], [`objects/${sha}`, Buffer.alloc(2 << 20, 7)], ['memex-backup-end.json', end]]), /more than the 1048576 allowed/],
      ['no end member', () => tarOf([['memex-backup.json', manifest()]]), /incomplete/],
    ];
    const seen: string[] = [];
    for (const [name, make, message] of cases) {
      const t = await newTarget(name.replace(/\W+/g, '-'));
      const file = path.join(dir, `${name.replace(/\W+/g, '-')}.tar`);
      await fsp.writeFile(file, await make());
      const r = await runMemex(['restore', file], t.env, { timeoutMs: 180_000 });
      const lines = r.stderr.trim().split('\n').filter(Boolean);
      seen.push(`${name}: ${r.code} ${lines.join(' | ').slice(0, 300)}`);
      expect(r.code, `${name}: ${r.stderr}`).toBe(1);
      expect(lines, name).toHaveLength(1);
      expect(lines[0], name).toMatch(/^memex restore: /);
      expect(lines[0], name).toMatch(message);
      expect(r.stderr, name).not.toMatch(/^\s+at /m);
      await expectUntouched(t);
    }
    console.log(seen.join('\n'));
  }, 900_000);

  it('killed part-way leaves the target as it was, and the next restore removes what it left', async () => {
    const t = await newTarget('killed');
    const file = path.join(dir, 'real.tar');
    await fsp.writeFile(file, realBackup);
    const child = spawn(process.execPath, [MEMEX_BIN, 'restore', file], { env: t.env, stdio: ['ignore', 'pipe', 'pipe'] });
    const exited = new Promise((r) => child.on('close', r));
    // Killed as soon as it is at work on the target: its staging folder, or an older memex's copy in TMPDIR.
    const atWork = async () => {
      const inData = (await fsp.readdir(t.dataDir)).some((n) => n.startsWith('.restore-') || n === 'pglite');
      const inTmp = (await memexTmp(t)).length > 0;
      if (!t.url) return inData || inTmp;
      const c = new pg.Client({ connectionString: t.url });
      await c.connect();
      try {
        const n = (await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows[0].n;
        return n > 0 || inTmp;
      } finally {
        await c.end();
      }
    };
    for (let i = 0; i < 1200 && !(await atWork()); i++) await new Promise((r) => setTimeout(r, 50));
    child.kill('SIGKILL');
    await exited;
    if (t.url) {
      // The server rolls the killed connection's transaction back once it notices.
      for (let i = 0; i < 200; i++) {
        const c = new pg.Client({ connectionString: t.url });
        await c.connect();
        const n = (await c.query('SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()')).rows[0].n;
        await c.end();
        if (n === 0) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      expect(await tablesIn(t.url)).toEqual([]);
    }
    expect(await memexTmp(t), 'TMPDIR after the kill').toEqual([]);
    const pgliteDir = path.join(t.dataDir, 'pglite');
    expect(fs.existsSync(pgliteDir) ? await fsp.readdir(pgliteDir) : [], 'DATA_DIR/pglite after the kill').toEqual([]);

    const again = await runMemex(['restore', file], t.env, { timeoutMs: 300_000 });
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/40 document versions/);
    expect((await fsp.readdir(t.dataDir)).filter((n) => n.startsWith('.restore-')), 'staging folders after the next restore').toEqual([]);
    const db = await openDatabase({ dataDir: t.url ? undefined : t.dataDir, databaseUrl: t.url });
    try {
      expect((await db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents')).rows[0].n).toBe(40);
    } finally {
      await db.close();
    }
  }, 900_000);

  it('a damaged embedded database says what it is and what to do', async () => {
    if (backend !== 'pglite') return;
    const data = path.join(dir, 'damaged');
    await fsp.mkdir(path.join(data, 'pglite'), { recursive: true });
    await fsp.writeFile(path.join(data, 'pglite', 'PG_VERSION'), '17\n');
    await expect(openDatabase({ dataDir: data })).rejects.toThrow(/could not be opened.*memex restore/);
  }, 120_000);
});
