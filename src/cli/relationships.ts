/**
 * `memex relationships --recompute [--self <person_id>] [--json]`: a full recompute of the relationship
 * edges, printed as a short summary (the result as JSON with --json). When a server answers (src/client/target.ts)
 * it asks it over HTTP (POST /v1/admin/relationships/recompute); otherwise it opens the database directly.
 * `--self` needs the database (the route computes for the stored or detected self person). The database
 * modules are imported only on that path, so asking the server starts fast.
 */
import { parseArgs } from 'node:util';
import { ConfigError, loadServerConfig } from '../config/server.ts';
import { isUuid } from '../util/ids.ts';
import type { RecomputeResult } from '../relationships/recompute.ts';

export const RELATIONSHIPS_USAGE = `usage: memex relationships --recompute [--self <person_id>] [--json]

  --recompute        recompute every relationship edge of the self person now
  --self <uuid>      compute for this person instead of the stored/detected self person
  --json             print the result as JSON`;

const SELF_SOURCES: Record<string, string> = {
  given: 'given with --self',
  setting: 'set with PUT /v1/admin/self-person',
  config: 'from SELF_IDENTIFIERS',
  contact_card: 'your own contact card',
  outbound_messages: 'detected from the messages you sent',
  mailboxes: 'detected from your mailboxes',
};

/** What `memex relationships --recompute` prints for a person. */
export function formatRecompute(r: RecomputeResult): string[] {
  if (!r.self_person_id) return ['relationships: no self person known, nothing computed'];
  const seconds = (r.duration_ms / 1000).toFixed(1);
  return [
    `relationships recomputed (${r.mode}) in ${seconds} s: ${r.edges_upserted} people ranked, ${r.edges_removed} removed`,
    `self person: ${r.self_person_id} (${r.self_source ? (SELF_SOURCES[r.self_source] ?? r.self_source) : 'unknown'})`,
  ];
}

export async function relationshipsCommand(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<RecomputeResult | null> {
  const { values } = parseArgs({
    args: argv,
    options: {
      recompute: { type: 'boolean', default: false },
      self: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h' },
    },
    strict: true,
  });
  if (values.help || !values.recompute) {
    console.log(RELATIONSHIPS_USAGE);
    return null;
  }
  if (values.self !== undefined && !isUuid(values.self)) throw new ConfigError('--self must be a person id (uuid)');
  const { runningServer } = await import('../client/server.ts');
  const running = await runningServer({}, env);
  const server = loadServerConfig(env);
  if (running && values.self === undefined) {
    // The route answers the service's result as it is (its schema types self_source as a string).
    const result = (await running.call('recomputeRelationships', {})) as RecomputeResult;
    print(result, values.json);
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
  const { loadRelationshipConfig } = await import('../relationships/config.ts');
  const { recomputeRelationships } = await import('../relationships/recompute.ts');
  const { openDatabase } = await import('../db/index.ts');
  const rel = loadRelationshipConfig(env);
  const db = await openDatabase({ databaseUrl: server.databaseUrl, dataDir: server.dataDir });
  try {
    const result = await recomputeRelationships(db, {
      halfLifeDays: rel.halfLifeDays,
      selfIdentifiers: rel.selfIdentifiers,
      phoneRegion: server.defaultPhoneRegion,
      ...(values.self ? { selfPersonId: values.self } : {}),
    });
    print(result, values.json);
    if (!result.self_person_id) {
      console.error('memex: no self person known: set SELF_IDENTIFIERS or PUT /v1/admin/self-person');
      process.exitCode = 1;
    }
    return result;
  } finally {
    await db.close();
  }
}

function print(result: RecomputeResult, json: boolean | undefined): void {
  if (json) console.log(JSON.stringify(result));
  else for (const line of formatRecompute(result)) console.log(line);
}
