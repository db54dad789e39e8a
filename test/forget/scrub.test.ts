/**
 * Forget means gone from the disk too (issue 33 item 3): after a forget, a word only the erased document held
 * is in no file of the database (PGlite: its data directory, WAL included; PostgreSQL: the test database's
 * data files) and in no backup taken afterwards. Checked by reading the bytes, as someone with the disk would.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { backend } from '../helpers/db.ts';
import { startTestGateway, type TestGateway } from '../helpers/gateway.ts';

const WORD = 'quokkazanzibarwhisper';

/** Files under `dir` whose bytes contain `needle`. */
function filesHolding(dir: string, needle: string): string[] {
  const found: string[] = [];
  const want = Buffer.from(needle);
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (e.isFile() && fs.readFileSync(p).includes(want)) found.push(p);
    }
  };
  walk(dir);
  return found;
}

let gw: TestGateway;
let tmp: string;
/** Where this test database's files are. */
let dbFiles: string;

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-scrub-'));
  gw = await startTestGateway(backend === 'pglite' ? { dataDir: path.join(tmp, 'pglite') } : {});
  if (backend === 'pglite') {
    dbFiles = path.join(tmp, 'pglite');
  } else {
    const r = await gw.db.query<{ dir: string; oid: number }>(
      `SELECT current_setting('data_directory') AS dir, (SELECT oid FROM pg_database WHERE datname = current_database())::int AS oid`,
    );
    dbFiles = path.join(r.rows[0].dir, 'base', String(r.rows[0].oid));
  }
}, 120_000);

afterAll(async () => {
  await gw?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

describe(`forget on ${backend}`, () => {
  it('leaves the erased text in no data file and in no backup taken afterwards', async () => {
    const doc = await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'scrub-1',
      title: `About the ${WORD}`,
      content: { data: `The ${WORD} plan is between us. `.repeat(40) },
      content_timestamp: '2026-11-01T10:00:00Z',
      people: [{ identifier: 'erin@secret.example', role: 'sender', display_name: 'Erin Secret' }],
    });
    expect([200, 202]).toContain(doc.statusCode);
    await gw.request('POST', '/v1/ingest', {
      source_type: 'email',
      source_id: 'scrub-keep',
      title: 'Lunch',
      content: { data: 'Lunch on Friday at noon.' },
      content_timestamp: '2026-11-01T11:00:00Z',
    });
    await gw.db.exec('CHECKPOINT');
    // The test means something only if the word was on disk to begin with.
    expect(filesHolding(dbFiles, WORD).length).toBeGreaterThan(0);

    const res = await gw.request('POST', '/v1/forget', { doc_id: doc.json().doc_id });
    expect(res.statusCode).toBe(200);
    expect(res.json().removed.documents).toBe(1);

    expect(filesHolding(dbFiles, WORD)).toEqual([]);
    if (backend === 'pglite') {
      // What `memex backup` carries of an embedded database: its data directory as a gzipped tar.
      const dump = Buffer.from(await (await gw.db.dumpDataDir!()).arrayBuffer());
      expect(zlib.gunzipSync(dump).includes(Buffer.from(WORD))).toBe(false);
    }
    // What was kept is still there.
    const kept = await gw.request('GET', '/v1/search?q=lunch');
    expect(kept.json().hits.length).toBe(1);
  }, 180_000);
});
