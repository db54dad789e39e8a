import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { openDatabase } from '../../src/db/index.ts';
import { backend, createTestDatabase } from '../helpers/db.ts';
import { noteBody, startTestGateway } from '../helpers/gateway.ts';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

describe(`restart on ${backend}`, () => {
  it('keeps every document, submission and person after the server restarts', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-restart-'));
    dirs.push(dataDir);
    const testDb = await createTestDatabase({ dataDir });
    const first = await startTestGateway({ testDb });
    const sub = (
      await first.request('POST', '/v1/ingest', noteBody({ people: [{ identifier: 'ann@example.com', role: 'sender' }] }))
    ).json();
    await first.app.close();
    await testDb.db.close();

    // Reopen the same storage: the PGlite directory, or the same server database.
    const reopened = await openDatabase(backend === 'postgres' ? { databaseUrl: testDb.url } : { dataDir });
    const second = await startTestGateway({
      testDb: {
        ...testDb,
        db: reopened,
        drop: async () => {
          await reopened.close().catch(() => undefined);
          await testDb.drop();
        },
      },
    });
    try {
      const doc = await second.request('GET', `/v1/doc/${sub.doc_id}`);
      expect(doc.statusCode).toBe(200);
      expect(doc.json().text).toContain('Lisbon');
      const status = (await second.request('GET', `/v1/ingest/${sub.submission_id}`)).json();
      expect(status.doc_id).toBe(sub.doc_id);
      const people = await reopened.query<{ n: number }>('SELECT count(*)::int AS n FROM people');
      expect(people.rows[0].n).toBe(1);
      const migrations = await reopened.query<{ n: number }>('SELECT count(*)::int AS n FROM schema_migrations');
      expect(migrations.rows[0].n).toBeGreaterThan(0);
    } finally {
      await second.close();
    }
  });
});
