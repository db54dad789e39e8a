/**
 * `memex gc`: through the running server when one answers (POST /v1/admin/gc), else on the
 * database directly — then nothing keeps a search index, so the change log is emptied too.
 */
import type { Database } from '../db/types.ts';
import type { GcResult } from '../maintenance/gc.ts';
import { defineVerb, runVerb, type Output, type VerbIo } from './verbs.ts';

export const GC_USAGE = `usage: memex gc [--dry-run] [--grace-hours N] [--url URL] [--token TOKEN]

Collects chunks and vectors no document uses any more (superseded versions, after the grace period,
default 1 hour), vectors of retired models, stored files nothing references, and — when no server
runs — the search change log. The server also does this every GC_INTERVAL_HOURS (default 24).`;

function print(r: GcResult, out: Output): void {
  out.write(`${r.dry_run ? 'would collect' : 'collected'}: ${r.chunks} chunks (${r.vectors} vectors), ${r.retired_vectors} vectors of retired models, ` +
    `${r.files} file records, ${r.objects} stored objects, ${r.change_log_rows} change-log rows, ` +
    `${r.snapshot_temps ?? 0} snapshot temporary files in ${r.duration_ms} ms\n`);
}

export const GC = defineVerb({
  name: 'gc',
  help: `  gc [--dry-run] [--grace-hours N]    collect chunks, vectors, files and objects nothing uses`,
  usage: GC_USAGE,
  server: 'optional',
  options: {
    'dry-run': { kind: 'boolean', description: 'count, collect nothing' },
    'grace-hours': { kind: 'number', real: true, min: 0, invalid: 'must be a number >= 0', description: 'how long a superseded version is kept (default 1)' },
  },
  async run({ values, env, out, serverOrDatabase }) {
    const graceHours = values['grace-hours'];
    const r = await serverOrDatabase(
      // The route answers collectGarbage's result as it is (its schema omits snapshot_temps when there were none).
      async (server): Promise<GcResult> =>
        (await server.call('collectGarbage', {
          body: { dry_run: values['dry-run'], ...(graceHours === undefined ? {} : { grace_seconds: Math.round(graceHours * 3600) }) },
        })) as GcResult,
      async (db) => {
        const { loadServerConfig } = await import('../config/server.ts');
        const { createObjectStore, loadFilesConfig } = await import('../files/config.ts');
        const { collectGarbage } = await import('../maintenance/gc.ts');
        const { dataDir } = loadServerConfig(env);
        return collectGarbage(db, await createObjectStore(loadFilesConfig(env, dataDir)), {
          dryRun: values['dry-run'],
          changeLog: true,
          dataDir,
          graceMs: graceHours === undefined ? undefined : graceHours * 3_600_000,
        });
      },
    );
    print(r, out);
  },
});

export const runGcCommand = (argv: string[], openDatabase: () => Promise<Database>, env: NodeJS.ProcessEnv = process.env, io: VerbIo = {}): Promise<number> =>
  runVerb(GC, argv, { ...io, openDatabase, env });
