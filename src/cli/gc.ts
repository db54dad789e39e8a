/**
 * `memex gc`: through the running server when one answers (POST /v1/admin/gc), else on the
 * database directly — then nothing keeps a search index, so the change log is emptied too.
 */
import { parseArgs } from 'node:util';
import { serverOrDatabase } from '../client/server.ts';
import { ClientError } from '../client/errors.ts';
import { loadServerConfig } from '../config/server.ts';
import type { Database } from '../db/types.ts';
import { createObjectStore, loadFilesConfig } from '../files/config.ts';
import { collectGarbage, type GcResult } from '../maintenance/gc.ts';

export const GC_USAGE = `usage: memex gc [--dry-run] [--grace-hours N] [--url URL] [--token TOKEN]

Collects chunks and vectors no document uses any more (superseded versions, after the grace period,
default 1 hour), vectors of retired models, stored files nothing references, and — when no server
runs — the search change log. The server also does this every GC_INTERVAL_HOURS (default 24).`;

function print(r: GcResult): void {
  console.log(`${r.dry_run ? 'would collect' : 'collected'}: ${r.chunks} chunks (${r.vectors} vectors), ${r.retired_vectors} vectors of retired models, ` +
    `${r.files} file records, ${r.objects} stored objects, ${r.change_log_rows} change-log rows, ` +
    `${r.snapshot_temps ?? 0} snapshot temporary files in ${r.duration_ms} ms`);
}

export async function runGcCommand(
  argv: string[],
  openDatabase: () => Promise<Database>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'dry-run': { type: 'boolean', default: false },
      'grace-hours': { type: 'string' },
      url: { type: 'string' },
      token: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log(GC_USAGE);
    return 0;
  }
  const graceHours = values['grace-hours'] === undefined ? undefined : Number(values['grace-hours']);
  if (graceHours !== undefined && !(Number.isFinite(graceHours) && graceHours >= 0)) {
    console.error('memex gc: --grace-hours must be a number >= 0');
    return 2;
  }
  try {
    const r = await serverOrDatabase(
      { flags: { url: values.url, token: values.token }, env, openDatabase },
      // The route answers collectGarbage's result as it is (its schema omits snapshot_temps when there were none).
      async (server): Promise<GcResult> =>
        (await server.call('collectGarbage', {
          body: { dry_run: values['dry-run'], ...(graceHours === undefined ? {} : { grace_seconds: Math.round(graceHours * 3600) }) },
        })) as GcResult,
      async (db) =>
        collectGarbage(db, await createObjectStore(loadFilesConfig(env, loadServerConfig(env).dataDir)), {
          dryRun: values['dry-run'],
          changeLog: true,
          dataDir: loadServerConfig(env).dataDir,
          graceMs: graceHours === undefined ? undefined : graceHours * 3_600_000,
        }),
    );
    print(r);
    return 0;
  } catch (err) {
    if (!(err instanceof ClientError)) throw err;
    console.error(`memex gc: ${err.message}`);
    return 1;
  }
}
