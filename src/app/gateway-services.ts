/**
 * The services the gateway's routes stand on (src/gateway/services.ts), built in one place: `memex serve` (src/app/server.ts)
 * passes the ones it builds with its own wiring (the embedding worker, the index snapshot, the start's
 * progress lines), tests and benchmarks pass the few they want to control, and the rest is built here
 * from the configuration. The gateway (src/gateway/app.ts) only registers routes over them.
 */
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import { Catalog } from '../catalog/catalog.ts';
import { ConfigError, type ServerConfig } from '../config/server.ts';
import { read } from '../config/env.ts';
import { settleStoredFiles } from '../coverage/store.ts';
import type { Database } from '../db/types.ts';
import type { EmbeddingService, EmbeddingStart } from '../embedding/index.ts';
import type { PooledEmbedder } from '../embedding/pool.ts';
import type { FilesConfig } from '../files/config.ts';
import { FileIngestService } from '../files/ingest-service.ts';
import { removeObjects, type ObjectStore } from '../files/object-store.ts';
import { ForgetService } from '../forget/forget.ts';
import { buildGateway, type GatewayOptions } from '../gateway/app.ts';
import type { GatewayServices } from '../gateway/services.ts';
import { createGatewayMetrics, type GatewayMetrics } from '../gateway/metrics.ts';
import { WebSessions } from '../gateway/sessions.ts';
import { SignInCodes } from '../gateway/ui.ts';
import { mcpAllowWrite } from '../mcp/config.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import { ORGANIZE_SETTINGS, TagRules } from '../organize/rules.ts';
import { SavedSearches } from '../organize/saved.ts';
import { loadRelationshipConfig } from '../relationships/config.ts';
import { RelationshipService } from '../relationships/service.ts';
import { createSearch, type Search } from '../search/search.ts';
import { logDestination } from '../util/log.ts';

export interface GatewayServiceOptions {
  config: ServerConfig;
  db: Database;
  /** Where RELATIONSHIPS_*, TAG_RULES_POLL_MS and MCP_ALLOW_WRITE are read (default: process.env). */
  env?: NodeJS.ProcessEnv;
  /** Where the services' own warnings go; by default a log like the gateway's (config.logLevel, `logStream`). */
  log?: Logger;
  /** The default log's stream (default: stdout). */
  logStream?: NodeJS.WritableStream;
  /**
   * Built from the configuration when absent, wired to the relationship scorer. A catalog passed in
   * must call `relationships.noteDocuments` from its onDocumentsIngested option for edges to refresh
   * after ingestion.
   */
  catalog?: Catalog;
  /**
   * Built from the configuration when absent (its index is then built by the first search, or by
   * GET /v1/readyz). `memex serve` passes its own and builds the index at start.
   */
  search?: Search;
  /** Built from the configuration when absent. */
  relationships?: RelationshipService;
  /**
   * The embedder serves query embeddings for search; absent in tests that need no vectors. An
   * EmbeddingStart (`memex serve`) is used once its model threads are ready.
   */
  embedding?: EmbeddingService | EmbeddingStart;
  /** Prometheus metrics (GET /metrics); built here when absent. */
  metrics?: GatewayMetrics;
  /** Files (POST /v1/ingest/file): served when an object store and its config are given. */
  files?: { store: ObjectStore; config: FilesConfig; ocrEngine?: OcrEngine };
  /** The one-time sign-in codes `memex serve` prints links for; new ones when absent. */
  signInCodes?: SignInCodes;
  /** POST /mcp may register add_note (default: MCP_ALLOW_WRITE in `env`). */
  mcpAllowWrite?: boolean;
}

export function buildGatewayServices(opts: GatewayServiceOptions): GatewayServices {
  const { config, db } = opts;
  const env = opts.env ?? process.env;
  const log = opts.log ?? pino({ level: config.logLevel }, logDestination(config.logFormat, opts.logStream ?? process.stdout));
  const relationships =
    opts.relationships ?? new RelationshipService(db, { ...loadRelationshipConfig(env), phoneRegion: config.defaultPhoneRegion });
  if (relationships.config.requireCatalogToken && !config.catalogToken) {
    throw new ConfigError('RELATIONSHIPS_REQUIRE_CATALOG_TOKEN=true needs CATALOG_TOKEN to be set');
  }
  relationships.setLogger(log);
  const catalog =
    opts.catalog ??
    new Catalog(db, {
      phoneRegion: config.defaultPhoneRegion,
      onDocumentsIngested: (ids) => relationships.noteDocuments(ids),
    });

  const given = opts.embedding;
  const embeddingNow = (): EmbeddingService | undefined => (given && 'state' in given ? given.current : given);
  const poolStats = () => (embeddingNow()?.embedder as Partial<PooledEmbedder> | undefined)?.stats?.();
  const pooled = given && ('state' in given || typeof (given.embedder as Partial<PooledEmbedder>).stats === 'function');
  const metrics = opts.metrics ?? createGatewayMetrics({ db, pool: pooled ? poolStats : undefined });

  const search =
    opts.search ??
    createSearch({
      db,
      phoneRegion: config.defaultPhoneRegion,
      embedder: given && 'state' in given ? () => given.current?.embedder : (given?.embedder ?? null),
      onIndexError: (err) => log.warn({ err }, 'search index poll failed'),
      onLegTiming: metrics.observeLeg,
    });

  const files = opts.files && {
    ...opts.files,
    ingest: new FileIngestService({ ...opts.files, catalog, db, onStoredPaths: (paths) => settleStoredFiles(db, paths) }),
  };
  const forget = new ForgetService({
    db,
    phoneRegion: config.defaultPhoneRegion,
    deleteObject: files ? (key) => removeObjects(files.store, [key]) : undefined,
    selfPersonId: async () => (await relationships.self(true))?.person_id ?? null,
    afterForget: async () => {
      // Nothing erased may answer from memory: the index applies the deletes now, caches go.
      search.dropCaches();
      await search.refreshIndex();
      relationships.requestFull();
    },
  });
  // A message the block list keeps out takes the attachments uploaded before it along.
  catalog.onBlockedMessages((messageIds) => forget.forget({ message_ids: messageIds }, { block: true }));
  // The rules look at newly ingested documents in the background.
  const rules = new TagRules(db, search, {
    pollMs: read(env, ORGANIZE_SETTINGS.TAG_RULES_POLL_MS),
    onError: (err) => log.warn({ err }, 'tagging rules failed'),
  });

  return {
    config,
    db,
    log,
    catalog,
    search,
    relationships,
    embedding: given,
    embeddingNow,
    metrics,
    sessions: new WebSessions(db, config.authToken),
    signInCodes: opts.signInCodes ?? new SignInCodes(),
    files,
    forget,
    rules,
    saved: new SavedSearches(db, search, config.defaultPhoneRegion),
    mcpAllowWrite: opts.mcpAllowWrite ?? mcpAllowWrite(env),
    start() {
      rules.start();
      relationships.start();
    },
    async close() {
      await rules.close();
      await relationships.close();
      if (!opts.search) await search.close();
    },
  };
}

/**
 * A gateway for use in one process (tests, benchmarks): the services built from `opts`, the routes over
 * them; the services start with it and closing the gateway stops them. `memex serve` composes its own
 * (src/app/server.ts), to order the start and the stop.
 */
export async function composeGateway(
  opts: GatewayServiceOptions & Omit<GatewayOptions, 'services'>,
): Promise<FastifyInstance> {
  const { plugins, serverFactory, logStream, uiDir, ...serviceOptions } = opts;
  const services = buildGatewayServices({ ...serviceOptions, logStream });
  const app = await buildGateway({ services, plugins, serverFactory, logStream, uiDir });
  app.addHook('onClose', async () => services.close());
  services.start();
  return app;
}
