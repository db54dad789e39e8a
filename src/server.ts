/**
 * `memex serve`: opens the database, applies migrations and serves the gateway.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { Catalog } from './catalog/catalog.ts';
import type { ServerConfig } from './config/server.ts';
import { openDatabase } from './db/index.ts';
import type { Database } from './db/types.ts';
import { createConfiguredOcrEngine, createObjectStore, loadFilesConfig } from './files/config.ts';
import { shutdownExtraction } from './files/extract.ts';
import { buildGateway } from './gateway/app.ts';

export interface RunningServer {
  app: FastifyInstance;
  db: Database;
  url: string;
  close(): Promise<void>;
}

/**
 * Without AUTH_TOKEN the gateway still requires a token: one is generated on first start and kept
 * in DATA_DIR/auth-token (mode 0600), so a fresh install is never an open door.
 */
export function ensureAuthToken(config: ServerConfig): { config: ServerConfig; generatedFile?: string } {
  if (config.authToken) return { config };
  const file = path.join(config.dataDir, 'auth-token');
  fs.mkdirSync(config.dataDir, { recursive: true });
  if (!fs.existsSync(file)) {
    fs.writeFileSync(file, `${crypto.randomBytes(24).toString('base64url')}\n`, { mode: 0o600 });
  }
  return { config: { ...config, authToken: fs.readFileSync(file, 'utf8').trim() }, generatedFile: file };
}

export async function startServer(base: ServerConfig, opts: { env?: NodeJS.ProcessEnv } = {}): Promise<RunningServer> {
  const { config, generatedFile } = ensureAuthToken(base);
  // Files config first: a bad FILE_MAX_BYTES / OBJECT_STORE / OCR_* stops the start before anything is opened.
  const filesConfig = loadFilesConfig(opts.env ?? process.env, config.dataDir);
  const store = await createObjectStore(filesConfig);
  const ocrEngine = await createConfiguredOcrEngine(filesConfig);
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  const catalog = new Catalog(db, { phoneRegion: config.defaultPhoneRegion });
  const app = await buildGateway({ config, db, catalog, files: { store, config: filesConfig, ocrEngine } });
  if (generatedFile) app.log.info({ tokenFile: generatedFile }, 'AUTH_TOKEN not set: using the generated token in this file');
  await app.listen({ port: config.port, host: config.host });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  let closed = false;
  return {
    app,
    db,
    url,
    async close() {
      if (closed) return;
      closed = true;
      await app.close();
      await ocrEngine?.close();
      await shutdownExtraction();
      await db.close();
    },
  };
}
