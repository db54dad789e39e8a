/**
 * The command line as a new user meets it (issue 35, item 8), run as the real command (bin/memex.js) in a child
 * process against a running server: `memex search` ends when it has printed, `memex ingest FOLDER` takes README and
 * NEWS (no extension) by their content and lists what it skipped and why, `memex status` keeps its columns with long
 * source names, and `relationships --recompute` prints a summary for a person (JSON with --json).
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { noteBody } from '../helpers/gateway.ts';
import { runMemex, type MemexRun } from '../helpers/memex-bin.ts';

const TOKEN = 'first-hour-cli-token-0123456789';
const ROOT = path.resolve(import.meta.dirname, '../..');
const PROBE = path.join(ROOT, 'test', 'helpers', 'linger-probe.mjs');

let dir: string;
let server: RunningServer;
let dropDb: (() => Promise<void>) | undefined;
const saved = { ...process.env };

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-first-hour-cli-'));
  process.env.EMBEDDING_PROVIDER = 'hash';
  process.env.EMBEDDING_WORKER = 'false';
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
  server = await startServer(config, 'all');
}, 120_000);

afterAll(async () => {
  await server?.close();
  await dropDb?.();
  process.env = saved;
  await fs.rm(dir, { recursive: true, force: true });
});

/** The command as a user runs it, pointed at the server; `nodeArgs` go to node itself. */
async function memex(args: string[], nodeArgs: string[] = []): Promise<MemexRun> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MEMEX_URL: server.url,
    AUTH_TOKEN: TOKEN,
    DATA_DIR: path.join(dir, 'elsewhere'),
    XDG_STATE_HOME: path.join(dir, 'state'),
  };
  return runMemex(args, env, { nodeArgs });
}

const post = (body: object) =>
  server.app!.inject({ method: 'POST', url: '/v1/ingest', headers: { authorization: `Bearer ${TOKEN}` }, payload: body });

describe(`memex, the first hour (${backend})`, () => {
  it('search ends as soon as it has printed (nothing keeps the process alive)', async () => {
    await post(noteBody({ title: 'Ferry times', content: { mime_type: 'text/plain', data: 'The ferry to Lisbon leaves at nine.' } }));
    for (const args of [['search', 'ferry'], ['status']]) {
      const r = await memex(args, ['--import', PROBE]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout.length).toBeGreaterThan(0);
      expect(r.stderr).not.toContain('linger-probe');
    }
  }, 120_000);

  it('ingest takes README and NEWS by their content and lists what it skipped and why', async () => {
    const folder = path.join(dir, 'project');
    await fs.mkdir(path.join(folder, '.git'), { recursive: true });
    await fs.writeFile(path.join(folder, 'README'), 'Project Kestrel: a tool for counting birds.\n');
    await fs.writeFile(path.join(folder, 'NEWS'), 'Version 2 counts owls at night.\n');
    await fs.writeFile(path.join(folder, 'notes.md'), '# Notes\nBring binoculars.\n');
    await fs.writeFile(path.join(folder, 'kestrel'), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0x3e, 0]));
    await fs.writeFile(path.join(folder, 'archive.xyz'), 'whatever');
    await fs.writeFile(path.join(folder, '.git', 'HEAD'), 'ref: refs/heads/main\n');

    const r = await memex(['ingest', '--no-progress', folder]);
    expect(r.code, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(/new: 3, unchanged: 0, skipped: 3, failed: 0/);
    expect(r.stdout).toContain(`skipped: ${path.join(folder, 'kestrel')}: no extension, and the content is not text, PDF or an image`);
    expect(r.stdout).toContain(`skipped: ${path.join(folder, 'archive.xyz')}: unsupported type .xyz`);
    expect(r.stdout).toContain(`skipped: ${path.join(folder, '.git')}: hidden folder (--all includes it)`);
    const stored = await server.db.query<{ title: string }>(
      "SELECT coalesce(title, '') AS title FROM documents WHERE source_type = 'localfs' AND status <> 'deleted' ORDER BY 1",
    );
    expect(stored.rows.map((row) => row.title).join(' ')).toMatch(/NEWS.*README|README.*NEWS/);
  }, 120_000);

  it('status keeps its columns when source names are long', async () => {
    await post(noteBody({ source_type: 'calendar_event', content: { mime_type: 'text/plain', data: 'Dentist at four.' } }));
    await post(noteBody({ source_type: 'email', content: { mime_type: 'text/plain', data: 'Lunch on Friday?' } }));
    const { stdout } = await memex(['status']);
    const rows = stdout.split('\n').filter((l) => /^ {2}\S/.test(l));
    expect(rows.length).toBeGreaterThanOrEqual(3);
    const starts = rows.map((l) => l.search(/\d/));
    expect(new Set(starts).size, rows.join('\n')).toBe(1);
    expect(rows.some((l) => l.startsWith('  calendar_event '))).toBe(true);
  }, 120_000);

  it('relationships --recompute prints a summary, and JSON with --json', async () => {
    const text = await memex(['relationships', '--recompute']);
    expect(text.stdout).not.toMatch(/^\{/);
    expect(text.stdout + text.stderr).toMatch(/relationships: no self person known|relationships recomputed \(full\) in [\d.]+ s: \d+ people ranked/);
    const json = JSON.parse((await memex(['relationships', '--recompute', '--json'])).stdout);
    expect(json).toMatchObject({ mode: 'full' });
  }, 120_000);
});
