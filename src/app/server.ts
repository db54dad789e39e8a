/**
 * `memex serve`'s composition root: opens the database, applies migrations, starts the embedding worker,
 * builds every service once (the gateway's through src/app/gateway-services.ts) and serves the gateway
 * over them. Roles split one deployment across processes on one PostgreSQL:
 *   all      gateway + catalog + embedding worker in one process (default)
 *   gateway  HTTP only (no worker)
 *   worker   the embedding worker only (no HTTP)
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import pino from 'pino';
import { Catalog } from '../catalog/catalog.ts';
import { emailRethreadPending, rethreadEmail } from '../catalog/email-threads.ts';
import type { ServerConfig } from '../config/server.ts';
import { isLoopback, signInNotice } from '../gateway/ui.ts';
import { openDatabase } from '../db/index.ts';
import type { Database } from '../db/types.ts';
import { startTableUpkeep } from '../db/upkeep.ts';
import { createConfiguredOcrEngine, createObjectStore, loadFilesConfig } from '../files/config.ts';
import { shutdownExtraction } from '../files/extract.ts';
import { startEmbeddingInBackground, type EmbeddingStart } from '../embedding/index.ts';
import type { PooledEmbedder } from '../embedding/pool.ts';
import type { ObjectStore } from '../files/object-store.ts';
import { API_VERSION, buildGateway } from '../gateway/app.ts';
import { buildGatewayServices } from './gateway-services.ts';
import { listenEarly, type EarlyListener } from '../gateway/early-listener.ts';
import { warmSchemas } from '../gateway/validation.ts';
import { createGatewayMetrics } from '../gateway/metrics.ts';
import { migrate } from '../db/migrate.ts';
import { createSearch } from '../search/search.ts';
import { gcIntervalMs, startPeriodicGc } from '../maintenance/gc.ts';
import { configureEgress, loadEgressConfig } from '../privacy/egress.ts';
import { loadRelationshipConfig } from '../relationships/config.ts';
import { RelationshipService } from '../relationships/service.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import { logDestination } from '../util/log.ts';
import { removeStaleSearchSnapshotTemps } from '../search/index-snapshot.ts';
import { describeTightened, ensureOwnerOnly, mkdirOwnerOnly } from '../util/owner-only.ts';

function isInside(child: string, parent: string): boolean {
  const rel = path.relative(path.resolve(parent), path.resolve(child));
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}
import { removeRestoreLeftovers } from '../maintenance/restore-leftovers.ts';

/** How often the embedded database's tables are checked for ANALYZE and VACUUM (src/db/upkeep.ts). */
const UPKEEP_INTERVAL_MS = 60_000;

export type ServerRole = 'all' | 'gateway' | 'worker';

export interface RunningServer {
  app: FastifyInstance | undefined;
  /** The configuration the server runs with: the one given, with the generated AUTH_TOKEN when none was set. */
  config: ServerConfig;
  db: Database;
  /** The embedding service; its model threads start in the background (`ready`, `current`). */
  embedding: EmbeddingStart;
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
  mkdirOwnerOnly(config.dataDir);
  if (!fs.existsSync(file)) {
    fs.writeFileSync(file, `${crypto.randomBytes(24).toString('base64url')}\n`, { mode: 0o600 });
  }
  return { config: { ...config, authToken: fs.readFileSync(file, 'utf8').trim() }, generatedFile: file };
}

export interface StartOptions {
  env?: NodeJS.ProcessEnv;
  /** The port, opened before this module was loaded (`memex serve`); opened here otherwise. */
  early?: EarlyListener;
  /** When the start began (performance.now()), for the durations printed; default now. */
  startedAt?: number;
  /** One line per phase of the start, for a person watching (`memex serve` prints them on stderr). */
  onProgress?: (line: string) => void;
  /** The model threads could not start after the server was up (`memex serve` stops the server). */
  onFatal?: (err: Error) => void;
}

/** While the index is read, a progress line at most this often. */
const PROGRESS_EVERY_MS = 2000;

const seconds = (since: number) => `${((performance.now() - since) / 1000).toFixed(1)} s`;

/**
 * Starts the server. The order is what makes a start quick and honest (docs/architecture.md "Start"):
 * the port first (GET /v1/readyz says what is being prepared), the database and its migrations,
 * the gateway, then the search index; the model threads only once the index is ready, so they never
 * delay the first search (until they are up, searches answer from the words alone).
 */
export async function startServer(base: ServerConfig, role: ServerRole = 'all', opts: StartOptions = {}): Promise<RunningServer> {
  const startedAt = opts.startedAt ?? performance.now();
  const say = opts.onProgress ?? (() => undefined);
  // Owner-only before anything is written into it (src/util/owner-only.ts); said once the log is open.
  const tightened = ensureOwnerOnly(base.dataDir);
  const { config, generatedFile } = ensureAuthToken(base);
  // Files config first: a bad FILE_MAX_BYTES / OBJECT_STORE / OCR_* stops the start before anything is opened.
  const filesConfig = loadFilesConfig(opts.env ?? process.env, config.dataDir);
  const objectsOutside = !isInside(filesConfig.localRoot, config.dataDir) ? ensureOwnerOnly(filesConfig.localRoot) : null;
  const gcEvery = gcIntervalMs(opts.env ?? process.env);
  // A bad EGRESS_* setting stops the start before anything is opened, like the files settings.
  const egress = loadEgressConfig(opts.env ?? process.env);
  const kind = config.databaseUrl ? 'postgres' : 'pglite';
  if (role !== 'all' && kind === 'pglite') {
    throw new Error(`--role ${role} needs a PostgreSQL server (DATABASE_URL): PGlite serves one process only`);
  }
  const early =
    role === 'worker'
      ? undefined
      : (opts.early ?? (await listenEarly({ host: config.host, port: config.port, database: kind, version: API_VERSION, allowedHosts: config.allowedHosts })));
  const log = pino({ level: config.logLevel }, logDestination(config.logFormat));
  for (const [t, name] of [[tightened, 'DATA_DIR'], [objectsOutside, 'OBJECT_STORE_DIR']] as const) {
    const line = t && describeTightened(t, name);
    if (line) log.warn({ changed: t.changed.length, failed: t.failed.length }, line);
  }
  // Text sent to a remote LLM or embedding API (or an MCP client elsewhere) is redacted by this policy.
  configureEgress(egress, log.child({ component: 'egress' }));
  let db: Database | undefined;
  // What a killed `memex restore` left (its staging folder holds the backup's rows): removed at start.
  const leftovers = removeRestoreLeftovers(config.dataDir);
  if (leftovers.length) say(`removed ${leftovers.length} folder(s) left by an interrupted restore or backup: ${leftovers.join(', ')}`);
  try {
    if (early) early.state.phase = 'database';
    let phase = performance.now();
    db = await openDatabase({
      databaseUrl: config.databaseUrl,
      dataDir: config.dataDir,
      migrate: false,
      onCreate: (how) => say(`database: creating the embedded database${how === 'template' ? ' from the template' : ' (initdb, no template built)'}`),
    });
    say(`database: ${kind === 'pglite' ? `embedded (PGlite) in ${config.dataDir}` : 'PostgreSQL'}, open (${seconds(phase)})`);
    if (early) early.state.phase = 'migrations';
    phase = performance.now();
    const applied = await migrate(db, {
      onProgress: (done, pending) => {
        if (early) early.state.progress = done / pending;
        if (done === 0) say(`migrations: applying ${pending}`);
      },
    });
    say(applied.length ? `migrations: ${applied.length} applied (${seconds(phase)})` : 'migrations: none pending');
  } catch (err) {
    await db?.close();
    await early?.close();
    throw err;
  }
  const opened = db;

  // The model threads start once the index is ready (below); `indexReady` settles when it is.
  let indexSettled: () => void = () => undefined;
  const indexReady = new Promise<void>((resolve) => (indexSettled = resolve));
  let embedding: EmbeddingStart;
  try {
    embedding = startEmbeddingInBackground({
      db: opened,
      logger: log.child({ component: 'embedding' }),
      startWorker: role === 'gateway' ? false : role === 'worker' ? true : undefined,
      after: role === 'worker' ? undefined : indexReady,
    });
  } catch (err) {
    await opened.close();
    await early?.close();
    throw err;
  }
  if (role === 'worker') {
    const service = await embedding.ready.catch(async (err) => {
      await opened.close();
      throw err;
    });
    log.info({ model: service.embedder.name }, 'embedding worker running');
    return {
      app: undefined,
      config,
      db: opened,
      embedding,
      url: undefined,
      async close() {
        await service.close();
        await opened.close();
      },
    };
  }
  const port = early!;
  let closed = false;
  const modelStart = performance.now();
  void indexReady.then(() => {
    if (embedding.state === 'starting') say(`model threads: starting (${embedding.config.provider})`);
  });
  embedding.ready.then(
    (svc) => say(`model threads: ready, ${svc.embedder.name} (${seconds(modelStart)}); meaning search and the embedding queue run`),
    (err: Error) => {
      if (closed) return;
      say(`model threads: failed: ${err.message}`);
      log.error({ err: err.message }, 'the embedding model could not be started');
      opts.onFatal?.(err);
    },
  );

  const relationships = new RelationshipService(opened, {
    ...loadRelationshipConfig(opts.env ?? process.env),
    phoneRegion: config.defaultPhoneRegion,
  });
  const catalog = new Catalog(opened, {
    phoneRegion: config.defaultPhoneRegion,
    onChunksQueued: () => embedding.current?.worker?.notify(),
    onDocumentsIngested: (ids) => relationships.noteDocuments(ids),
  });
  // The object store and the shared OCR engine serve POST /v1/ingest/file (docs/files.md).
  let store: ObjectStore;
  let ocrEngine: OcrEngine | undefined;
  try {
    store = await createObjectStore(filesConfig);
    ocrEngine = await createConfiguredOcrEngine(filesConfig);
  } catch (err) {
    await embedding.close();
    await opened.close();
    await port.close();
    throw err;
  }
  // Email stored before conversation threading (migration 090) is re-threaded once, in the background.
  const rethreadStop = new AbortController();
  const rethread = startPendingRethread(opened, log.child({ component: 'rethread' }), relationships, rethreadStop.signal);
  const gc = startPeriodicGc(opened, store, gcEvery, log.child({ component: 'gc' }), config.dataDir);
  // Email stored before originals were kept was built by the old body cleaner, which cut text: say what repairs it.
  void sayEmailWithoutOriginals(opened, say, log.child({ component: 'originals' }));
  // PGlite has no autovacuum: analyse and vacuum its tables by autovacuum's rules, while nobody reads.
  const upkeep =
    opened.kind === 'pglite'
      ? startTableUpkeep(opened, { intervalMs: UPKEEP_INTERVAL_MS, idle: () => catalog.readers.idle(), log: log.child({ component: 'upkeep' }) })
      : null;
  // A snapshot write killed half-way leaves its temporary file: removed before the next is written.
  const removed = removeStaleSearchSnapshotTemps(config.dataDir);
  if (removed.length) log.info({ removed }, 'removed temporary files of an interrupted snapshot write');
  const poolStats = () => (embedding.current?.embedder as Partial<PooledEmbedder> | undefined)?.stats?.();
  const metrics = createGatewayMetrics({ db: opened, pool: poolStats });
  // Searches before the index is complete are refused (503, Retry-After) rather than kept waiting.
  const search = createSearch({
    db: opened,
    embedder: () => embedding.current?.embedder,
    beforeIndexReady: 'refuse',
    phoneRegion: config.defaultPhoneRegion,
    onIndexError: (err) => log.warn({ err }, 'search index poll failed'),
    // Each process keeps its own snapshot in its own DATA_DIR (docs/architecture.md "Search index on disk").
    indexSnapshotFile: path.join(config.dataDir, 'search-index.snapshot'),
    // Taking a snapshot copies the index on this thread: it waits until nobody is searching.
    quiet: () => catalog.readers.idle(),
    onSnapshot: (e) => {
      if (e.kind === 'loaded') {
        say(`index: read from its snapshot, ${e.documents} documents (${(e.bytes / 2 ** 20).toFixed(1)} MB), ${e.caughtUp} changed since (${(e.ms / 1000).toFixed(1)} s)`);
      } else if (e.kind === 'rejected') {
        say(`index: snapshot not used (${e.reason}); reading the documents from the database`);
        log.warn({ reason: e.reason }, 'search index snapshot not used; rebuilding from the database');
      } else if (e.kind === 'written') {
        log.info({ documents: e.documents, bytes: e.bytes, ms: Math.round(e.ms) }, 'search index snapshot written');
      } else {
        log.warn({ err: e.error }, 'search index snapshot could not be written');
      }
    },
    vectorSnapshotFile: path.join(config.dataDir, 'search-vectors.snapshot'),
    onVectorSnapshot: (e) => {
      if (e.kind === 'loaded') log.info({ vectors: e.vectors, bytes: e.bytes, caughtUp: e.caughtUp, ms: Math.round(e.ms) }, 'vector copies read from their snapshot');
      else if (e.kind === 'rejected') log.warn({ reason: e.reason }, 'vector snapshot not used; reading the vectors from the database');
      else if (e.kind === 'written') log.info({ vectors: e.vectors, bytes: e.bytes, ms: Math.round(e.ms) }, 'vector snapshot written');
      else log.warn({ err: e.error }, 'vector snapshot could not be written');
    },
    onLegTiming: metrics.observeLeg,
  });
  const services = buildGatewayServices({
    config,
    db: opened,
    env: opts.env,
    log,
    catalog,
    embedding,
    search,
    metrics,
    files: { store, config: filesConfig, ocrEngine },
    relationships,
  });
  const app = await buildGateway({ services, serverFactory: port.serverFactory });
  services.start();
  await app.ready();
  port.attach();
  port.state.phase = 'index';
  if (generatedFile) app.log.info({ tokenFile: generatedFile }, 'AUTH_TOKEN not set: using the generated token in this file');
  const url = port.url;
  say(`listening on ${url} (GET /v1/readyz: 200 once searches are answered)`);
  // Like Jupyter: a one-time sign-in link for the web UI, on loopback only. The code is in the
  // fragment (never sent to a server), is single use, and is not the token.
  // Only to a terminal: a log file or journal keeps what it is given, and the link signs in.
  if (isLoopback(config.host)) process.stderr.write(signInNotice(url, process.stderr.isTTY === true, () => services.signInCodes.issue()));
  const indexStart = performance.now();
  const warmStop = new AbortController();
  const ticker = setInterval(() => {
    const s = search.indexState();
    if (!s.ready && s.total > 0) say(`index: ${Math.floor((100 * s.done) / s.total)} % (${s.done} of ${s.total} documents)`);
  }, PROGRESS_EVERY_MS);
  ticker.unref();
  search
    .refreshIndex()
    .then(
      (size) => {
        say(`index: ready, ${size.documents} documents (${seconds(indexStart)})`);
        say(`ready in ${seconds(startedAt)}`);
        // Every search leaves the owner out of its person facet: detect the owner now, not in the
        // first search (it reads the newest 20,000 messages: ~1 s at 100,000 documents).
        relationships.selfIds().catch((err) => app.log.warn({ err }, 'owner detection failed; the next search retries'));
        app.log.info({ ...size, ms: Math.round(performance.now() - indexStart) }, 'search index built');
      },
      (err) => {
        if (closed) return;
        say(`index: build failed (${(err as Error).message}); the next search or GET /v1/readyz tries again`);
        app.log.warn({ err }, 'search index build failed; the first search retries');
      },
    )
    .finally(() => {
      clearInterval(ticker);
      indexSettled();
      // The routes' schemas were left to their first use to open sooner; compile the rest now.
      void warmSchemas(app, warmStop.signal).then(({ failed }) => {
        for (const err of failed) app.log.error({ err: err.message }, 'a route schema could not be compiled');
      });
    });
  return {
    app,
    config,
    db: opened,
    embedding,
    url,
    async close() {
      if (closed) return;
      closed = true;
      clearInterval(ticker);
      warmStop.abort();
      indexSettled();
      rethreadStop.abort();
      // Each step that waits says so, with its time, so a slow stop is never silent.
      const step = async (what: string, run: () => Promise<unknown> | undefined) => {
        const t = performance.now();
        say(`stopping: ${what}`);
        await run();
        const ms = performance.now() - t;
        if (ms >= 1000) say(`stopping: ${what} took ${seconds(t)}`);
      };
      await step('background rethreading, gc and upkeep', () => Promise.all([rethread, gc.stop(), upkeep?.stop()]));
      await step('open requests', async () => {
        await app.close();
        await port.close();
        await services.close();
      });
      // Before the database closes: the index's last changes are written to its snapshot.
      await step('the search index', () => search.close());
      await step('text extraction and OCR', () => Promise.all([ocrEngine?.close(), shutdownExtraction()]));
      await step('the embedding model', () => embedding.close());
      await step('the database', () => opened.close());
      say('stopped');
    },
  };
}

/**
 * The upgrade notice of issue 40: email documents without an original were stored by a memex whose body cleaner
 * cut their text, and only their folders can give them back. Said, not done: the server cannot read the person's
 * folders, and `memex reindex --reparse` rebuilds what has an original. Off the start's path; a failure is only logged.
 */
async function sayEmailWithoutOriginals(db: Database, say: (line: string) => void, log: { warn(o: object, m?: string): void }): Promise<void> {
  try {
    const { emailWithoutOriginals } = await import('../catalog/originals.ts');
    const n = await emailWithoutOriginals(db);
    if (n === 0) return;
    const line =
      `${n} email documents were stored before memex kept originals; their text may be cut (issue 40). ` +
      'Run `memex import mail --rescan PATH` on the folders they came from: whole bodies replace them as new versions and the originals are kept.';
    say(line);
    log.warn({ email_without_originals: n }, line);
  } catch (err) {
    log.warn({ err: (err as Error).message }, 'counting email documents without originals failed');
  }
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
