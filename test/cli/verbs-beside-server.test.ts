/**
 * Every `memex` verb run as its own process beside a running server (the README's set-up). With the embedded
 * database, no verb may open it a second time: the server holds DATA_DIR/pglite.lock, client verbs talk HTTP, and
 * verbs that need the database itself are refused with a clear reason before they open anything. With PostgreSQL
 * the database verbs simply work beside the server.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadServerConfig } from '../../src/config/server.ts';
import { databaseLockHolder } from '../../src/db/lock.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { runMemex } from '../helpers/memex-bin.ts';

const TOKEN = 'verbs-test-token-0123456789';

let dir: string;
let dataDir: string;
let server: RunningServer;
let dropDb: (() => Promise<void>) | undefined;
let databaseUrl: string | undefined;
let port: number;
/** What the server held after the client verbs ran. */
let held = '';

interface Run {
  code: number | null;
  out: string;
  err: string;
}

/** Runs `memex ARGS` as a child process with the environment a user on this machine would have. */
async function memex(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '',
    HOME: path.join(dir, 'home'),
    XDG_STATE_HOME: path.join(dir, 'state'),
    DATA_DIR: dataDir,
    PORT: String(port),
    AUTH_TOKEN: TOKEN,
    LOG_LEVEL: 'silent',
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
    ...extraEnv,
  };
  const r = await runMemex(args, env, { cwd: dir });
  return { code: r.code, out: r.stdout, err: r.stderr };
}

/** Source types of the active documents, sorted: what the server holds. */
const activeDocuments = async () =>
  (await server.db.query<{ source_type: string }>('SELECT source_type FROM documents WHERE is_active_version ORDER BY 1')).rows
    .map((r) => r.source_type)
    .join(' ');

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'memex-verbs-'));
  dataDir = path.join(dir, 'data');
  fs.mkdirSync(path.join(dir, 'home'));
  if (backend === 'postgres') {
    const created = await createServerDatabase();
    databaseUrl = created.url;
    dropDb = created.drop;
  }
  const config = { ...loadServerConfig({ DATA_DIR: dataDir, PORT: '0', LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), databaseUrl };
  server = await startServer(config, 'all', { env: { OCR_ENABLED: 'false', SELF_IDENTIFIERS: 'me@example.org' } });
  port = Number(new URL(server.url!).port);

  fs.writeFileSync(path.join(dir, 'notes.md'), '# Harbour notes\n\nThe ferry to the lighthouse leaves at nine.\n');
  fs.writeFileSync(path.join(dir, 'people.vcf'), 'BEGIN:VCARD\nVERSION:3.0\nFN:Ines Duarte\nEMAIL:ines@example.org\nEND:VCARD\n');
  fs.writeFileSync(
    path.join(dir, 'inbox.mbox'),
    'From ines@example.org Mon Mar  2 10:00:00 2026\nFrom: Ines Duarte <ines@example.org>\nTo: me@example.org\n' +
      'Subject: Lighthouse visit\nMessage-ID: <visit-1@example.org>\nDate: Mon, 2 Mar 2026 10:00:00 +0000\n\n' +
      'Shall we take the nine o\'clock ferry?\n',
  );
}, 300_000);

afterAll(async () => {
  await server?.close();
  await dropDb?.();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** A refusal names the reason; an abort of the WASM database never shows. */
function expectRefused(r: Run, reason: RegExp) {
  expect(r.err).not.toMatch(/Aborted\(\)/);
  expect(r.code, r.err).not.toBe(0);
  expect(r.err).toMatch(reason);
}

describe(`memex verbs beside a running server (${backend})`, () => {
  it('client verbs go through HTTP and land their data', async () => {
    const ingest = await memex(['ingest', 'notes.md', '--no-progress']);
    expect(ingest.code, ingest.err + ingest.out).toBe(0);
    const vcf = await memex(['import', 'people.vcf']);
    expect(vcf.code, vcf.err).toBe(0);
    const mail = await memex(['import', 'mail', 'inbox.mbox']);
    expect(mail.code, mail.err + mail.out).toBe(0);
    held = await activeDocuments();
    expect(held).toMatch(/email/);
    expect(held).toMatch(/file|localfs/);
    const search = await memex(['search', 'lighthouse', '--json']);
    expect(search.code, search.err).toBe(0);
    const hit = (JSON.parse(search.out) as { hits: { document_id: string }[] }).hits[0];
    expect(hit).toBeDefined();
    const open = await memex(['open', hit.document_id]);
    expect(open.code, open.err).toBe(0);
    expect(open.out).toMatch(/lighthouse/i);
    const ask = await memex(['ask', 'When does the ferry leave?']);
    expect(ask.code, ask.err).toBe(0);
    expect(ask.out).toMatch(/sources:/);
    const help = await memex(['help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/usage: memex/);
  });

  it('verbs that need the database never open it a second time', async () => {
    const runs = {
      serve: backend === 'pglite' ? await memex(['serve']) : undefined,
      bare: backend === 'pglite' ? await memex([]) : undefined,
      migrate: await memex(['migrate']),
      status: await memex(['status']),
      reindexFailed: await memex(['reindex', '--failed']),
      reindexModel: backend === 'pglite' ? await memex(['reindex', '--model', 'hashing-256']) : undefined,
      relationships: await memex(['relationships', '--recompute'], { SELF_IDENTIFIERS: 'me@example.org' }),
      gc: await memex(['gc', '--dry-run']),
      export: await memex(['export', '--format', 'ndjson', '--out', 'all.ndjson']),
      backup: await memex(['backup', '--out', 'backup.tar']),
      forget: await memex(['forget', '--source', 'note', '--dry-run']),
      rethread: await memex(['rethread'], { SELF_IDENTIFIERS: 'me@example.org' }),
    };
    // restore never writes over a store in use: the data directory (or database) already holds memex data.
    const restore = await memex(['restore', 'backup.tar']);
    expectRefused(restore, backend === 'pglite' ? /not empty|open in another process/ : /is not empty \(it holds /);
    for (const r of Object.values(runs)) if (r) expect(r.err).not.toMatch(/Aborted\(\)/);
    if (backend === 'pglite') {
      expectRefused(runs.serve!, /already owns this data directory/);
      expectRefused(runs.bare!, /already owns this data directory/);
      expectRefused(runs.migrate, /applies migrations when it starts/);
      expectRefused(runs.reindexModel!, /open in another process|is running on port/);
      expectRefused(runs.rethread, /open in another process|is running on port/);
      // These ask the running server over HTTP.
      for (const verb of ['status', 'reindexFailed', 'relationships', 'gc', 'export', 'backup', 'forget'] as const) expect(runs[verb].code, `${verb}: ${runs[verb].err}`).toBe(0);
      expect(databaseLockHolder(path.join(dataDir, 'pglite'))?.pid).toBe(process.pid);
    } else {
      for (const [verb, r] of Object.entries(runs)) if (r) expect(r.code, `${verb}: ${r.err}`).toBe(0);
    }
    // The server is unharmed: it still reads and writes.
    expect(await activeDocuments()).toBe(held);
    const res = await fetch(`${server.url}/v1/healthz`);
    expect(((await res.json()) as { status: string }).status).toBe('ok');
  });
});
