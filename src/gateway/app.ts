/**
 * The HTTP server: the public gateway routes (bearer AUTH_TOKEN), the catalog's internal routes
 * (CATALOG_TOKEN, falling back to AUTH_TOKEN), health and the OpenAPI document.
 */
import type http from 'node:http';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import { Catalog } from '../catalog/catalog.ts';
import { catalogRoutes } from '../catalog/routes.ts';
import { ConfigError, type ServerConfig } from '../config/server.ts';
import type { Database } from '../db/types.ts';
import type { EmbeddingService, EmbeddingStart } from '../embedding/index.ts';
import { bearerGuard } from './auth.ts';
import { installErrorHandling } from './errors.ts';
import { gatewayHostPolicy, installHostGuard } from './host-guard.ts';
import { completeOpenApi } from './openapi.ts';
import type { FilesConfig } from '../files/config.ts';
import { FileIngestService } from '../files/ingest-service.ts';
import { removeObjects, type ObjectStore } from '../files/object-store.ts';
import type { OcrEngine } from '../ocr/engine.ts';
import { contactExportRoutes, contactIngestRoutes } from './routes/contacts.ts';
import { contextRoutes } from './routes/context.ts';
import { coverageRoutes } from './routes/coverage.ts';
import { settleStoredFiles } from '../coverage/store.ts';
import { sourceRoutes } from './routes/sources.ts';
import { documentRoutes } from './routes/documents.ts';
import { forgetRoutes } from './routes/forget.ts';
import { organizeRoutes } from './routes/organize.ts';
import { ORGANIZE_SETTINGS, TagRules } from '../organize/rules.ts';
import { read } from '../config/env.ts';
import { SavedSearches } from '../organize/saved.ts';
import { maintenanceRoutes } from './routes/maintenance.ts';
import { ForgetService } from '../forget/forget.ts';
import { fileRoutes } from './routes/files.ts';
import { ingestRoutes } from './routes/ingest.ts';
import { calendarRoutes } from './routes/calendar.ts';
import { relationshipRoutes, selfPersonRoutes } from './routes/relationships.ts';
import { RelationshipService } from '../relationships/service.ts';
import { peopleRoutes } from './routes/people.ts';
import { v2Routes } from './routes/v2.ts';
import { searchRoutes } from './routes/search.ts';
import { statusRoutes } from './routes/status.ts';
import { statsRoutes } from './routes/stats.ts';
import { createGatewayMetrics, type GatewayMetrics } from './metrics.ts';
import type { PooledEmbedder } from '../embedding/pool.ts';
import { createSearch, type Search } from '../search/search.ts';
import { installInputGuard } from './input-guard.ts';
import { API_VERSION } from './version.ts';
import { installValidation, lazySerializerFactory, type Pending } from './validation.ts';
import { mcpRoutes } from '../mcp/http.ts';
import { mcpAllowWrite } from '../mcp/config.ts';
import { fileDownloadRoutes } from './routes/file-download.ts';
import { originalRoutes } from './routes/originals.ts';
import { sessionRoutes, signInRoutes, WebSessions } from './sessions.ts';
import { DEFAULT_UI_DIR, SignInCodes, uiRoutes } from './ui.ts';
import { logDestination } from '../util/log.ts';
import { loadRelationshipConfig } from '../relationships/config.ts';
import { ROUTES } from '../schemas/routes.ts';

export { API_VERSION };

export interface GatewayDeps {
  config: ServerConfig;
  db: Database;
  catalog?: Catalog;
  /**
   * Search service (src/search); built from the environment when absent (its index is then built by
   * the first search, or by GET /v1/readyz). `memex serve` passes its own and builds the index at start.
   */
  search?: Search;
  /**
   * The embedder serves query embeddings for search; absent in tests that need no vectors. An
   * EmbeddingStart (`memex serve`) is used once its model threads are ready.
   */
  embedding?: EmbeddingService | EmbeddingStart;
  /**
   * Relationship scorer; built from the environment when absent. A catalog passed in `catalog`
   * must call `relationships.noteDocuments` from its onDocumentsIngested option for edges to
   * refresh after ingestion (the catalog built here is wired already).
   */
  relationships?: RelationshipService;
  /** Extra route plugins (search, people, files…) registered behind the gateway token. */
  plugins?: ((scope: FastifyInstance) => Promise<void>)[];
  /** Files (POST /v1/ingest/file): served when an object store and its config are given. */
  files?: { store: ObjectStore; config: FilesConfig; ocrEngine?: OcrEngine };
  /**
   * The HTTP server the gateway serves on (Fastify's serverFactory): `memex serve` opens its port
   * before the gateway exists (early-listener.ts) and hands it over.
   */
  serverFactory?: (handler: http.RequestListener) => http.Server;
  /** Where request and server log lines go (default: stdout, readable on a terminal, JSON elsewhere). */
  logStream?: NodeJS.WritableStream;
  /** Prometheus metrics (GET /metrics); built here when absent. */
  metrics?: GatewayMetrics;
  /** POST /mcp may register add_note (default: MCP_ALLOW_WRITE=true in the environment). */
  mcpAllowWrite?: boolean;
  /**
   * The web UI (src/gateway/ui.ts): its built assets (default dist/ui) and the one-time sign-in codes
   * `memex serve` prints links for.
   */
  ui?: { dir?: string; codes?: SignInCodes };
}

/**
 * Health checks, metric scrapes and an importer confirming its own submission come from machines; every other
 * read, and asking, from someone waiting for an answer.
 */
/** Polled by monitors and scrapers: logged at debug. */
const QUIET_ROUTES = new Set(['/v1/healthz', '/v1/readyz', '/metrics']);

const MACHINE_READS = new Set(['/v1/healthz', '/v1/readyz', '/metrics', '/v1/ingest/:submission_id']);
const READER_POSTS = new Set(['/v1/ask', '/mcp']);
function isReaderRequest(method: string, route: string | undefined): boolean {
  if (route === undefined) return false;
  return method === 'GET' ? !MACHINE_READS.has(route) : method === 'POST' && READER_POSTS.has(route);
}

export async function buildGateway(deps: GatewayDeps): Promise<FastifyInstance> {
  const { config, db } = deps;
  const relationships =
    deps.relationships ??
    new RelationshipService(db, { ...loadRelationshipConfig(process.env), phoneRegion: config.defaultPhoneRegion });
  const catalog =
    deps.catalog ??
    new Catalog(db, {
      phoneRegion: config.defaultPhoneRegion,
      onDocumentsIngested: (ids) => relationships.noteDocuments(ids),
    });
  if (relationships.config.requireCatalogToken && !config.catalogToken) {
    throw new ConfigError('RELATIONSHIPS_REQUIRE_CATALOG_TOKEN=true needs CATALOG_TOKEN to be set');
  }
  // Request and response schemas are compiled at their first use (validation.ts; warmSchemas after a start).
  const uncompiled: Pending = [];
  const app = Fastify({
    bodyLimit: config.bodyLimitBytes,
    schemaController: { compilersFactory: { buildSerializer: lazySerializerFactory(uncompiled) } },
    // One line per request, written by the onResponse hook below (Fastify's own are two: received and
    // completed). Through a LogController: the top-level option prints a deprecation warning at every start.
    logController: new LogController({ disableRequestLogging: true }),
    logger: {
      level: config.logLevel,
      stream: logDestination(config.logFormat, deps.logStream ?? process.stdout),
      redact: ['req.headers.authorization', 'req.headers["x-auth"]'],
      // Query strings carry search text and ids: log the path only.
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({
          method: req.method,
          url: req.url.split('?')[0],
          remoteAddress: req.ip,
        }),
      },
    },
    routerOptions: { ignoreTrailingSlash: true },
    ...(deps.serverFactory ? { serverFactory: deps.serverFactory } : {}),
  }).withTypeProvider<TypeBoxTypeProvider>();

  installValidation(app, uncompiled);
  installInputGuard(app);
  installErrorHandling(app);
  // First of all hooks: a request naming another host, or sent by another origin's page, is refused before its token is read.
  installHostGuard(app, gatewayHostPolicy(config));

  const given = deps.embedding;
  /** The embedding service now: undefined without one, or while its model threads start. */
  const embeddingNow = (): EmbeddingService | undefined => (given && 'state' in given ? given.current : given);
  const poolStats = () => (embeddingNow()?.embedder as Partial<PooledEmbedder> | undefined)?.stats?.();
  const pooled = given && ('state' in given || typeof (given.embedder as Partial<PooledEmbedder>).stats === 'function');
  const metrics = deps.metrics ?? createGatewayMetrics({ db, pool: pooled ? poolStats : undefined });
  // Someone waiting for an answer (a search, an ask, a page of the web UI, an assistant): for a while, batches
  // on PGlite are written in small transactions so the answer does not wait for a long one (src/db/readers.ts).
  app.addHook('onRequest', async (req) => {
    if (isReaderRequest(req.method, req.routeOptions.url)) catalog.readers.note();
  });
  app.addHook('onResponse', async (req, reply) => {
    // The route template (never the URL: ids and query text stay out of label values).
    metrics.observeRequest(req.method, req.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime);
    // The path without its query string (search text, ids); health checks and scrapes only at debug.
    const line = { method: req.method, url: req.url.split('?')[0], status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 };
    if (QUIET_ROUTES.has(req.routeOptions.url ?? '')) req.log.debug(line, 'request');
    else req.log.info(line, 'request');
  });

  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'memex gateway', version: API_VERSION, description: 'Personal data plane: ingest, search, ask, people.' },
      components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } } },
      security: [{ bearer: [] }],
    },
    // Only the openapi branch is produced here (`openapi` above); the cast is for the union type.
    transformObject: (d) => completeOpenApi((d as { openapiObject: Parameters<typeof completeOpenApi>[0] }).openapiObject) as never,
  });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());

  app.route({
    ...ROUTES.health,
    handler: async (_req, reply) => {
      try {
        await db.query('SELECT 1');
        return { status: 'ok' as const, version: API_VERSION, database: db.kind };
      } catch {
        return reply.code(503).send({ status: 'error', version: API_VERSION, database: db.kind });
      }
    },
  });

  const search =
    deps.search ??
    createSearch({
      db,
      phoneRegion: config.defaultPhoneRegion,
      embedder: given && 'state' in given ? () => given.current?.embedder : (given?.embedder ?? null),
      onIndexError: (err) => app.log.warn({ err }, 'search index poll failed'),
      onLegTiming: metrics.observeLeg,
    });
  // A search service passed in belongs to the caller; one built here is closed with the gateway.
  if (!deps.search) app.addHook('onClose', async () => search.close());

  // Readiness (not in the spec; Kubernetes' name): 200 once searches are answered from a complete
  // index. Asking starts the index build when nothing has (gateways that build at first use). No
  // token, like /v1/healthz, so it says no counts: how many documents the store holds is not public.
  let warming: Promise<unknown> | null = null;
  app.route({
    ...ROUTES.readiness,
    handler: async (_req, reply) => {
      const index = search.indexState();
      if (!index.ready && !warming) {
        warming = search.refreshIndex().catch((err) => app.log.warn({ err }, 'search index build failed'));
        void warming.finally(() => (warming = null));
      }
      const progress = index.ready ? 1 : index.total > 0 ? Math.round((1000 * index.done) / index.total) / 1000 : 0;
      const model = !given ? 'none' : 'state' in given ? given.state : 'ready';
      return reply.code(index.ready ? 200 : 503).send({
        ready: index.ready,
        phase: index.ready ? 'ready' : 'index',
        progress,
        model,
      });
    },
  });

  await app.register(uiRoutes, { dir: deps.ui?.dir ?? DEFAULT_UI_DIR });
  // The web UI's sessions stand for the access token wherever it is accepted (src/gateway/sessions.ts).
  const sessions = new WebSessions(db, config.authToken);
  app.addHook('onReady', async () => {
    // Sessions of an earlier token, or long unused, are dead: drop them.
    await sessions.purge().catch((err) => app.log.warn({ err }, 'removing ended web sessions failed'));
  });
  const signInCodes = deps.ui?.codes ?? new SignInCodes();
  await app.register(signInRoutes, { sessions, codes: signInCodes, token: config.authToken, version: API_VERSION });

  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerGuard(config.authToken, 'token', sessions));
    await scope.register(sessionRoutes, { sessions, codes: signInCodes, token: config.authToken, version: API_VERSION });
    await scope.register(ingestRoutes, { catalog });
    await scope.register(calendarRoutes, { catalog });
    await scope.register(searchRoutes, { search, phoneRegion: config.defaultPhoneRegion, selfIds: () => relationships.selfIds() });
    await scope.register(documentRoutes, { catalog, phoneRegion: config.defaultPhoneRegion });
    await scope.register(statusRoutes, { db, worker: () => embeddingNow()?.worker, metrics, dataDir: deps.files?.config.localRoot ?? config.dataDir });
    await scope.register(statsRoutes, { db });
    await scope.register(coverageRoutes, { db });
    await scope.register(sourceRoutes, { db, catalog });
    await scope.register(selfPersonRoutes, { service: relationships });
    if (deps.files) {
      const service = new FileIngestService({ ...deps.files, catalog, db, onStoredPaths: (paths) => settleStoredFiles(db, paths) });
      await scope.register(fileRoutes, { service });
      await scope.register(fileDownloadRoutes, { store: deps.files.store, db });
      await scope.register(originalRoutes, { store: deps.files.store, db, catalog });
    }
    await scope.register(v2Routes, { catalog });
    await scope.register(peopleRoutes, { catalog, selfIds: () => relationships.selfIds(), onMerged: () => relationships.requestFull() });
    const forget = new ForgetService({
      db,
      phoneRegion: config.defaultPhoneRegion,
      deleteObject: deps.files ? (key) => removeObjects(deps.files!.store, [key]) : undefined,
      selfPersonId: async () => (await relationships.self(true))?.person_id ?? null,
      afterForget: async () => {
        // Nothing erased may answer from memory: the index applies the deletes now, caches go.
        search.dropCaches();
        await search.refreshIndex();
        relationships.requestFull();
      },
    });
    await scope.register(forgetRoutes, { service: forget });
    // Tags, tagging rules and saved searches (issue 44); the rules look at newly ingested documents in the background.
    const rules = new TagRules(db, search, {
      pollMs: read(process.env, ORGANIZE_SETTINGS.TAG_RULES_POLL_MS),
      onError: (err) => app.log.warn({ err }, 'tagging rules failed'),
    });
    rules.start();
    app.addHook('onClose', async () => rules.close());
    await scope.register(organizeRoutes, { db, search, rules, saved: new SavedSearches(db, search, config.defaultPhoneRegion) });
    // A message the block list keeps out takes the attachments uploaded before it along.
    catalog.onBlockedMessages((messageIds) => forget.forget({ message_ids: messageIds }, { block: true }));
    await scope.register(maintenanceRoutes, {
      db,
      config,
      files: deps.files ? { store: deps.files.store, maxObjectBytes: deps.files.config.maxUploadBytes } : undefined,
    });
    for (const plugin of deps.plugins ?? []) await plugin(scope as unknown as FastifyInstance);
    // MCP over streamable HTTP: the same tools as `memex mcp`, calling these routes in process.
    await scope.register(mcpRoutes, { gateway: app as unknown as FastifyInstance, allowWrite: deps.mcpAllowWrite ?? mcpAllowWrite() });
  });

  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerGuard(config.catalogToken ?? config.authToken, 'catalog token'));
    await scope.register(catalogRoutes, { catalog, db });
  });

  // Contact sync is a gateway route (spec 4.4, 5: clients send AUTH_TOKEN); the catalog token,
  // which guarded it in the original system (spec-notes A5), is accepted too.
  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerGuard([config.authToken, config.catalogToken], 'token', sessions));
    await scope.register(contactIngestRoutes, { catalog });
    await scope.register(contactExportRoutes, { catalog });
  });

  // Spec 4.3 rule 6, 5.4: the context route may require the catalog token instead of the gateway token.
  await app.register(async (scope) => {
    scope.addHook(
      'onRequest',
      config.contextRequireCatalogToken ? bearerGuard(config.catalogToken, 'catalog token') : bearerGuard(config.authToken, 'token', sessions),
    );
    await scope.register(contextRoutes, { search });
  });

  // Spec 5.4: the relationship route may require the catalog token instead of the gateway token.
  await app.register(async (scope) => {
    const enforced = relationships.config.requireCatalogToken;
    scope.addHook(
      'onRequest',
      enforced ? bearerGuard(config.catalogToken, 'catalog token') : bearerGuard(config.authToken, 'token', sessions),
    );
    await scope.register(relationshipRoutes, { service: relationships });
  });
  relationships.setLogger(app.log);
  relationships.start();
  app.addHook('onClose', async () => relationships.close());

  return app as unknown as FastifyInstance;
}
