/**
 * `memex relationships --recompute [--self <person_id>]`: a full recompute of the relationship
 * edges, printed as JSON. When a server answers (src/cli/client.ts) it asks it over HTTP
 * (POST /v1/admin/relationships/recompute); otherwise it opens the database directly. `--self`
 * needs the database (the route computes for the stored or detected self person).
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadServerConfig } from '../config/server.ts';
import { openDatabase } from '../db/index.ts';
import { isUuid } from '../util/ids.ts';
import { loadRelationshipConfig } from './config.ts';
import { recomputeRelationships, type RecomputeResult } from './recompute.ts';

export const RELATIONSHIPS_USAGE = `usage: memex relationships --recompute [--self <person_id>]

  --recompute        recompute every relationship edge of the self person now
  --self <uuid>      compute for this person instead of the stored/detected self person`;

export async function relationshipsCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<RecomputeResult | null> {
  const { values } = parseArgs({
    args: argv,
    options: { recompute: { type: 'boolean', default: false }, self: { type: 'string' }, help: { type: 'boolean', short: 'h' } },
    strict: true,
  });
  if (values.help || !values.recompute) {
    console.log(RELATIONSHIPS_USAGE);
    return null;
  }
  if (values.self !== undefined && !isUuid(values.self)) throw new ConfigError('--self must be a person id (uuid)');
  const { runningServer } = await import('../cli/client.ts');
  const running = await runningServer({}, env);
  const server = loadServerConfig(env);
  if (running && values.self === undefined) {
    const result = await running.request<RecomputeResult>('POST', '/v1/admin/relationships/recompute');
    console.log(JSON.stringify(result));
    if (!result.self_person_id) {
      console.error('memex: no self person known: set SELF_IDENTIFIERS or PUT /v1/admin/self-person');
      process.exitCode = 1;
    }
    return result;
  }
  if (running && !server.databaseUrl) {
    throw new ConfigError(
      '--self needs the database, which the running server holds (PGlite serves one process): stop the server, ' +
        'or set the self person with PUT /v1/admin/self-person and run without --self',
    );
  }
  const rel = loadRelationshipConfig(env);
  const db = await openDatabase({ databaseUrl: server.databaseUrl, dataDir: server.dataDir });
  try {
    const result = await recomputeRelationships(db, {
      halfLifeDays: rel.halfLifeDays,
      selfIdentifiers: rel.selfIdentifiers,
      phoneRegion: server.defaultPhoneRegion,
      ...(values.self ? { selfPersonId: values.self } : {}),
    });
    console.log(JSON.stringify(result));
    if (!result.self_person_id) {
      console.error('memex: no self person known: set SELF_IDENTIFIERS or PUT /v1/admin/self-person');
      process.exitCode = 1;
    }
    return result;
  } finally {
    await db.close();
  }
}
