import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { ConfigError } from '../../src/config/server.ts';
import { relationshipsCommand } from '../../src/cli/relationships.ts';
import { backend, createTestDatabase } from '../helpers/db.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { loadHistory } from './fixture.ts';
import { startRelGateway } from './helpers.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-rel-cli-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describe(`memex relationships --recompute on ${backend}`, () => {
  it('recomputes every edge of the detected self person on the configured database', async () => {
    const testDb = await createTestDatabase({ dataDir: dir });
    const gw = await startRelGateway({ testDb });
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      const { ids } = await loadHistory(gw, new Date());
      await gw.app.close();
      await gw.db.close();
      const env = {
        AUTH_TOKEN: TEST_TOKEN,
        LOG_LEVEL: 'silent',
        // No server there: the command opens the database itself (not whatever answers on :8085).
        MEMEX_URL: 'http://127.0.0.1:1',
        ...(testDb.url ? { DATABASE_URL: testDb.url } : { DATA_DIR: dir }),
      };
      const result = await relationshipsCommand(['--recompute'], env);
      expect(result).toMatchObject({ mode: 'full', self_person_id: ids.me, self_source: 'outbound_messages', edges_upserted: 6 });
      const other = await relationshipsCommand(['--recompute', '--self', ids.bob], env);
      expect(other).toMatchObject({ self_person_id: ids.bob, self_source: 'given' });
      await expect(relationshipsCommand(['--recompute', '--self', 'bob'], env)).rejects.toThrow(ConfigError);
      await expect(relationshipsCommand(['--bogus'], env)).rejects.toThrow();
      expect(await relationshipsCommand([], env)).toBeNull();
    } finally {
      log.mockRestore();
      await testDb.drop();
    }
  }, 120_000);
});
