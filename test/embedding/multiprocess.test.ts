/**
 * Several worker processes on one PostgreSQL. PGlite has a single session, so two workers cannot
 * compete there and SKIP LOCKED cannot be shown: these tests run with MEMEX_TEST_BACKEND=postgres.
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend, createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { embeddingStatus } from '../../src/embedding/ops.ts';
import { insertManyDocuments, waitFor } from './fixtures.ts';

const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'worker-child.ts');
const onPg = backend === 'postgres';

let t: TestDatabase;
let tmp: string;
const children: ChildProcess[] = [];

function spawnWorker(env: Record<string, string>): Promise<ChildProcess> {
  const child = fork(CHILD, [], {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, DATABASE_URL: t.url!, ...env },
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    child.once('message', (m) => (m === 'ready' ? resolve(child) : reject(new Error(String(m)))));
    child.once('exit', (code) => reject(new Error(`worker exited early with ${code}`)));
  });
}

function exited(c: ChildProcess): Promise<void> {
  return c.exitCode !== null || c.signalCode !== null ? Promise.resolve() : new Promise((r) => c.once('exit', () => r()));
}

const lines = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean) : []);

async function allDone(): Promise<boolean> {
  const s = await embeddingStatus(t.db);
  return s.chunks.pending + s.chunks.processing === 0;
}

// PGlite has one session, so SKIP LOCKED between worker processes can only be shown on PostgreSQL;
// on PGlite these tests are reported as skipped under this name.
describe.skipIf(!onPg)('multi-process workers on PostgreSQL (skipped on PGlite: one session, no SKIP LOCKED between processes)', () => {
  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-mp-'));
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await t?.drop();
    fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('two worker processes embed 2,000 chunks: none embedded twice, none left behind', async () => {
    t = await createTestDatabase();
    const texts = Array.from({ length: 2000 }, (_, i) => `Message ${i}: the meeting about project ${i % 37} moved to room ${i % 11}.`);
    await insertManyDocuments(t.db, texts);
    const logs = [path.join(tmp, 'a.log'), path.join(tmp, 'b.log')];
    const workers = await Promise.all(logs.map((l) => spawnWorker({ CALL_LOG: l, BATCH: '25', CONCURRENCY: '2' })));
    for (const w of workers) w.send('go');
    await waitFor(allDone, 120_000, 100);
    for (const w of workers) w.kill('SIGTERM');
    await Promise.all(workers.map(exited));

    const a = lines(logs[0]);
    const b = lines(logs[1]);
    expect(a.length).toBeGreaterThan(0);
    expect(b.length).toBeGreaterThan(0);
    const counts = new Map<string, number>();
    for (const x of [...a, ...b]) counts.set(x, (counts.get(x) ?? 0) + 1);
    expect(counts.size).toBe(2000);
    expect([...counts.values()].filter((n) => n > 1)).toEqual([]);
    expect(a.length + b.length).toBe(2000);

    const s = await embeddingStatus(t.db);
    expect(s.chunks).toEqual({ pending: 0, processing: 0, embedded: 2000, failed: 0, total: 2000 });
    expect(s.models).toEqual([{ model: 'hash-64', dimensions: 64, state: 'active', vectors: 2000 }]);
    const docs = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM documents WHERE status = 'indexed'");
    expect(Number(docs.rows[0].n)).toBe(2000);
    const subs = await t.db.query<{ n: number }>("SELECT count(*)::int AS n FROM ingest_submissions WHERE status = 'completed'");
    expect(Number(subs.rows[0].n)).toBe(2000);
    await t.drop();
  }, 180_000);

  it('a worker killed with SIGKILL mid-batch: its chunks return to pending after the lease and another worker finishes them', async () => {
    t = await createTestDatabase();
    const texts = Array.from({ length: 100 }, (_, i) => `Note ${i} about the garden, the roof and the invoice ${i * 7}.`);
    await insertManyDocuments(t.db, texts);
    const logA = path.join(tmp, 'kill-a.log');
    const logB = path.join(tmp, 'kill-b.log');
    const a = await spawnWorker({ CALL_LOG: logA, MODE: 'hang', BATCH: '10', CONCURRENCY: '1', LEASE_SECONDS: '3' });
    a.send('go');
    await waitFor(async () => lines(logA).length === 10, 30_000);
    const held = lines(logA);
    const proc = await t.db.query<{ text: string }>("SELECT text FROM chunks WHERE embedding_status = 'processing'");
    expect(proc.rows.map((r) => r.text).sort()).toEqual([...held].sort());
    a.kill('SIGKILL');
    await exited(a);
    expect(a.signalCode).toBe('SIGKILL');

    const b = await spawnWorker({ CALL_LOG: logB, BATCH: '10', CONCURRENCY: '1', LEASE_SECONDS: '3' });
    b.send('go');
    await waitFor(allDone, 60_000, 100);
    b.kill('SIGTERM');
    await exited(b);

    const doneByB = lines(logB);
    for (const h of held) expect(doneByB).toContain(h);
    expect(new Set(doneByB).size).toBe(doneByB.length);
    expect(doneByB).toHaveLength(100);
    const s = await embeddingStatus(t.db);
    expect(s.chunks).toEqual({ pending: 0, processing: 0, embedded: 100, failed: 0, total: 100 });
    expect(s.documents).toEqual({ enriched: 0, indexed: 100 });
  }, 120_000);
});
