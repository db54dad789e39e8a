/**
 * `memex ingest PATH` against a real running server (startServer: HTTP on loopback, object store in DATA_DIR, OCR
 * engine, database of the active backend): first run uploads every supported file, second run skips them all.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runIngestCommand } from '../../src/cli/ingest.ts';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import type { AddressInfo } from 'node:net';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { startTestGateway } from '../helpers/gateway.ts';
import { renderTextImage } from '../ocr/render-text.ts';
import { makeTextPdf } from './fixtures.ts';

const TOKEN = 'cli-test-token-0123456789';
let dir: string;
let server: RunningServer;
let dropDb: (() => Promise<void>) | undefined;
let folder: string;
let statePath: string;
let url: string;

function sink(): { stream: Writable; text: () => string } {
  let s = '';
  return {
    stream: new Writable({
      write(chunk, _enc, cb) {
        s += chunk.toString();
        cb();
      },
    }),
    text: () => s,
  };
}

async function run(args: string[]) {
  const out = sink();
  const err = sink();
  const code = await runIngestCommand(args, { out: out.stream, err: err.stream, env: {} });
  return { code, out: out.text(), err: err.text() };
}

const docCount = async () =>
  (await server.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE is_active_version')).rows[0].n;

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-ingest-cli-'));
  let databaseUrl: string | undefined;
  if (backend === 'postgres') {
    const created = await createServerDatabase();
    databaseUrl = created.url;
    dropDb = created.drop;
  }
  const config = {
    ...loadServerConfig({ DATA_DIR: path.join(dir, 'data'), PORT: '0', LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }),
    databaseUrl,
  };
  server = await startServer(config, 'all', { env: { OCR_POOL_SIZE: '1' } });
  url = server.url!;

  folder = path.join(dir, 'docs');
  statePath = path.join(dir, 'state', 'ingest-state.json');
  await fs.mkdir(path.join(folder, 'sub', 'deeper'), { recursive: true });
  await fs.mkdir(path.join(folder, '.git'), { recursive: true });
  await fs.writeFile(path.join(folder, 'notes.txt'), 'Shopping list: saffron, quinoa, and tahini.\n');
  await fs.writeFile(path.join(folder, 'readme.md'), '# Project Albatross\nThe plan for the albatross survey.\n');
  await fs.writeFile(path.join(folder, 'sub', 'invoice.pdf'), await makeTextPdf([['Invoice from Pemberton Plumbing']]));
  await fs.writeFile(path.join(folder, 'sub', 'deeper', 'sign.png'), await renderTextImage('Welcome to Thistlewood Farm'));
  await fs.writeFile(path.join(folder, 'sub', 'broken.pdf'), Buffer.from('%PDF-1.7\nthis is not really a pdf'));
  await fs.writeFile(path.join(folder, '.hidden.txt'), 'secret hidden file');
  await fs.writeFile(path.join(folder, '.git', 'config'), '[core]');
  await fs.writeFile(path.join(folder, 'program.exe'), Buffer.from([0x4d, 0x5a, 0, 1, 2, 3]));
}, 120_000);

afterAll(async () => {
  await server?.close();
  await dropDb?.();
  await fs.rm(dir, { recursive: true, force: true });
});

describe('memex ingest PATH', () => {
  it('uploads every supported file of a folder tree, then skips all of them on the second run', async () => {
    const args = [folder, '--url', url, '--token', TOKEN, '--state', statePath, '--tag', 'cli', '--no-progress'];
    const first = await run(args);
    expect(first.code).toBe(0);
    expect(first.out).toMatch(/new: 5 \(1 stored without text\), unchanged: 0, skipped: 3, failed: 0/);
    expect(first.out).toContain(`no text extracted: ${path.join(folder, 'sub', 'broken.pdf')}`);
    expect(first.out).toMatch(/\[5\/5\]/); // plain progress lines when not on a terminal
    // Hidden and unsupported files are not uploaded, and the summary says which and why.
    expect(first.out).not.toMatch(/new .*\.hidden\.txt/);
    expect(first.out).toContain(`skipped: ${path.join(folder, '.hidden.txt')}: hidden file`);
    expect(first.out).toContain(`skipped: ${path.join(folder, 'program.exe')}: unsupported type .exe`);
    expect(await docCount()).toBe(5);

    // The words of each kind of file are in the index.
    for (const words of ['saffron tahini', 'albatross survey', 'Pemberton Plumbing', 'Thistlewood Farm']) {
      const r = await server.db.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM chunks c JOIN chunk_documents cd ON cd.chunk_id = c.chunk_id
          WHERE c.tsv @@ plainto_tsquery('english', $1)`,
        [words],
      );
      expect(r.rows[0].n, words).toBeGreaterThan(0);
    }
    const tagged = await server.db.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM documents WHERE metadata->'localfs'->'tags' ? 'cli'`,
    );
    expect(tagged.rows[0].n).toBe(5);

    const second = await run(args);
    expect(second.code).toBe(0);
    expect(second.out).toMatch(/new: 0, unchanged: 5, skipped: 3, failed: 0/);
    expect(await docCount()).toBe(5);
  }, 180_000);

  it('a touched but identical file stays unchanged; an edited one is uploaded as a new version', async () => {
    const args = [folder, '--url', url, '--token', TOKEN, '--state', statePath, '--no-progress'];
    const future = new Date(Date.now() + 60_000);
    await fs.utimes(path.join(folder, 'readme.md'), future, future);
    await fs.writeFile(path.join(folder, 'notes.txt'), 'Shopping list: saffron, quinoa, tahini and cardamom.\n');
    const third = await run(args);
    expect(third.code).toBe(0);
    expect(third.out).toMatch(/new: 1, unchanged: 4, skipped: 3, failed: 0/);
    const v = await server.db.query<{ version_number: number; text: string }>(
      `SELECT version_number, text FROM documents WHERE external_id = $1 AND is_active_version`,
      [`localfs:${path.join(folder, 'notes.txt')}`],
    );
    expect(v.rows[0].version_number).toBe(2);
    expect(v.rows[0].text).toContain('cardamom');
  }, 120_000);

  it('without a state file the server answers duplicate: still nothing new', async () => {
    const fresh = path.join(dir, 'state', 'other.json');
    const r = await run([folder, '--url', url, '--token', TOKEN, '--state', fresh, '--no-progress']);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/new: 0, unchanged: 5, skipped: 3, failed: 0/);
  }, 120_000);

  it('a state file made against another server instance is not trusted, even at the same URL', async () => {
    // Issue 23: after a new data directory the state said "unchanged: 2" and the server held nothing.
    const small = path.join(dir, 'small');
    await fs.mkdir(small, { recursive: true });
    await fs.writeFile(path.join(small, 'a.txt'), 'Alpha note about the quarry.\n');
    await fs.writeFile(path.join(small, 'b.txt'), 'Beta note about the orchard.\n');
    const state = path.join(dir, 'state', 'instances.json');
    const first = await startTestGateway({ files: {}, config: { authToken: TOKEN } });
    await first.app.listen({ port: 0, host: '127.0.0.1' });
    const port = (first.app.server.address() as AddressInfo).port;
    const at = `http://127.0.0.1:${port}`;
    const args = [small, '--url', at, '--token', TOKEN, '--state', state, '--no-progress'];
    expect((await run(args)).out).toMatch(/new: 2, unchanged: 0/);
    expect((await run(args)).out).toMatch(/new: 0, unchanged: 2/);
    await first.close();

    const second = await startTestGateway({ files: {}, config: { authToken: TOKEN } });
    try {
      await second.app.listen({ port, host: '127.0.0.1' });
      const again = await run(args);
      expect(again.out).toMatch(/new: 2, unchanged: 0, skipped: 0, failed: 0/);
      const held = await second.db.query<{ n: number }>('SELECT count(*)::int AS n FROM documents WHERE is_active_version');
      expect(held.rows[0].n).toBe(2);
      // The instance id is part of the answer, so the first server's entries stay apart from the second's.
      const saved = JSON.parse(await fs.readFile(state, 'utf8'));
      expect(Object.keys(saved.servers)).toHaveLength(2);
    } finally {
      await second.close();
    }
  }, 120_000);

  it('reports failures with reasons and exits 1: missing path, wrong token, server down', async () => {
    const missing = await run([path.join(dir, 'nope'), '--url', url, '--token', TOKEN, '--state', statePath, '--no-progress']);
    expect(missing.code).toBe(1);
    expect(missing.out).toMatch(/failed: .*nope: no such file or folder/);

    const other = path.join(dir, 'state', 'wrong-token.json');
    const wrong = await run([path.join(folder, 'readme.md'), '--url', url, '--token', 'wrong', '--state', other, '--no-progress']);
    expect(wrong.code).toBe(1);
    expect(wrong.out).toMatch(/failed: .*readme\.md: HTTP 403/);

    const down = await run([path.join(folder, 'readme.md'), '--url', 'http://127.0.0.1:9', '--token', TOKEN, '--state', other, '--no-progress']);
    expect(down.code).toBe(1);
    expect(down.out).toMatch(/cannot reach http:\/\/127\.0\.0\.1:9/);

    const usage = await run(['--concurrency', 'x', folder]);
    expect(usage.code).toBe(2);
  }, 120_000);
});
