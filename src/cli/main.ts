/**
 * The `memex` command. Verbs: serve (default), migrate. Each verb's options are in its help.
 */
import { ConfigError, loadServerConfig } from '../config/server.ts';
import { openDatabase } from '../db/index.ts';
import { startServer } from '../server.ts';

const USAGE = `usage: memex <command> [options]

commands:
  serve              run the server (gateway, catalog, embedding worker) on HOST:PORT
  agent              run the host agent (loopback daemon, port 7090); see docs/agent.md
  migrate            apply database migrations and exit
  help               this text

Configuration comes from the environment; see docs/configuration.md.`;

async function serve(): Promise<void> {
  const server = await startServer(loadServerConfig());
  const stop = async (signal: string) => {
    server.app.log.info({ signal }, 'shutting down');
    await server.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void stop('SIGINT'));
  process.once('SIGTERM', () => void stop('SIGTERM'));
}

async function migrateCommand(): Promise<void> {
  const config = loadServerConfig();
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir, migrate: false });
  const { migrate } = await import('../db/migrate.ts');
  const applied = await migrate(db);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
  await db.close();
}

async function main(argv: string[]): Promise<void> {
  const [command = 'serve', ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve();
    case 'migrate':
      return migrateCommand();
    case 'agent': {
      const { runAgentCommand } = await import('../agent/cli.ts');
      const code = await runAgentCommand(rest);
      if (code !== 0) process.exit(code);
      return;
    }
    case 'help':
    case '--help':
    case '-h':
      console.log(USAGE);
      return;
    default:
      console.error(`memex: unknown command "${command}"\n\n${USAGE}`);
      process.exitCode = 2;
  }
}

main(process.argv.slice(2)).catch((err: unknown) => {
  if (err instanceof ConfigError) {
    console.error(`memex: configuration error: ${err.message}`);
  } else {
    console.error(`memex: ${(err as Error).message ?? err}`);
  }
  process.exit(1);
});
