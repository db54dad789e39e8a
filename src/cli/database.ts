/**
 * The database an operator verb opens when no server answers (`memex gc`, `export`, `backup`, `coverage`,
 * `sessions`, `status`, `reindex`, `rethread`). PGlite is single-process: when a server already answers on this
 * machine's port with the embedded database, refuse instead of risking it.
 */
import { loadServerConfig, type ServerConfig } from '../config/server.ts';
import type { Database } from '../db/types.ts';
import { UsageError } from '../util/errors.ts';

export async function operatorDatabase(config: ServerConfig = loadServerConfig()): Promise<Database> {
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
  const { openDatabase } = await import('../db/index.ts');
  return openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
}
