/**
 * `memex coverage` as a user runs it (bin/memex.js in a child process): after `memex import mail` of a Maildir
 * with 10 good messages and 1 unreadable file, the table shows the source with 11 in it, 10 stored and 1 failed
 * (columns aligned as `memex status` does), --missing names the unreadable file and why, --source narrows the
 * list; and the same answers come from the database once the server has stopped.
 */
import fs from 'node:fs/promises';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runMailImport } from '../../src/cli/import-mail.ts';
import { loadServerConfig } from '../../src/config/server.ts';
import { startServer, type RunningServer } from '../../src/server.ts';
import { backend, createServerDatabase } from '../helpers/db.ts';
import { simpleMessage } from '../email-collectors/fixtures.ts';
import { runMemex } from '../helpers/memex-bin.ts';

const TOKEN = 'coverage-cli-token-0123456789';

let dir: string;
let maildir: string;
let server: RunningServer | undefined;
let databaseUrl: string | undefined;
let dropDb: (() => Promise<void>) | undefined;
const saved = { ...process.env };

beforeAll(async () => {
  dir = await fs.mkdtemp(path.join(os.tmpdir(), 'memex-coverage-cli-'));
  process.env.EMBEDDING_PROVIDER = 'hash';
  process.env.EMBEDDING_WORKER = 'false';
  if (backend === 'postgres') {
    const created = await createServerDatabase();
    databaseUrl = created.url;
    dropDb = created.drop;
  }
  const config = { ...loadServerConfig({ DATA_DIR: path.join(dir, 'data'), PORT: '0', LOG_LEVEL: 'silent', AUTH_TOKEN: TOKEN }), databaseUrl };
  server = await startServer(config, 'all');
  maildir = path.join(dir, 'Maildir');
  for (const sub of ['cur', 'new', 'tmp']) mkdirSync(path.join(maildir, sub), { recursive: true });
  for (let n = 1; n <= 10; n++) writeFileSync(path.join(maildir, 'cur', `17000000${n}.M${n}.host:2,S`), simpleMessage(9100 + n));
  writeFileSync(path.join(maildir, 'new', '1700000099.M99.host'), '\u0000\u0001 not a mail message \u0002');
  const sink = { write: () => true, isTTY: false };
  const code = await runMailImport(['mail', maildir, '--url', String(server!.url), '--token', TOKEN], {
    out: sink,
    err: sink,
    env: { HOME: process.env.HOME, MEMEX_MAIL_IMPORT_STATE: path.join(dir, 'import-state.json') },
  });
  expect(code).not.toBe(2);
}, 120_000);

afterAll(async () => {
  await server?.close();
  await dropDb?.();
  process.env = saved;
  await fs.rm(dir, { recursive: true, force: true });
});

async function memex(args: string[], url: string | undefined = server?.url): Promise<{ code: number | null; out: string; err: string }> {
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    AUTH_TOKEN: TOKEN,
    DATA_DIR: path.join(dir, 'data'),
    ...(url ? { MEMEX_URL: url } : { PORT: '1' }),
    ...(databaseUrl ? { DATABASE_URL: databaseUrl } : {}),
  };
  const r = await runMemex(['coverage', ...args], env);
  return { code: r.code, out: r.stdout, err: r.stderr };
}

function expectTable(out: string) {
  const lines = out.split('\n');
  const head = lines.find((l) => l.includes('IN SOURCE'))!;
  const row = lines.find((l) => l.startsWith(`  ${maildir} `))!;
  expect(head).toMatch(/^ {2}SOURCE +COLLECTOR +IN SOURCE +STORED +SKIPPED +FAILED +PENDING +LAST RUN$/);
  expect(row).toMatch(/ import_mail +11 +10 +0 +1 +0 +just now \(partial\)$/);
  // Counts are right-aligned under their headings.
  expect(row.indexOf(' 11 ') + 3).toBe(head.indexOf('IN SOURCE') + 'IN SOURCE'.length);
  expect(row.indexOf(' 10 ') + 3).toBe(head.indexOf('STORED') + 'STORED'.length);
}

describe(`memex coverage (${backend})`, () => {
  it('prints each source with its counts, aligned; --missing names what was not stored and why', async () => {
    const table = await memex([]);
    expect(table.code, table.err).toBe(0);
    expect(table.out).toMatch(/^1 source:/);
    expectTable(table.out);
    expect(table.out).toContain(`${maildir}: 1 not stored`);

    const missing = await memex(['--missing', '--source', 'import_mail']);
    expect(missing.code, missing.err).toBe(0);
    expectTable(missing.out);
    expect(missing.out).toMatch(new RegExp(`  failed  ${path.join(maildir, 'new', '1700000099.M99.host').replace(/[.]/g, '\\.')}  \\(unreadable: `));

    const json = JSON.parse((await memex(['--json', '--missing'])).out);
    expect(json.sources).toEqual([expect.objectContaining({ source_ref: maildir, in_source: 11, stored: 10, failed: 1, missing: [expect.objectContaining({ state: 'failed' })] })]);

    const none = await memex(['--source', 'chatapp']);
    expect(none.code).toBe(1);
    expect(none.err).toContain('no source matches "chatapp"');
    expect((await memex(['--bogus'])).code).toBe(2);
  });

  it('answers from the database when no server runs', async () => {
    await server!.close();
    server = undefined;
    const r = await memex(['--missing'], undefined);
    expect(r.code, r.err).toBe(0);
    expectTable(r.out);
    expect(r.out).toContain('1700000099.M99.host');
  });
});
