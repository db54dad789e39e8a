/**
 * `memex status`, `memex reindex --failed` and `memex relationships --recompute` beside a running
 * server: with the embedded database only the server can open it, so these ask it over HTTP.
 * The verbs run as the real command (bin/memex.js) in a child process.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { noteBody } from '../helpers/gateway.ts';
import { runMemex } from '../helpers/memex-bin.ts';

const TOKEN = 'operator-cli-token-0123456789';

let dir: string;
let server: RunningServer;
let dropDb: (() => Promise<void>) | undefined;
const saved = { ...process.env };

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-operator-cli-'));
  // The queue must stay as the test leaves it: no worker; hash vectors (no model to load).
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

/** The command as a user runs it, pointed at the server; DATA_DIR elsewhere, no DATABASE_URL. */
async function memex(...args: string[]): Promise<string> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    MEMEX_URL: server.url,
    AUTH_TOKEN: TOKEN,
    DATA_DIR: path.join(dir, 'elsewhere'),
  };
  const r = await runMemex(args, env);
  // As execFile rejects: an error carrying the outputs (a test may want the stdout of a verb that exits 1).
  if (r.code !== 0) throw Object.assign(new Error(`memex ${args.join(' ')} exited with ${r.code}: ${r.stderr}`), r);
  return r.stdout;
}

describe(`operator verbs over HTTP (${backend})`, () => {
  it('status, reindex --failed and relationships --recompute answer from the running server', async () => {
    const post = (body: object) =>
      server.app!.inject({ method: 'POST', url: '/v1/ingest', headers: { authorization: `Bearer ${TOKEN}` }, payload: body });
    const a = (await post(noteBody({ content: { mime_type: 'text/plain', data: 'Harbour timetable for the ferry.' } }))).json();
    await post(noteBody({ source_type: 'email', content: { mime_type: 'text/plain', data: 'Lunch on Friday?' } }));
    await server.db.query(
      `UPDATE chunks SET embedding_status = 'failed', embedding_error = 'EmbeddingRequestError: too long'
        WHERE chunk_id IN (SELECT chunk_id FROM chunk_documents WHERE doc_id = $1)`,
      [a.doc_id],
    );

    const status = await memex('status');
    expect(status).toMatch(/^documents {3}2 total$/m);
    expect(status).toMatch(/^ {2}email {5}1 enriched$/m);
    expect(status).toMatch(/chunks {6}2 total: 0 embedded, 1 pending, 0 processing, 1 failed/);
    expect(status).toContain('failed      1 chunk(s): EmbeddingRequestError: too long');

    expect(await memex('reindex', '--failed')).toContain('1 failed chunk(s) queued again');
    const counts = await server.db.query<{ n: number }>("SELECT count(*)::int AS n FROM chunks WHERE embedding_status = 'pending'");
    expect(counts.rows[0].n).toBe(2);

    const recompute = JSON.parse(await memex('relationships', '--recompute', '--json').catch((e) => e.stdout));
    expect(recompute).toMatchObject({ mode: 'full', edges_upserted: 0 });
  }, 300_000);
});
