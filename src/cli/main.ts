/**
 * The `memex` command: the table of verbs (VERBS, src/cli/verbs.ts) gives `memex help` and the dispatch;
 * runVerb reads each verb's options, --help, --url/--token and exit codes.
 *
 * Only light modules are imported up front; each verb imports what it needs (the server, the database drivers)
 * when it runs, so `memex help` and the client verbs start in a fraction of a second.
 */
import path from 'node:path';
import { ConfigError, loadServerConfig } from '../config/server.ts';
import { DatabaseLockedError } from '../db/lock.ts';
import type { ServerRole } from '../app/server.ts';
import { UsageError } from '../util/errors.ts';
import { isUsageError } from './usage.ts';
import { defineVerb, findVerb, helpText, runVerb, type Verb } from './verbs.ts';
import { operatorDatabase } from './database.ts';
import { SEARCH, ASK, OPEN } from './search.ts';
import { TAG, SAVED } from './organize.ts';
import { PEOPLE } from './people.ts';
import { INGEST } from './ingest.ts';
import { IMPORT_MAIL } from './import-mail.ts';
import { COVERAGE } from './coverage.ts';
import { SESSIONS } from './sessions.ts';
import { SIGNIN_LINK } from './signin-link.ts';
import { FORGET } from './forget.ts';
import { GC } from './gc.ts';
import { EXPORT } from './export.ts';
import { BACKUP, RESTORE } from './backup.ts';



async function serve(values: { role: string; config?: string; 'no-sources': boolean }): Promise<void> {
  const role = values.role as ServerRole;
  if (!['all', 'gateway', 'worker'].includes(role)) throw new UsageError(`--role must be all, gateway or worker`);
  // performance.now() counts from the process's start: "ready in" includes loading node and memex.
  const startedAt = 0;
  const config = loadServerConfig();
  // One line per phase, so a first start never sits silent (the server's own log is JSON on stdout).
  const say = (line: string) => process.stderr.write(`memex: ${(performance.now() / 1000).toFixed(1).padStart(5)} s  ${line}\n`);
  // The port opens before the server's modules load (seconds on a loaded machine): from the first
  // moment GET /v1/readyz answers 503 with the phase, and a browser sees "memex is starting".
  let early: import('../gateway/early-listener.ts').EarlyListener | undefined;
  if (!config.databaseUrl) {
    // The embedded database another server holds: say so before taking a port (which it holds too).
    const { databaseLockHolder, lockFileFor } = await import('../db/lock.ts');
    const dir = path.join(config.dataDir, 'pglite');
    const holder = databaseLockHolder(dir);
    if (holder) throw new DatabaseLockedError(lockFileFor(dir), holder);
  }
  if (role !== 'worker') {
    const { listenEarly } = await import('../gateway/early-listener.ts');
    const { API_VERSION } = await import('../gateway/version.ts');
    early = await listenEarly({ host: config.host, port: config.port, database: config.databaseUrl ? 'postgres' : 'pglite', version: API_VERSION, allowedHosts: config.allowedHosts });
    say(`starting on ${early.url} (GET /v1/readyz follows the start)`);
  }
  const { startServer } = await import('../app/server.ts');
  let server: Awaited<ReturnType<typeof startServer>> | undefined;
  try {
    // Every setting the server reads, before the database opens: a typo in a search or embedding setting
    // stops the start now rather than after a slow open. (The agent's SVC_* settings are not the server's.)
    const { ALL_SETTINGS, settingErrors } = await import('./settings.ts');
    const problems = settingErrors(process.env, ALL_SETTINGS.filter((g) => g.component !== 'agent'));
    if (problems.length > 0) throw new ConfigError(problems.join('; '));
    server = await startServer(config, role, {
      early,
      startedAt,
      onProgress: say,
      onFatal: () => {
        // The model could not be loaded (like a bad setting before, only found later): stop.
        void (server ? server.close() : Promise.resolve()).finally(() => process.exit(1));
      },
    });
  } catch (err) {
    await early?.close();
    throw err;
  }
  const running = server;
  // The sources of the agent configuration (docs/sources.md): run here too, unless --no-sources or role worker.
  let sources: import('../app/serve-sources.ts').ServeSources | null = null;
  if (role !== 'worker' && !values['no-sources'] && running.url) {
    const { startServeSources } = await import('../app/serve-sources.ts');
    try {
      const tokens = running.config;
      sources = await startServeSources({ configPath: values.config, gatewayUrl: running.url, token: tokens.authToken!, catalogToken: tokens.catalogToken, say });
    } catch (err) {
      // A bad agent configuration stops nothing of the server: said, and the server serves on.
      say(`sources: not started: ${(err as Error).message}`);
    }
  }
  let stopping = false;
  const stop = async (signal: string) => {
    // Nothing acknowledged is lost when the process ends at any point (every write is committed before it is
    // answered), so a stop that hangs, or a second Ctrl-C, may end it at once: the next start catches up.
    if (stopping) {
      say(`${signal} again: exiting now (the next start catches up)`);
      process.exit(130);
    }
    stopping = true;
    say(`${signal}: stopping (Ctrl-C again to exit at once)`);
    setTimeout(() => {
      say(`still stopping after ${STOP_GRACE_SECONDS} s; exiting now (the next start catches up)`);
      process.exit(1);
    }, STOP_GRACE_SECONDS * 1000).unref();
    running.app?.log.info({ signal }, 'shutting down');
    if (sources) {
      say('stopping: the sources');
      await sources.close().catch(() => undefined);
    }
    await running.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

/** How long a stop may take before the process ends without finishing it. */
const STOP_GRACE_SECONDS = 20;

/** `memex sources [list | pause SOURCE | resume SOURCE]`: asks the running server (docs/sources.md). */
async function sources(args: string[]): Promise<void> {
  const { runningServer } = await import('../client/server.ts');
  const { sourcesCommand, SourcesUsageError } = await import('./sources.ts');
  const client = await runningServer();
  if (!client) throw new UsageError('memex sources asks the running server: start it with `memex serve` (or set MEMEX_URL)');
  try {
    await sourcesCommand(client, args, (l) => console.log(l));
  } catch (err) {
    if (err instanceof SourcesUsageError) throw new UsageError(err.message);
    throw err;
  }
}

/** Over HTTP when a server answers, else from the database. */
async function status(): Promise<void> {
  const op = await import('./operator.ts');
  const { serverOrDatabase } = await import('../client/server.ts');
  const report = await serverOrDatabase(
    { openDatabase: () => operatorDatabase() },
    async (server) => {
      const st = await op.statusOverHttp(server);
      // The sources the agents run and how fresh each is (docs/sources.md).
      const cov = await server.call('coverage', { query: { missing_limit: 0 } }).catch(() => null);
      return Object.assign(st, { sourceLines: cov ? (await import('./sources.ts')).formatSources(cov.sources) : [] });
    },
    async (db) => {
      const st = await (await import('../embedding/index.ts')).serverStatus(db);
      const { listCoverage } = await import('../coverage/store.ts');
      const cov = await listCoverage(db, { missingLimit: 0 }).catch(() => []);
      return Object.assign(st, { sourceLines: (await import('./sources.ts')).formatSources(cov) });
    },
  );
  for (const line of op.formatStatus(report)) console.log(line);
  for (const line of (report as { sourceLines?: string[] }).sourceLines ?? []) console.log(line);
}

async function reindex(values: { failed: boolean; model?: string; reparse: boolean; wait: boolean }): Promise<void> {
  if ([values.failed, Boolean(values.model), values.reparse].filter(Boolean).length !== 1) {
    throw new UsageError('reindex needs exactly one of --failed, --model NAME or --reparse');
  }
  if (values.reparse) return reparseCommand();
  if (values.failed) {
    const op = await import('./operator.ts');
    const server = await (await import('../client/server.ts')).runningServer();
    if (server) {
      const r = await server.call('reindexFailed', {});
      console.log(`${r.queued} failed chunk(s) queued again`);
      if (values.wait) await op.watchQueueOverHttp(server);
      return;
    }
  }
  const ops = await import('../embedding/index.ts');
  const db = await operatorDatabase();
  try {
    if (values.failed) {
      console.log(`${await ops.reindexFailed(db)} failed chunk(s) queued again`);
    } else {
      const r = await ops.reindexModel(db, values.model!);
      console.log(`${r.queued} chunk(s) queued for ${r.model}${r.replaced ? ` (abandoned the unfinished ${r.replaced})` : ''}`);
    }
    if (values.wait) await ops.watchEmbeddingQueue(db);
  } finally {
    await db.close();
  }
}

/** `memex reindex --reparse`: every stored message rebuilt from its original (src/maintenance/reparse.ts). */
async function reparseCommand(): Promise<void> {
  const { formatReparse } = await import('./reparse.ts');
  const server = await (await import('../client/server.ts')).runningServer();
  if (server) {
    process.stderr.write('reparse: the server is rebuilding stored messages from their originals…\n');
    const r = await server.call('reparseEmail', {});
    for (const line of formatReparse(r)) console.log(line);
    if (r.failed > 0) process.exitCode = 1;
    return;
  }
  const config = loadServerConfig();
  const db = await operatorDatabase(config);
  try {
    const { createObjectStore, loadFilesConfig } = await import('../files/config.ts');
    const { Catalog } = await import('../catalog/catalog.ts');
    const { reparseEmail } = await import('../maintenance/reparse.ts');
    const store = await createObjectStore(loadFilesConfig(process.env, config.dataDir));
    const { compileBodyValidator } = await import('../gateway/validation.ts');
    const { IngestRequest } = await import('../schemas/ingest.ts');
    const r = await reparseEmail(
      { db, store, catalog: new Catalog(db, { phoneRegion: config.defaultPhoneRegion }), validate: compileBodyValidator(IngestRequest) },
      { onProgress: (done) => process.stderr.write(`\rreparse: ${done} email documents`) },
    );
    process.stderr.write('\n');
    for (const line of formatReparse(r)) console.log(line);
    if (r.failed > 0) process.exitCode = 1;
  } finally {
    await db.close();
  }
}

async function rethreadCommand(): Promise<void> {
  const { rethreadEmail } = await import('../catalog/email-threads.ts');
  const { recomputeRelationships } = await import('../relationships/recompute.ts');
  const { loadRelationshipConfig } = await import('../relationships/config.ts');
  const config = loadServerConfig();
  const db = await operatorDatabase(config);
  try {
    const r = await rethreadEmail(db, { onProgress: (p) => process.stderr.write(`\rrethread: ${p.done}/${p.total} email documents`) });
    process.stderr.write('\n');
    const rel = loadRelationshipConfig();
    await recomputeRelationships(db, { halfLifeDays: rel.halfLifeDays, selfIdentifiers: rel.selfIdentifiers, phoneRegion: config.defaultPhoneRegion });
    console.log(`${r.done} email documents in ${r.threads} conversations; relationships recomputed`);
  } finally {
    await db.close();
  }
}

async function migrateCommand(): Promise<void> {
  const config = loadServerConfig();
  const { openDatabase } = await import('../db/index.ts');
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, migrate: false });
  const { migrate } = await import('../db/migrate.ts');
  const applied = await migrate(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  await db.close();
}

/** The usage of a verb without options: its line of `memex help`. */
const plain = (name: string, help: string) => `usage: memex ${name}\n\n${help.trim().replace(/^\S+\s+/, '').replace(/\n\s+/g, ' ')}`;

const SOURCES_HELP = `  sources [pause|resume SOURCE]       the sources the agents run, how fresh each is; pause or resume one`;
const STATUS_HELP = `  status                              documents per source and status, the embedding queue, throughput,
                                      failures (asks the running server when there is one)`;
const REINDEX_HELP = `  reindex --failed                    put failed chunks back in the embedding queue (via the running
                                      server when there is one)
  reindex --model NAME                re-embed everything with another model (the old vectors serve
                                      search until the new ones are complete)
  reindex --reparse                   rebuild every stored message's text and metadata from its
                                      original (a changed one becomes a new version)`;
const RETHREAD_HELP = `  rethread                            group stored email into conversations again (and recompute
                                      relationships); the server does it once by itself after upgrading`;
const MIGRATE_HELP = `  migrate                             apply database migrations and exit`;
const CONFIG_HELP = `  config                              every setting's value here (secrets masked) or its default, and
                                      any problem with them (docs/configuration.md)`;
const SERVE_HELP = `  serve [--role all|gateway|worker]   run the server on HOST:PORT (default role: all); also runs the
        [--config PATH] [--no-sources] sources of the agent configuration (docs/sources.md)`;

/** Every verb, in the order `memex help` lists them. */
const VERBS: readonly Verb[] = [
  defineVerb({
    name: 'serve',
    keepsRunning: true,
    lockedHint: 'a memex server already owns this data directory; one server per DATA_DIR',
    help: SERVE_HELP,
    usage: `usage: memex serve [--role all|gateway|worker] [--config PATH] [--no-sources]

Runs the server on HOST:PORT (default role: all; gateway: the API only; worker: the embedding worker only),
and the sources of the agent configuration at --config (docs/sources.md) unless --no-sources.`,
    options: {
      role: { kind: 'string', default: 'all', description: 'all, gateway or worker' },
      config: { kind: 'string', description: 'the agent configuration whose sources the server runs' },
      'no-sources': { kind: 'boolean', description: 'run no sources' },
    },
    run: ({ values }) => serve(values as unknown as Parameters<typeof serve>[0]),
  }),
  defineVerb({
    name: 'sources',
    help: SOURCES_HELP,
    usage: `usage: memex sources [list | pause SOURCE | resume SOURCE]

The sources the agents run and how fresh each is; pause or resume one (SOURCE: a source_id, or a part
of its name naming one source). Asks the running server (docs/sources.md).`,
    positionals: 'any',
    run: ({ args }) => sources(args),
  }),
  defineVerb({
    name: 'agent',
    keepsRunning: true,
    passThrough: true,
    help: `  agent [--config PATH] [--print-config]
                                      run the host agent (loopback daemon, port 7090); see docs/agent.md`,
    run: async ({ args }) => {
      const { runAgentCommand } = await import('../app/agent.ts');
      const { runMailImport } = await import('./import-mail.ts');
      const code = await runAgentCommand(args, undefined, { mailImport: runMailImport });
      if (code !== 0) process.exit(code);
    },
  }),
  INGEST,
  defineVerb({
    name: 'import',
    passThrough: true,
    help: `  import PATH                         import a file or folder, its format found by content: vCard contacts
                                      (docs/people.md), iCalendar events and tasks (docs/calendar.md), a
                                      Markdown/Obsidian notes vault, Firefox/Chrome history and bookmarks, a
                                      Google Takeout archive (docs/imports.md)
${IMPORT_MAIL.help}`,
    run: async ({ args }) => {
      const { runMailImport } = await import('./import-mail.ts');
      if (args[0] === 'mail') return runMailImport(args);
      return (await import('../imports/registry.ts')).runImportCommand(args, process.stderr, { mailImport: runMailImport });
    },
  }),
  SEARCH,
  TAG,
  SAVED,
  ASK,
  OPEN,
  defineVerb({ name: 'status', help: STATUS_HELP, usage: plain('status', STATUS_HELP), run: () => status() }),
  defineVerb({
    name: 'reindex',
    help: REINDEX_HELP,
    usage: `usage: memex reindex (--failed | --model NAME | --reparse) [--wait]

${REINDEX_HELP.replace(/^  reindex /gm, '  ')}
  --wait                              follow the queue with a progress bar`,
    options: {
      failed: { kind: 'boolean', description: 'put failed chunks back in the queue' },
      model: { kind: 'string', description: 're-embed everything with this model' },
      reparse: { kind: 'boolean', description: "rebuild every stored message from its original" },
      wait: { kind: 'boolean', description: 'follow the queue' },
    },
    run: ({ values }) => reindex(values as unknown as Parameters<typeof reindex>[0]),
  }),
  defineVerb({
    name: 'relationships',
    passThrough: true,
    help: `  relationships --recompute           recompute every relationship edge now`,
    run: async ({ args }) => {
      await (await import('./relationships.ts')).relationshipsCommand(args);
    },
  }),
  PEOPLE,
  defineVerb({
    name: 'mcp',
    keepsRunning: true,
    passThrough: true,
    help: `  mcp [--url URL] [--token TOKEN]     MCP server on stdio for AI assistants (docs/mcp.md)`,
    run: async ({ args }) => (await import('../mcp/stdio.ts')).runMcpCommand(args),
  }),
  COVERAGE,
  SESSIONS,
  SIGNIN_LINK,
  FORGET,
  GC,
  EXPORT,
  BACKUP,
  RESTORE,
  defineVerb({ name: 'rethread', help: RETHREAD_HELP, usage: plain('rethread', RETHREAD_HELP), run: () => rethreadCommand() }),
  defineVerb({
    name: 'migrate',
    lockedHint: 'the server applies migrations when it starts; stop it to run `memex migrate` by hand',
    help: MIGRATE_HELP,
    usage: plain('migrate', MIGRATE_HELP),
    run: () => migrateCommand(),
  }),
  defineVerb({
    name: 'config',
    help: CONFIG_HELP,
    usage: 'Usage: memex config\n  every setting, its value here (secrets masked) or its default, and any problem; docs/configuration.md',
    run: async ({ out }) => (await import('./settings.ts')).runConfigCommand([], process.env, (s) => out.write(s)),
  }),
  defineVerb({
    name: 'help',
    aliases: ['--help', '-h'],
    help: `  help                                this text`,
    positionals: 'any',
    run: async () => console.log(USAGE),
  }),
];

const USAGE = helpText(
  VERBS,
  'usage: memex <command> [options]\n\ncommands:',
  'Add --wait to reindex to follow the queue with a progress bar.\nConfiguration comes from the environment; see docs/configuration.md.',
);

/** The operator verbs open the configured database themselves when no server answers. */
const operatorDatabaseFromEnv = () => operatorDatabase();

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  const verb = findVerb(VERBS, command);
  if (!verb) throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
  const code = await runVerb(verb, rest);
  if (code !== 0) process.exitCode = code;
}

/**
 * A one-shot verb ends the process as soon as its output is written. Otherwise fetch's idle keep-alive timer to
 * the server held the process for about a second after `memex search` had printed (issue 35).
 */
async function exitWhenFlushed(): Promise<never> {
  await new Promise<void>((resolve) => process.stdout.write('', () => resolve()));
  await new Promise<void>((resolve) => process.stderr.write('', () => resolve()));
  process.exit(process.exitCode ?? 0);
}

/**
 * `memex search x | head -3`: the reader closes the pipe and the next write fails with EPIPE. That is the reader
 * saying it has enough, not an error of memex: end quietly instead of dying with a stack trace.
 */
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}

main(process.argv.slice(2)).then(() => {
  if (!findVerb(VERBS, process.argv[2] ?? 'serve')?.keepsRunning) return exitWhenFlushed();
}, (err: unknown) => {
  if (err instanceof DatabaseLockedError) {
    const hint = findVerb(VERBS, process.argv[2] ?? 'serve')?.lockedHint;
    console.error(`memex: ${hint ? `${hint}.\n  ` : ''}${err.message}`);
  } else if (err instanceof ConfigError) console.error(`memex: configuration error: ${err.message}`);
  else if (isUsageError(err)) {
    console.error(`memex: ${(err as Error).message}`);
    process.exit(2);
  } else console.error(`memex: ${(err as Error).message ?? err}`);
  process.exit(1);
});
