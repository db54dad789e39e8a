/**
 * Coverage of `memex ingest FOLDER` against a live gateway: every file met under the folder counts in the source
 * — uploaded ones stored, a hidden file excluded, an unsupported type and an empty file skipped — and a second
 * run counts the stored ones as unchanged. The unsupported file is listed as missing with its reason.
 */
import fs from 'node:fs';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runIngestCommand } from '../../src/cli/ingest.ts';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { tmpDir } from '../email-collectors/helpers.ts';

const TOKEN = 'coverage-ingest-token-0123456789';

let printed = '';
function sink(): Writable {
  return new Writable({
    write: (c, _e, cb) => {
      printed += String(c);
      cb();
    },
  });
}

describe('coverage of memex ingest', () => {
  let server: RunningServer;
  let dropDb: (() => Promise<void>) | undefined;
  let folder: string;
  let state: string;

  beforeAll(async () => {
    let databaseUrl: string | undefined;
    if (backend === 'postgres') {
      const created = await createServerDatabase();
      databaseUrl = created.url;
      dropDb = created.drop;
    }
    const config = { ...loadServerConfig({ DATA_DIR: path.join(tmpDir('memex-cov-ingest-data-'), 'data'), PORT: '0', LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), databaseUrl };
    server = await startServer(config, 'all', { env: { OCR_POOL_SIZE: '1' } });
    folder = fs.realpathSync(tmpDir('memex-cov-ingest-'));
    fs.writeFileSync(path.join(folder, 'notes.txt'), 'The boiler was serviced on 4 March.');
    fs.mkdirSync(path.join(folder, 'sub'));
    fs.writeFileSync(path.join(folder, 'sub', 'plan.md'), '# Plan\n\nPaint the hallway in May.');
    fs.writeFileSync(path.join(folder, '.secret.txt'), 'hidden');
    fs.writeFileSync(path.join(folder, 'archive.xyz'), 'some bytes');
    fs.writeFileSync(path.join(folder, 'EMPTY'), '');
    state = path.join(tmpDir('memex-cov-ingest-state-'), 'state.json');
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    await dropDb?.();
  });

  const ingest = () => runIngestCommand([folder, '--url', String(server.url), '--token', TOKEN, '--state', state, '--no-progress'], { out: sink(), err: sink(), env: {} });
  const coverage = async () => {
    const sources = ((await (await fetch(`${server.url}/v1/coverage?source=ingest`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { sources: any[] }).sources;
    expect(sources).toHaveLength(1);
    return sources[0];
  };

  it('every file under the folder is stored or skipped with its reason; a second run counts them unchanged', async () => {
    expect(await ingest(), printed).toBe(0);
    expect(await coverage()).toMatchObject({
      collector: 'ingest',
      source_ref: folder,
      in_source: 5,
      stored: 2,
      stored_detail: { new: 2, unchanged: 0 },
      skipped_by_reason: { excluded: 1, unsupported: 1, empty: 1 },
      failed: 0,
      pending: 0,
      missing_total: 1,
      missing: [{ ref: path.join(folder, 'archive.xyz'), state: 'skipped', reason_code: 'unsupported', reason: 'unsupported type .xyz' }],
    });
    expect(await ingest()).toBe(0);
    expect(await coverage()).toMatchObject({ in_source: 5, stored: 2, stored_detail: { new: 0, unchanged: 2 } });
  });
});

describe('coverage after a file is stored by name', () => {
  let dropDb: (() => Promise<void>) | undefined;
  let databaseUrl: string | undefined;
  let dataDir: string;
  let server: RunningServer | undefined;

  beforeAll(async () => {
    if (backend === 'postgres') {
      const created = await createServerDatabase();
      databaseUrl = created.url;
      dropDb = created.drop;
    }
    dataDir = path.join(tmpDir('memex-cov-byname-data-'), 'data');
  });
  afterAll(async () => {
    await server?.close();
    await dropDb?.();
  });

  const start = async (env: Record<string, string>) => {
    const config = { ...loadServerConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN, ...env }), databaseUrl };
    return startServer(config, 'all', { env: { OCR_POOL_SIZE: '1', ...env } });
  };
  const folderCoverage = async (url: string | undefined, ref: string) => {
    const sources = ((await (await fetch(`${url}/v1/coverage?source=ingest`, { headers: { authorization: `Bearer ${TOKEN}` } })).json()) as { sources: any[] }).sources;
    return sources.find((s) => s.source_ref === ref);
  };

  it('a file the folder run could not store, stored later by its name, is no longer listed as not stored', async () => {
    const folder = fs.realpathSync(tmpDir('memex-cov-byname-'));
    fs.writeFileSync(path.join(folder, 'small.txt'), 'The gutter was cleared in October.');
    fs.writeFileSync(path.join(folder, 'big.txt'), 'The roof survey found two cracked tiles. '.repeat(200));
    const state = path.join(tmpDir('memex-cov-byname-state-'), 'state.json');
    const run = (target: string, url: string | undefined) =>
      runIngestCommand([target, '--url', String(url), '--token', TOKEN, '--state', state, '--no-progress'], { out: sink(), err: sink(), env: {} });

    // A server that refuses the big file (413): the folder's run lists it as not stored.
    server = await start({ FILE_MAX_BYTES: '4kb' });
    expect(await run(folder, server.url)).toBe(1);
    expect(await folderCoverage(server.url, folder)).toMatchObject({ stored: 1, failed: 1, missing_total: 1, missing: [{ ref: path.join(folder, 'big.txt'), state: 'failed' }] });
    await server.close();

    // The limit raised, the file ingested by its name (a file named alone is no source of its own).
    server = await start({});
    expect(await run(path.join(folder, 'big.txt'), server.url), printed).toBe(0);
    expect(await folderCoverage(server.url, folder)).toMatchObject({ stored: 2, failed: 0, missing_total: 0, missing: [] });
  }, 240_000);
});
