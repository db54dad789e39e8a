/**
 * `memex backup --out FILE` (from the running server, POST /v1/admin/backup, or from the database
 * when none runs) and `memex restore FILE` (into an empty DATA_DIR, or the empty database at
 * DATABASE_URL). The file is written next to its final name and renamed when complete.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Database } from '../db/types.ts';
import { UsageError } from '../util/errors.ts';
import { defineVerb, runVerb, type VerbIo } from './verbs.ts';

export const BACKUP_USAGE = `usage: memex backup --out FILE [--url URL] [--token TOKEN]
       memex restore FILE

backup writes the database and every stored file into one tar file, from the running server (a
consistent copy while it works) or, when none runs, from the database directly. restore recreates
them in an empty DATA_DIR (embedded database) or the empty database at DATABASE_URL, from either
backend. A backup holds data only (memex's own table rows and stored files); restore refuses
anything else. See docs/forget.md ("Back up and restore").`;

export const BACKUP = defineVerb({
  name: 'backup',
  help: `  backup --out FILE                   database and stored files in one file, while the server runs`,
  usage: BACKUP_USAGE,
  server: 'optional',
  options: { out: { kind: 'string', short: 'o', description: 'the backup file' } },
  async run({ values, env, out, serverOrDatabase, say }) {
    if (!values.out) throw new UsageError('--out FILE is required');
    const { BackupError, writeBackup } = await import('../maintenance/backup.ts');
    const final = path.resolve(values.out);
    const partial = `${final}.partial`;
    try {
      await serverOrDatabase(
        async (server) => pipeline(await server.download('backup', {}), fs.createWriteStream(partial, { mode: 0o600 })),
        async (db) => {
          const { loadServerConfig } = await import('../config/server.ts');
          const { createObjectStore, loadFilesConfig } = await import('../files/config.ts');
          const files = loadFilesConfig(env, loadServerConfig(env).dataDir);
          await writeBackup({ db, store: await createObjectStore(files), maxObjectBytes: files.maxUploadBytes }, fs.createWriteStream(partial, { mode: 0o600 }));
        },
      );
    } catch (err) {
      fs.rmSync(partial, { force: true });
      if (!(err instanceof BackupError)) throw err;
      say(err.message);
      return 1;
    }
    fs.renameSync(partial, final);
    out.write(`memex backup: ${final} (${(fs.statSync(final).size / 1e6).toFixed(1)} MB)\n`);
  },
});

export const runBackupCommand = (argv: string[], openDatabase: () => Promise<Database>, env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> =>
  runVerb(BACKUP, argv, { ...io, openDatabase, env });

export const RESTORE = defineVerb({
  name: 'restore',
  help: `  restore FILE                        recreate a backup in an empty DATA_DIR (or empty DATABASE_URL)`,
  usage: BACKUP_USAGE,
  positionals: 'any',
  async run({ args, env, out, say }) {
    if (args.length !== 1) throw new UsageError('give one backup FILE');
    const { loadServerConfig } = await import('../config/server.ts');
    const { createObjectStore, loadFilesConfig } = await import('../files/config.ts');
    const { BackupError, restoreBackup } = await import('../maintenance/backup.ts');
    const { DatabaseLockedError } = await import('../db/lock.ts');
    const config = loadServerConfig(env);
    const files = loadFilesConfig(env, config.dataDir);
    try {
      const report = await restoreBackup(path.resolve(args[0]), {
        dataDir: config.dataDir,
        databaseUrl: config.databaseUrl,
        store: await createObjectStore(files),
        maxObjectBytes: files.maxUploadBytes,
      });
      const m = report.manifest;
      const rows = [...report.rows.values()].reduce((a, b) => a + b, 0);
      out.write(
        `memex restore: ${report.rows.get('documents') ?? 0} document versions, ${rows} rows in ${report.rows.size} tables and ` +
          `${report.objects} stored files from a ${m.database} backup of ${m.created_at}` +
          (config.databaseUrl ? '' : ` into ${path.join(config.dataDir, 'pglite')}`) +
          '\n',
      );
      return 0;
    } catch (err) {
      // A backup that is not whole and memex's is refused in one line; nothing of it stays in the target.
      const known = err instanceof BackupError || err instanceof DatabaseLockedError;
      say(`${known ? '' : 'failed: '}${(err as Error).message}`);
      return 1;
    }
  },
});

export const runRestoreCommand = (argv: string[], env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> => runVerb(RESTORE, argv, { ...io, env });
