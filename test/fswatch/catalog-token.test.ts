/**
 * Watched-folder deletions go through the gateway's catalog API, which takes CATALOG_TOKEN. When that differs from
 * the agent's gateway token and modules.fswatch.catalog_token is unset, every deletion is refused and retried for
 * ever (issue 46): the agent says so at start, and a refused deletion says so once, naming the setting to fix.
 * The last test runs `memex agent` itself (a child process) on a watched folder: one warning in its log, at start.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { catalogAccessProblem, catalogDeleter } from '../../src/agent/collectors/fswatch/module.ts';
import { testConfig } from '../agent/helpers.ts';
import { startTestGateway, TEST_TOKEN, type TestGateway } from '../helpers/gateway.ts';
import { waitFor } from '../helpers/wait.ts';

const CATALOG_TOKEN = 'catalog-secret-differs-from-auth';
let gw: TestGateway;
let baseUrl: string;

beforeAll(async () => {
  gw = await startTestGateway({ files: {}, config: { catalogToken: CATALOG_TOKEN } });
  await gw.app.listen({ port: 0, host: '127.0.0.1' });
  baseUrl = `http://127.0.0.1:${(gw.app.server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await gw?.close();
});

const config = (catalogToken?: string) =>
  testConfig({
    gateway: { base_url: baseUrl, auth_token: TEST_TOKEN, timeout: 30 },
    modules: { ocr: { enabled: false }, fswatch: { enabled: true, ...(catalogToken ? { catalog_token: catalogToken } : {}) } },
  });

describe('the catalog token of watched-folder deletions', () => {
  it('is checked at start: a refused token is named with the setting that fixes it', async () => {
    const problem = await catalogAccessProblem(config());
    expect(problem).toMatch(/refused this agent's token \(403\)/);
    expect(problem).toMatch(/set modules\.fswatch\.catalog_token to the gateway's CATALOG_TOKEN/);
    expect(problem).not.toContain(TEST_TOKEN);
    expect(await catalogAccessProblem(config(CATALOG_TOKEN))).toBeNull();
  });

  it('a refused deletion warns once, however often it is retried', async () => {
    const warnings: string[] = [];
    const del = catalogDeleter(config(), fetch, (w) => warnings.push(w));
    for (let i = 0; i < 3; i++) await expect(del('00000000-0000-4000-8000-000000000001')).rejects.toMatchObject({ status: 403 });
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatch(/deleted files in watched folders cannot remove their documents/);
    const ok = catalogDeleter(config(CATALOG_TOKEN), fetch, (w) => warnings.push(w));
    expect(await ok('00000000-0000-4000-8000-000000000001')).toBe('gone');
    expect(warnings).toHaveLength(1);
  });
});

describe('memex agent with a watched folder and a catalog token the gateway refuses', () => {
  it('says so once: at start, and not again when a deletion is refused', async () => {
    const dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'memex-fsw-token-')));
    const watched = path.join(dir, 'watched');
    fs.mkdirSync(watched);
    const port = await new Promise<number>((resolve) => {
      const s = net.createServer();
      s.listen(0, '127.0.0.1', () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const cfg = path.join(dir, 'agent.yaml');
    fs.writeFileSync(
      cfg,
      [
        `port: ${port}`,
        'gateway:',
        `  base_url: ${baseUrl}`,
        `  auth_token: ${TEST_TOKEN}`,
        '  timeout: 30',
        'modules:',
        '  ocr: { enabled: false }',
        '  fswatch:',
        '    enabled: true',
        `    allowed_roots: [${watched}]`,
        `    state_path: ${path.join(dir, 'fswatch-state.json')}`,
        '    debounce_ms: 100',
        `    watches: [{ path: ${watched}, glob: "*" }]`,
        '',
      ].join('\n'),
    );
    const script = path.resolve(import.meta.dirname, '../agent/fixtures/run-agent.ts');
    const child = spawn(process.execPath, ['--import', 'tsx', script, '--config', cfg], {
      env: { ...process.env, SVC_AUTH_SECRET: 'fswatch-token-test-secret-0123456789', XDG_CONFIG_HOME: dir, XDG_STATE_HOME: path.join(dir, 'state') },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const warnings = () => out.split('\n').filter((l) => l.includes("the gateway's catalog API refused this agent's token")).length;
    try {
      await waitFor('the start warning', async () => warnings() === 1, 60_000, 100).catch((err) => {
        throw new Error(`${(err as Error).message}\n${out}`);
      });
      // A file is stored, then deleted: the deletion is refused (403) and waits, unsaid a second time.
      const file = path.join(watched, 'receipt.txt');
      fs.writeFileSync(file, 'A receipt for the ferry, 18 euros.');
      const stored = async () =>
        (await gw.db.query(`SELECT 1 FROM documents WHERE external_id = $1 AND is_active_version AND deleted_at IS NULL`, [`localfs:${file}`])).rows.length > 0;
      await waitFor('the file stored', stored, 60_000, 100);
      const refusedBefore = out.split('\n').filter((l) => l.includes('403')).length;
      fs.rmSync(file);
      await waitFor('the deletion refused', async () => out.split('\n').filter((l) => l.includes('403')).length > refusedBefore, 60_000, 100).catch((err) => {
        throw new Error(`${(err as Error).message}\n${out}`);
      });
      expect(await stored()).toBe(true);
      expect(warnings(), out).toBe(1);
      expect(out).not.toContain(TEST_TOKEN);
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 180_000);
});
