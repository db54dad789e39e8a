/**
 * Coverage of watched folders against a live gateway: each rescan of a watch reports the folder — files stored,
 * a file with no text skipped as empty, a file over max_file_bytes skipped as too large (listed as missing, with
 * its reason) — and the counts add up; a recount finds files that arrived since without sending anything.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAgentServer, type AgentServer } from '../../src/agent/server.ts';
import { auth, testConfig } from '../agent/helpers.ts';
import { TEST_TOKEN } from '../helpers/gateway.ts';
import { startLiveGateway, type LiveGateway } from '../email-collectors/helpers.ts';

const tmp = (p: string) => fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), p)));

async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v) return v as T;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe('coverage of watched folders', () => {
  let live: LiveGateway;
  let agent: AgentServer;
  let folder: string;

  beforeAll(async () => {
    live = await startLiveGateway();
    folder = tmp('memex-cov-fsw-');
    fs.writeFileSync(path.join(folder, 'groceries.md'), '# Groceries\n\nOat milk, lemons, basil.\n');
    fs.mkdirSync(path.join(folder, 'sub'));
    fs.writeFileSync(path.join(folder, 'sub', 'dentist.txt'), 'Dentist on Tuesday 9:40');
    fs.writeFileSync(path.join(folder, 'blank.txt'), '   \n\n  ');
    fs.writeFileSync(path.join(folder, 'huge.txt'), 'x'.repeat(5000));
    const config = testConfig({
      gateway: { base_url: live.url, auth_token: TEST_TOKEN, timeout: 30 },
      modules: {
        ocr: { enabled: false },
        fswatch: { enabled: true, allowed_roots: [folder], state_path: path.join(tmp('memex-cov-fsw-state-'), 'fsw.json'), debounce_ms: 100, max_file_bytes: 4096, watches: [{ path: folder }] },
      },
    });
    agent = await createAgentServer(config, { logger: false });
  });
  afterAll(async () => {
    await agent?.close();
    await live?.close();
  });

  const coverage = async () => (await live.gw.request('GET', '/v1/coverage?source=fswatch&missing_limit=10')).json().sources;

  it('the rescan of a watch reports every file: stored, empty, too large (missing with its reason)', async () => {
    const [cov] = await waitFor('the first rescan report', async () => {
      const s = await coverage();
      return s.length === 1 && s;
    });
    expect(cov).toMatchObject({
      collector: 'fswatch',
      source_type: 'localfs',
      source_ref: folder,
      in_source: 4,
      stored: 2,
      stored_detail: { new: 2 },
      skipped_by_reason: { empty: 1, too_large: 1 },
      failed: 0,
      pending: 0,
      missing_total: 1,
      missing: [{ ref: path.join(folder, 'huge.txt'), state: 'skipped', reason_code: 'too_large', reason: expect.stringContaining('max_file_bytes (4096)') }],
      cursor: { files: 4 },
    });
  });

  it('a recount finds a file that arrived since the rescan, without sending it', async () => {
    // Dot-files are never documents; this one arrives unseen by the watcher too, and the recount must not count it.
    fs.writeFileSync(path.join(folder, '.hidden.txt'), 'not a document');
    const res = await agent.inject({ method: 'POST', url: '/v1/coverage:reconcile', headers: auth, payload: { collector: 'fswatch' } });
    expect(res.statusCode).toBe(200);
    expect(res.json().sources).toEqual([expect.objectContaining({ source_ref: folder, error: null, reconcile: expect.objectContaining({ in_source: 4, drift: 0 }) })]);
    fs.mkdirSync(path.join(folder, 'later'));
    fs.writeFileSync(path.join(folder, 'later', 'new.md'), 'Arrived later');
    const again = await agent.inject({ method: 'POST', url: '/v1/coverage:reconcile', headers: auth, payload: { collector: 'fswatch' } });
    expect(again.json().sources[0].reconcile).toMatchObject({ in_source: 5, recorded_in_source: 4, drift: 1, in_sync: false });
  });
});
