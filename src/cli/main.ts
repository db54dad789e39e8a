/**
 * The `memex` command: the table of verbs (VERBS, src/cli/verbs.ts) gives `memex help` and the dispatch.
 * Each verb parses its own options.
 *
 * Only light modules are imported up front; each verb imports what it needs (the server, the database drivers)
 * when it runs, so `memex help` and the client verbs start in a fraction of a second.
 */
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError, loadServerConfig, type ServerConfig } from '../config/server.ts';
import { DatabaseLockedError } from '../db/lock.ts';
import type { Database } from '../db/types.ts';
import type { ServerRole } from '../app/server.ts';
import { UsageError } from '../util/errors.ts';
import { isUsageError } from './usage.ts';
import { defineVerb, findVerb, helpText, type Verb } from './verbs.ts';

const openDatabase: typeof import('../db/index.ts').openDatabase = async (opts) => (await import('../db/index.ts')).openDatabase(opts);



async function serve(args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { role: { type: 'string', default: 'all' }, config: { type: 'string' }, 'no-sources': { type: 'boolean' } } });
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

/**
 * Opens the configured database for an operator command. PGlite is single-process: when a server
 * already answers on this machine's port with the embedded database, refuse instead of risking it.
 */
async function operatorDatabase(config: ServerConfig): Promise<Database> {
  if (!config.databaseUrl) {
    const { pathOf } = await import('../client/call.ts');
    const running = await fetch(`http://127.0.0.1:${config.port}${pathOf('health')}`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.json() as Promise<{ database?: string }>)
      .catch(() => null);
    if (running?.database === 'pglite') {
      throw new UsageError(
        `a memex server is running on port ${config.port} with the embedded database; stop it first ` +
          `(PGlite serves one process), or use DATABASE_URL with a PostgreSQL server`,
      );
    }
  }
  return openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
}

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
    { openDatabase: () => operatorDatabase(loadServerConfig()) },
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

async function reindex(args: string[]): Promise<void> {
  const { values } = parseArgs({
    args,
    options: {
      failed: { type: 'boolean', default: false },
      model: { type: 'string' },
      reparse: { type: 'boolean', default: false },
      wait: { type: 'boolean', default: false },
    },
  });
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
  const db = await operatorDatabase(loadServerConfig());
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
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, migrate: false });
  const { migrate } = await import('../db/migrate.ts');
  const applied = await migrate(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  await db.close();
}

/** Every verb, in the order `memex help` lists them. */
const VERBS: readonly Verb[] = [
  defineVerb({
    name: 'serve',
    keepsRunning: true,
    lockedHint: 'a memex server already owns this data directory; one server per DATA_DIR',
    help: `  serve [--role all|gateway|worker]   run the server on HOST:PORT (default role: all); also runs the
        [--config PATH] [--no-sources] sources of the agent configuration (docs/sources.md)`,
    run: (args) => serve(args),
  }),
  defineVerb({
    name: 'sources',
    help: `  sources [pause|resume SOURCE]       the sources the agents run, how fresh each is; pause or resume one`,
    run: (args) => sources(args),
  }),
  defineVerb({
    name: 'agent',
    keepsRunning: true,
    help: `  agent [--config PATH] [--print-config]
                                      run the host agent (loopback daemon, port 7090); see docs/agent.md`,
    run: async (args) => {
      const { runAgentCommand } = await import('../app/agent.ts');
      const { runMailImport } = await import('./import-mail.ts');
      const code = await runAgentCommand(args, undefined, { mailImport: runMailImport });
      if (code !== 0) process.exit(code);
    },
  }),
  defineVerb({
    name: 'ingest',
    help: `  ingest PATH...                      upload files and folders to the running server (docs/files.md)`,
    run: async (args) => (await import('./ingest.ts')).runIngestCommand(args),
  }),
  defineVerb({
    name: 'import',
    help: `  import PATH                         import a file or folder, its format found by content: vCard contacts
                                      (docs/people.md), iCalendar events and tasks (docs/calendar.md), a
                                      Markdown/Obsidian notes vault, Firefox/Chrome history and bookmarks, a
                                      Google Takeout archive (docs/imports.md)
  import mail PATH...                 import mbox files and Maildir folders (docs/email-collectors.md)`,
    run: async (args) => {
      if (args[0] === 'mail') return (await import('./import-mail.ts')).runMailImport(args.slice(1));
      const { runMailImport } = await import('./import-mail.ts');
      return (await import('../imports/registry.ts')).runImportCommand(args, process.stderr, { mailImport: runMailImport });
    },
  }),
  defineVerb({
    name: 'search',
    help: `  search QUERY... [--type T] [--person P] [--since D] [--until D] [-k N] [--json]
                                      search the running server (memex search -h for every filter)`,
    run: async (args) => (await import('./search.ts')).runSearchCommand(args),
  }),
  defineVerb({
    name: 'tag',
    help: `  tag add|remove NAME QUERY... | tag list | tag rule add NAME QUERY... | tag rule list | tag rule remove ID
                                      tags by hand and by rule (docs/organize.md)`,
    run: async (args) => (await import('./organize.ts')).runTagCommand(args),
  }),
  defineVerb({
    name: 'saved',
    help: `  saved list | saved add NAME QUERY... | saved remove NAME
                                      saved searches; run one with memex search @NAME`,
    run: async (args) => (await import('./organize.ts')).runSavedCommand(args),
  }),
  defineVerb({
    name: 'ask',
    help: `  ask QUESTION... [-k N] [--json]     answer a question from your documents, with its sources`,
    run: async (args) => (await import('./search.ts')).runAskCommand(args),
  }),
  defineVerb({
    name: 'open',
    help: `  open ID [--json] [--raw]            print a document found by search or ask (--raw: a message's
                                      original bytes)`,
    run: async (args) => (await import('./search.ts')).runOpenCommand(args),
  }),
  defineVerb({
    name: 'status',
    help: `  status                              documents per source and status, the embedding queue, throughput,
                                      failures (asks the running server when there is one)`,
    run: () => status(),
  }),
  defineVerb({
    name: 'reindex',
    help: `  reindex --failed                    put failed chunks back in the embedding queue (via the running
                                      server when there is one)
  reindex --model NAME                re-embed everything with another model (the old vectors serve
                                      search until the new ones are complete)
  reindex --reparse                   rebuild every stored message's text and metadata from its
                                      original (a changed one becomes a new version)`,
    run: (args) => reindex(args),
  }),
  defineVerb({
    name: 'relationships',
    help: `  relationships --recompute           recompute every relationship edge now`,
    run: async (args) => {
      await (await import('./relationships.ts')).relationshipsCommand(args);
    },
  }),
  defineVerb({
    name: 'people',
    help: `  people candidates | merge A B       people with one name under several addresses; merge B into A`,
    run: async (args) => (await import('./people.ts')).runPeopleCommand(args),
  }),
  defineVerb({
    name: 'mcp',
    keepsRunning: true,
    help: `  mcp [--url URL] [--token TOKEN]     MCP server on stdio for AI assistants (docs/mcp.md)`,
    run: async (args) => (await import('../mcp/stdio.ts')).runMcpCommand(args),
  }),
  defineVerb({
    name: 'coverage',
    help: `  coverage [--source S] [--missing]   per source: items in the source against what was stored, and why
                                      the rest was not (docs/coverage.md)`,
    run: async (args) => (await import('./coverage.ts')).runCoverageCommand(args, operatorDatabaseFromEnv),
  }),
  defineVerb({
    name: 'sessions',
    help: `  sessions [revoke ID... | revoke --all]
                                      the web UI's signed-in browsers, and signing them out (docs/ui.md)`,
    run: async (args) => (await import('./sessions.ts')).runSessionsCommand(args, operatorDatabaseFromEnv),
  }),
  defineVerb({
    name: 'signin-link',
    help: `  signin-link [--json]                a one-time sign-in link for the web UI of the running server`,
    run: async (args) => (await import('./signin-link.ts')).runSigninLinkCommand(args),
  }),
  defineVerb({
    name: 'forget',
    help: `  forget --person ID | --doc ID | --source TYPE [--account ID] | --identifier VALUE
         [--block] [--dry-run] [--yes]
                                      erase it with everything derived from it (docs/forget.md)`,
    run: async (args) => (await import('./forget.ts')).runForgetCommand(args),
  }),
  defineVerb({
    name: 'gc',
    help: `  gc [--dry-run] [--grace-hours N]    collect chunks, vectors, files and objects nothing uses`,
    run: async (args) => (await import('./gc.ts')).runGcCommand(args, operatorDatabaseFromEnv),
  }),
  defineVerb({
    name: 'export',
    help: `  export --format ndjson [--out FILE] documents, threads and people as NDJSON (the way to leave memex)`,
    run: async (args) => (await import('./export.ts')).runExportCommand(args, operatorDatabaseFromEnv),
  }),
  defineVerb({
    name: 'backup',
    help: `  backup --out FILE                   database and stored files in one file, while the server runs`,
    run: async (args) => (await import('./backup.ts')).runBackupCommand(args, operatorDatabaseFromEnv),
  }),
  defineVerb({
    name: 'restore',
    help: `  restore FILE                        recreate a backup in an empty DATA_DIR (or empty DATABASE_URL)`,
    run: async (args) => (await import('./backup.ts')).runRestoreCommand(args),
  }),
  defineVerb({
    name: 'rethread',
    help: `  rethread                            group stored email into conversations again (and recompute
                                      relationships); the server does it once by itself after upgrading`,
    run: () => rethreadCommand(),
  }),
  defineVerb({
    name: 'migrate',
    lockedHint: 'the server applies migrations when it starts; stop it to run `memex migrate` by hand',
    help: `  migrate                             apply database migrations and exit`,
    run: () => migrateCommand(),
  }),
  defineVerb({
    name: 'config',
    help: `  config                              every setting's value here (secrets masked) or its default, and
                                      any problem with them (docs/configuration.md)`,
    run: async (args) => (await import('./settings.ts')).runConfigCommand(args, process.env, (s) => process.stdout.write(s)),
  }),
  defineVerb({
    name: 'help',
    aliases: ['--help', '-h'],
    help: `  help                                this text`,
    run: async () => console.log(USAGE),
  }),
];

const USAGE = helpText(
  VERBS,
  'usage: memex <command> [options]\n\ncommands:',
  'Add --wait to reindex to follow the queue with a progress bar.\nConfiguration comes from the environment; see docs/configuration.md.',
);

/** The operator verbs open the configured database themselves when no server answers. */
const operatorDatabaseFromEnv = () => operatorDatabase(loadServerConfig());

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  const verb = findVerb(VERBS, command);
  if (!verb) throw new UsageError(`unknown command "${command}"\n\n${USAGE}`);
  const code = await verb.run(rest);
  if (typeof code === 'number') process.exitCode = code;
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
