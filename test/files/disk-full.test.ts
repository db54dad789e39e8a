/**
 * A full disk (issue 47 item 7) is the server's condition: an upload onto a really full disk (DATA_DIR
 * on a small tmpfs, filled) answers 507 STORAGE.DISK_FULL "the disk holding DATA_DIR is full", the
 * same keep-alive connection answers the next request, GET /v1/status says so, nothing is stored
 * half, and after space is freed the same upload is stored. A database that meets a full disk (its
 * server's disk cannot be filled from here: an injected PostgreSQL 53100 error) makes batch items
 * answer 507 too, and loses nothing that was acknowledged.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Database } from '../../src/db/types.ts';
import { backend, createTestDatabase } from '../helpers/db.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { fileUpload } from './multipart.ts';

let gw: TestGateway;
let mnt: string;
let mounted = false;
let port: number;
let failWrites = false;
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One request on the agent's single keep-alive socket; says whether the socket was reused. */
function send(method: string, url: string, body?: Buffer, headers: Record<string, string> = {}): Promise<{ status: number; json: any; reused: boolean }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, method, path: url, agent, headers: { authorization: `Bearer ${TEST_TOKEN}`, ...(body ? { 'content-length': String(body.length) } : {}), ...headers } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString();
          let json: any = text;
          try {
            json = JSON.parse(text);
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, json, reused: req.reusedSocket });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** Fills the tmpfs to the last byte. */
function fill(): string {
  const filler = path.join(mnt, 'filler');
  try {
    execFileSync('dd', ['if=/dev/zero', `of=${filler}`, 'bs=64k'], { stdio: 'ignore' });
  } catch {
    /* dd stops at ENOSPC: that is the point */
  }
  return filler;
}

beforeAll(async () => {
  mnt = await fsp.mkdtemp(path.join(os.tmpdir(), 'memex-disk-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=16m', 'tmpfs', mnt], { stdio: 'ignore' });
    mounted = true;
  } catch {
    mounted = false;
  }
  const testDb = await createTestDatabase();
  // The database's own full disk is injected (the PostgreSQL server's disk is not ours to fill).
  const db = testDb.db;
  const faulty: Database = Object.create(db);
  faulty.transaction = async (fn) => {
    if (failWrites) {
      throw Object.assign(new Error('could not extend file "base/16384/16402": No space left on device'), { code: '53100' });
    }
    return db.transaction(fn);
  };
  gw = await startTestGateway({ testDb: { ...testDb, db: faulty }, config: { databaseUrl: testDb.url } as any, files: { dataDir: mounted ? mnt : undefined } });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  port = (gw.app.server.address() as net.AddressInfo).port;
}, 180_000);

afterAll(async () => {
  agent.destroy();
  await gw?.close();
  if (mounted) execFileSync('umount', ['-l', mnt], { stdio: 'ignore' });
  await fsp.rm(mnt, { recursive: true, force: true });
});

describe(`a full disk on ${backend}`, () => {
  it('answers an upload 507, keeps the connection, shows it on /v1/status, and stores it once there is room', async (ctx) => {
    if (!mounted) ctx.skip(); // needs root for a tmpfs; the batch test below needs nothing
    const bytes = Buffer.from(`Minutes of the harbour board. ${'x'.repeat(200_000)}`);
    const up = fileUpload({ path: '/docs/minutes.txt', mtime: 1767225600 }, bytes, 'minutes.txt', 'text/plain');
    const filler = fill();

    const refused = await send('POST', '/v1/ingest/file', up.payload, up.headers);
    expect(refused.status, JSON.stringify(refused.json)).toBe(507);
    expect(refused.json.error.error_code).toBe('STORAGE.DISK_FULL');
    expect(refused.json.detail).toMatch(/the disk holding DATA_DIR is full/);

    const status = await send('GET', '/v1/status');
    expect(status.reused, 'the next request went on the same connection').toBe(true);
    expect(status.status).toBe(200);
    expect(status.json.disk).toMatchObject({ full: true, last_full_disk: 'data_dir' });
    expect(status.json.disk.message).toMatch(/the disk holding DATA_DIR is full/);
    expect((await gw.db.query<{ n: number }>('SELECT count(*)::int AS n FROM files')).rows[0].n, 'nothing half-stored').toBe(0);
    const temp = await fsp.readdir(path.join(mnt, 'objects', 'tmp'));
    expect(temp, 'no partial upload left').toEqual([]);

    await fsp.rm(filler);
    const again = await send('POST', '/v1/ingest/file', up.payload, up.headers);
    expect(again.status, JSON.stringify(again.json)).toBe(202);
    expect((await send('GET', '/v1/status')).json.disk.full).toBe(false);
  }, 180_000);

  it('answers a batch 507 when the database meets a full disk, and loses nothing acknowledged', async () => {
    const item = (i: number) => ({ source_type: 'note', source_id: `b${i}`, title: `Tide ${i}`, content: { data: `High water at ${i}` } });
    const ok = await send('POST', '/v1/ingest:batch', Buffer.from(JSON.stringify({ documents: [item(1)] })), { 'content-type': 'application/json' });
    expect(ok.status).toBe(202);
    failWrites = true;
    const full = await send('POST', '/v1/ingest:batch', Buffer.from(JSON.stringify({ documents: [item(2), item(3)] })), { 'content-type': 'application/json' });
    failWrites = false;
    // The batch's one transaction failed: the whole batch is refused as the server's condition, nothing stored.
    expect(full.status, JSON.stringify(full.json).slice(0, 400)).toBe(507);
    expect(full.json.error.error_code).toBe('STORAGE.DISK_FULL');
    expect(full.json.detail).toMatch(/the disk holding the database is full/);
    const next = await send('GET', '/v1/healthz');
    expect(next.status).toBe(200);
    expect(next.reused).toBe(true);
    const docs = (await gw.db.query<{ source_id: string }>("SELECT external_id AS source_id FROM documents WHERE is_active_version AND source_type = 'note' ORDER BY 1")).rows.map((r) => r.source_id);
    expect(docs).toEqual(['b1']);
  }, 180_000);
});
void fs;
