/**
 * `memex backup --out FILE` (from the running server, POST /v1/admin/backup, or from the database
 * when none runs) and `memex restore FILE` (into an empty DATA_DIR, or the empty database at
 * DATABASE_URL). The file is written next to its final name and renamed when complete.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { parseArgs } from 'node:util';
import { serverOrDatabase } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { loadServerConfig } from '../config/server.ts';
import { DatabaseLockedError } from '../db/lock.ts';
import type { Database } from '../db/types.ts';
import { createObjectStore, loadFilesConfig } from '../files/config.ts';
import { BackupError, restoreBackup, writeBackup } from '../maintenance/backup.ts';

export const BACKUP_USAGE = `usage: memex backup --out FILE [--url URL] [--token TOKEN]
       memex restore FILE

backup writes the database and every stored file into one tar file, from the running server (a
consistent copy while it works) or, when none runs, from the database directly. restore recreates
them in an empty DATA_DIR (embedded database) or the empty database at DATABASE_URL, from either
backend. A backup holds data only (memex's own table rows and stored files); restore refuses
anything else. See docs/forget.md ("Back up and restore").`;

export async function runBackupCommand(argv: string[], openDatabase: () => Promise<Database>, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: { out: { type: 'string', short: 'o' }, url: { type: 'string' }, token: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help || !values.out) {
    (values.help ? console.log : console.error)(BACKUP_USAGE);
    return values.help ? 0 : 2;
  }
  const final = path.resolve(values.out);
  const partial = `${final}.partial`;
  try {
    await serverOrDatabase(
      { flags: { url: values.url, token: values.token }, env, openDatabase },
      async (server) => pipeline(await server.download('backup', {}), fs.createWriteStream(partial, { mode: 0o600 })),
      async (db) => {
        const config = loadServerConfig(env);
        const files = loadFilesConfig(env, config.dataDir);
        await writeBackup(
          {
            db,
            store: await createObjectStore(files),
            maxObjectBytes: files.maxUploadBytes,
          },
          fs.createWriteStream(partial, { mode: 0o600 }),
        );
      },
    );
    fs.renameSync(partial, final);
    console.log(`memex backup: ${final} (${(fs.statSync(final).size / 1e6).toFixed(1)} MB)`);
    return 0;
  } catch (err) {
    fs.rmSync(partial, { force: true });
    if (err instanceof BackupError || err instanceof ClientError) {
      console.error(`memex backup: ${err.message}`);
      return 1;
    }
    throw err;
  }
}

export async function runRestoreCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const { positionals, values } = parseArgs({ args: argv, allowPositionals: true, options: { help: { type: 'boolean', short: 'h' } } });
  if (values.help || positionals.length !== 1) {
    (values.help ? console.log : console.error)(BACKUP_USAGE);
    return values.help ? 0 : 2;
  }
  const config = loadServerConfig(env);
  const files = loadFilesConfig(env, config.dataDir);
  try {
    const report = await restoreBackup(path.resolve(positionals[0]), {
      dataDir: config.dataDir,
      databaseUrl: config.databaseUrl,
      store: await createObjectStore(files),
      maxObjectBytes: files.maxUploadBytes,
    });
    const m = report.manifest;
    const rows = [...report.rows.values()].reduce((a, b) => a + b, 0);
    console.log(
      `memex restore: ${report.rows.get('documents') ?? 0} document versions, ${rows} rows in ${report.rows.size} tables and ` +
        `${report.objects} stored files from a ${m.database} backup of ${m.created_at}` +
        (config.databaseUrl ? '' : ` into ${path.join(config.dataDir, 'pglite')}`),
    );
    return 0;
  } catch (err) {
    // A backup that is not whole and memex's is refused in one line; nothing of it stays in the target.
    const known = err instanceof BackupError || err instanceof DatabaseLockedError;
    console.error(`memex restore: ${known ? '' : 'failed: '}${(err as Error).message}`);
    return 1;
  }
}
