/**
 * `memex serve`: opens the database, applies migrations, starts the embedding worker and serves
 * the gateway. Roles split one deployment across processes on one PostgreSQL:
 *   all      gateway + catalog + embedding worker in one process (default)
 *   gateway  HTTP only (no worker)
 *   worker   the embedding worker only (no HTTP)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Catalog } from './catalog/catalog.ts';
import { emailRethreadPending, rethreadEmail } from './catalog/email-threads.ts';
import type { ServerConfig } from './config/server.ts';
import { isLoopback, SignInCodes } from './gateway/ui.ts';
import { openDatabase } from './db/index.ts';
import type { Database } from './db/types.ts';
import { startTableUpkeep } from './db/upkeep.ts';
import { createConfiguredOcrEngine, createObjectStore, loadFilesConfig } from './files/config.ts';
import { shutdownExtraction } from './files/extract.ts';
import { startEmbeddingService, type EmbeddingService } from './embedding/index.ts';
import type { ObjectStore } from './files/object-store.ts';
import { buildGateway } from './gateway/app.ts';
import { gcIntervalMs, startPeriodicGc } from './maintenance/gc.ts';
import { configureEgress, loadEgressConfig } from './privacy/egress.ts';
import { loadRelationshipConfig } from './relationships/config.ts';
import { RelationshipService } from './relationships/service.ts';
import type { OcrEngine } from './ocr/engine.ts';
import { logDestination } from './util/log.ts';

/** How often the embedded database's tables are checked for ANALYZE and VACUUM (src/db/upkeep.ts). */
const UPKEEP_INTERVAL_MS = 60_000;

export type ServerRole = 'all' | 'gateway' | 'worker';

export interface RunningServer {
  app: FastifyInstance | undefined;
  db: Database;
  embedding: EmbeddingService;
  url: string | undefined;
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

export async function startServer(
  base: ServerConfig,
  role: ServerRole = 'all',
  opts: { env?: NodeJS.ProcessEnv } = {},
): Promise<RunningServer> {
  const { config, generatedFile } = ensureAuthToken(base);
  // Files config first: a bad FILE_MAX_BYTES / OBJECT_STORE / OCR_* stops the start before anything is opened.
  const filesConfig = loadFilesConfig(opts.env ?? process.env, config.dataDir);
  const gcEvery = gcIntervalMs(opts.env ?? process.env);
  const egress = loadEgressConfig(opts.env ?? process.env);
  const db = await openDatabase({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  if (role !== 'all' && db.kind === 'pglite') {
    await db.close();
    throw new Error(`--role ${role} needs a PostgreSQL server (DATABASE_URL): PGlite serves one process only`);
  }
  const log = pino({ level: config.logLevel }, logDestination(config.logFormat));
  // Text sent to a remote LLM or embedding API (or an MCP client elsewhere) is redacted by this policy.
  configureEgress(egress, log.child({ component: 'egress' }));
  let embedding: EmbeddingService | undefined;
  try {
    embedding = await startEmbeddingService({
      db,
      logger: log.child({ component: 'embedding' }),
      startWorker: role === 'gateway' ? false : role === 'worker' ? true : undefined,
    });
  } catch (err) {
    await db.close();
    throw err;
  }
  const service = embedding;
  if (role === 'worker') {
    log.info({ model: service.embedder.name }, 'embedding worker running');
    return {
      app: undefined,
      db,
      embedding: service,
      url: undefined,
      async close() {
        await service.close();
        await db.close();
      },
    };
  }

  const relationships = new RelationshipService(db, {
    ...loadRelationshipConfig(opts.env ?? process.env),
    phoneRegion: config.defaultPhoneRegion,
  });
  const catalog = new Catalog(db, {
    phoneRegion: config.defaultPhoneRegion,
    onChunksQueued: () => service.worker?.notify(),
    onDocumentsIngested: (ids) => relationships.noteDocuments(ids),
  });
  // The object store and the shared OCR engine serve POST /v1/ingest/file (docs/files.md).
  let store: ObjectStore;
  let ocrEngine: OcrEngine | undefined;
  try {
    store = await createObjectStore(filesConfig);
    ocrEngine = await createConfiguredOcrEngine(filesConfig);
  } catch (err) {
    await service.close();
    await db.close();
    throw err;
  }
  // Email stored before conversation threading (migration 090) is re-threaded once, in the background.
  const rethreadStop = new AbortController();
  const rethread = startPendingRethread(db, log.child({ component: 'rethread' }), relationships, rethreadStop.signal);
  const gc = startPeriodicGc(db, store, gcEvery, log.child({ component: 'gc' }));
  // PGlite has no autovacuum: analyse and vacuum its tables by autovacuum's rules, while nobody reads.
  const upkeep =
    db.kind === 'pglite'
      ? startTableUpkeep(db, { intervalMs: UPKEEP_INTERVAL_MS, idle: () => catalog.readerIdle(), log: log.child({ component: 'upkeep' }) })
      : null;
  const signIn = new SignInCodes();
  const app = await buildGateway({
    config,
    db,
    catalog,
    embedding: service,
    files: { store, config: filesConfig, ocrEngine },
    relationships,
    warmSearchIndex: true,
    ui: { codes: signIn },
  });
  if (generatedFile) app.log.info({ tokenFile: generatedFile }, 'AUTH_TOKEN not set: using the generated token in this file');
  await app.listen({ port: config.port, host: config.host });
  const addr = app.server.address();
  const port = typeof addr === 'object' && addr ? addr.port : config.port;
  const url = `http://${config.host.includes(':') ? `[${config.host}]` : config.host}:${port}`;
  // Like Jupyter: a one-time sign-in link for the web UI, on loopback only. The code sits in the
  // fragment (never sent to a server), is single use, and is not the token.
  if (isLoopback(config.host)) {
    process.stderr.write(`\nmemex web UI: ${url}/#signin=${signIn.issue()}\n(one-time sign-in link; afterwards sign in with the token)\n\n`);
  }
  let closed = false;
  return {
    app,
    db,
    embedding: service,
    url,
    async close() {
      if (closed) return;
      closed = true;
      rethreadStop.abort();
      await rethread;
      await gc.stop();
      await upkeep?.stop();
      await app.close();
      await ocrEngine?.close();
      await shutdownExtraction();
      await service.close();
      await db.close();
    },
  };
}

/** Runs rethreadEmail when migration 090 left its marker; progress and the outcome go to the log. */
async function startPendingRethread(
  db: Database,
  log: { info(o: object, m?: string): void; error(o: object, m?: string): void },
  relationships: RelationshipService,
  signal: AbortSignal,
): Promise<void> {
  try {
    if (!(await emailRethreadPending(db))) return;
    let lastLog = 0;
    const r = await rethreadEmail(db, {
      signal,
      onProgress: (p) => {
        if (p.done - lastLog >= 5000 || p.done === p.total) {
          lastLog = p.done;
          log.info(p, 'rethreading stored email');
        }
      },
    });
    if (r.finished) {
      log.info({ documents: r.done, threads: r.threads }, 'stored email re-threaded');
      relationships.requestFull();
    }
  } catch (err) {
    log.error({ err: (err as Error).message }, 're-threading stored email failed; it runs again at the next start');
  }
}
