/**
 * Garbage collection on the active backend: chunks of superseded versions, vectors of retired
 * models, file records nothing uses and stray objects go; what documents use stays and search
 * still answers.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectGarbage, startPeriodicGc } from '../../src/maintenance/gc.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

let gw: TestGateway;

async function count(sql: string, params: unknown[] = []): Promise<number> {
  return (await gw.db.query<{ n: number }>(sql, params)).rows[0].n;
}

beforeAll(async () => {
  gw = await startTestGateway({ files: {} });
}, 120_000);

afterAll(async () => {
  await gw?.close();
});

describe('garbage collection', () => {
  it('collects what no document references, keeps the rest, and counts the same in a dry run', async () => {
    const ingest = (data: string) =>
      gw.request('POST', '/v1/ingest', { source_type: 'note', source_id: 'gc-note', content: { data } });
    expect((await ingest('The first draft mentions a narwhal.')).statusCode).toBe(202);
    expect((await ingest('The second draft mentions a manatee.')).statusCode).toBe(202);
    expect(
      (await gw.request('POST', '/v1/ingest', { source_type: 'note', source_id: 'other', content: { data: 'A lighthouse keeper' } })).statusCode,
    ).toBe(202);
    // A vector of a retired model, a file record nothing uses, an object no record names.
    const chunk = (await gw.db.query<{ chunk_id: string }>(`SELECT chunk_id FROM chunks WHERE text LIKE '%lighthouse%'`)).rows[0].chunk_id;
    await gw.db.query(`INSERT INTO embedding_models (model, dimensions, state) VALUES ('old-model', 3, 'retired')`);
    await gw.db.query(`INSERT INTO chunk_embeddings (model, chunk_id, embedding) VALUES ('old-model', $1, '[1,0,0]')`, [chunk]);
    const store = gw.files!.store;
    const unused = await store.put(Readable.from([Buffer.from('an attachment nothing uses')]), { maxBytes: 1 << 20 });
    await gw.db.query(
      `INSERT INTO files (file_sha256, object_key, storage_backend, size_bytes) VALUES ($1, $2, 'local', $3)`,
      [unused.sha256, unused.objectKey, unused.sizeBytes],
    );
    const stray = await store.put(Readable.from([Buffer.from('left by a crash before cataloging')]), { maxBytes: 1 << 20 });

    const chunksBefore = await count('SELECT count(*)::int AS n FROM chunks');
    const dry = await gw.request('POST', '/v1/admin/gc', { dry_run: true, grace_seconds: 0 });
    expect(dry.statusCode).toBe(200);
    expect(dry.json()).toMatchObject({ dry_run: true, chunks: 1, retired_vectors: 1, files: 1, objects: 2 });
    expect(await count('SELECT count(*)::int AS n FROM chunks')).toBe(chunksBefore);
    expect(await store.has(stray.sha256)).toBe(true);

    // The default grace period keeps what was just written; retired vectors need no grace.
    const young = await gw.request('POST', '/v1/admin/gc', {});
    expect(young.json()).toMatchObject({ chunks: 0, files: 0, objects: 0, retired_vectors: 1 });

    const real = await gw.request('POST', '/v1/admin/gc', { grace_seconds: 0 });
    expect(real.json()).toMatchObject({ dry_run: false, chunks: 1, retired_vectors: 0, files: 1, objects: 2 });
    expect(await count(`SELECT count(*)::int AS n FROM chunks WHERE text LIKE '%narwhal%'`)).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM chunks WHERE text LIKE '%manatee%'`)).toBe(1);
    expect(await count(`SELECT count(*)::int AS n FROM chunk_embeddings WHERE model = 'old-model'`)).toBe(0);
    expect(await store.has(unused.sha256)).toBe(false);
    expect(await store.has(stray.sha256)).toBe(false);
    const hits = (await gw.request('GET', '/v1/search?q=manatee')).json().hits;
    expect(hits).toHaveLength(1);
    // The old version stays readable in the history; only its search chunks went.
    const versions = await count(`SELECT count(*)::int AS n FROM documents WHERE external_id = 'gc-note'`);
    expect(versions).toBe(2);

    const again = await collectGarbage(gw.db, store, { graceMs: 0 });
    expect(again).toMatchObject({ chunks: 0, vectors: 0, retired_vectors: 0, files: 0, objects: 0 });
  });

  it('empties the change log only when asked (no gateway running)', async () => {
    expect(await count('SELECT count(*)::int AS n FROM search_changes')).toBeGreaterThan(0);
    expect((await collectGarbage(gw.db, undefined, { graceMs: 0 })).change_log_rows).toBe(0);
    const r = await collectGarbage(gw.db, undefined, { graceMs: 0, changeLog: true });
    expect(r.change_log_rows).toBeGreaterThan(0);
    expect(await count('SELECT count(*)::int AS n FROM search_changes')).toBe(0);
  });

  it('removes the temporary files of interrupted snapshot writes: `memex gc` (the route) and the periodic run', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-gc-snap-'));
    // The pid of a process that has ended: a writer killed half-way.
    const dead = spawnSync(process.execPath, ['-e', 'console.log(process.pid)'], { encoding: 'utf8' }).stdout.trim();
    const stale = [`search-index.snapshot.${dead}.tmp`, `search-vectors.snapshot.${dead}.tmp`];
    const kept = ['search-index.snapshot', `search-index.snapshot.${process.pid}.tmp`, 'notes.txt'];
    const plant = () => {
      for (const name of [...stale, ...kept]) fs.writeFileSync(path.join(dir, name), 'half a snapshot');
    };
    const other = await startTestGateway({ testDb: gw.testDb, config: { dataDir: dir } });
    try {
      plant();
      const dry = await other.request('POST', '/v1/admin/gc', { dry_run: true });
      expect(dry.json()).toMatchObject({ dry_run: true, snapshot_temps: 2 });
      expect(fs.readdirSync(dir).sort()).toEqual([...stale, ...kept].sort());
      const real = await other.request('POST', '/v1/admin/gc', {});
      expect(real.statusCode, real.body).toBe(200);
      expect(real.json()).toMatchObject({ dry_run: false, snapshot_temps: 2 });
      expect(fs.readdirSync(dir).sort()).toEqual([...kept].sort());

      plant();
      const logs: object[] = [];
      const periodic = startPeriodicGc(gw.db, undefined, 50, { info: (o) => logs.push(o), warn: (o) => logs.push(o) }, dir);
      try {
        for (let i = 0; i < 600 && fs.readdirSync(dir).length > kept.length; i++) await new Promise((r) => setTimeout(r, 100));
      } finally {
        await periodic.stop();
      }
      expect(fs.readdirSync(dir).sort()).toEqual([...kept].sort());
      expect(logs.some((o) => (o as { snapshot_temps?: number }).snapshot_temps === 2)).toBe(true);
    } finally {
      await other.app.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a bad body with a 422', async () => {
    const res = await gw.request('POST', '/v1/admin/gc', { grace_seconds: -1 });
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0].loc).toEqual(['body', 'grace_seconds']);
  });
});
