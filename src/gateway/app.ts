/**
 * The HTTP server: the public gateway routes (bearer AUTH_TOKEN), the catalog's internal routes
 * (CATALOG_TOKEN, falling back to AUTH_TOKEN), health and the OpenAPI document.
 */
import type http from 'node:http';
import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, { LogController, type FastifyInstance } from 'fastify';
import type { GatewayServices } from './services.ts';
import { catalogRoutes } from '../catalog/routes.ts';
import { bearerGuard } from './auth.ts';
import { installErrorHandling } from './errors.ts';
import { gatewayHostPolicy, installHostGuard } from './host-guard.ts';
import { completeOpenApi } from './openapi.ts';
import { contactExportRoutes, contactIngestRoutes } from './routes/contacts.ts';
import { contextRoutes } from './routes/context.ts';
import { coverageRoutes } from './routes/coverage.ts';
import { sourceRoutes } from './routes/sources.ts';
import { documentRoutes } from './routes/documents.ts';
import { forgetRoutes } from './routes/forget.ts';
import { organizeRoutes } from './routes/organize.ts';
import { maintenanceRoutes } from './routes/maintenance.ts';
import { fileRoutes } from './routes/files.ts';
import { ingestRoutes } from './routes/ingest.ts';
import { calendarRoutes } from './routes/calendar.ts';
import { relationshipRoutes, selfPersonRoutes } from './routes/relationships.ts';
import { peopleRoutes } from './routes/people.ts';
import { v2Routes } from './routes/v2.ts';
import { searchRoutes } from './routes/search.ts';
import { statusRoutes } from './routes/status.ts';
import { statsRoutes } from './routes/stats.ts';
import { installInputGuard } from './input-guard.ts';
import { API_VERSION } from './version.ts';
import { installValidation, lazySerializerFactory, type Pending } from './validation.ts';
import { mcpRoutes } from '../mcp/http.ts';
import { fileDownloadRoutes } from './routes/file-download.ts';
import { originalRoutes } from './routes/originals.ts';
import { sessionRoutes, signInRoutes } from './sessions.ts';
import { DEFAULT_UI_DIR, uiRoutes } from './ui.ts';
import { logDestination } from '../util/log.ts';
import { ROUTES } from '../schemas/routes.ts';

export { API_VERSION };

export interface GatewayOptions {
  /** What the routes stand on, built by the program's composition root (src/app/gateway-services.ts). */
  services: GatewayServices;
  /** Extra route plugins registered behind the gateway token. */
  plugins?: ((scope: FastifyInstance) => Promise<void>)[];
  /**
   * The HTTP server the gateway serves on (Fastify's serverFactory): `memex serve` opens its port
   * before the gateway exists (early-listener.ts) and hands it over.
   */
  serverFactory?: (handler: http.RequestListener) => http.Server;
  /** Where request and server log lines go (default: stdout, readable on a terminal, JSON elsewhere). */
  logStream?: NodeJS.WritableStream;
  /** The web UI's built assets (src/gateway/ui.ts; default dist/ui). */
  uiDir?: string;
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

/**
 * Registers the routes over services already built; starting and stopping them is the caller's
 * (`services.start()` / `services.close()`), closing the gateway closes only the HTTP side.
 */
export async function buildGateway(deps: GatewayOptions): Promise<FastifyInstance> {
  const { services } = deps;
  const { config, db, catalog, search, relationships, metrics, sessions, embedding: given } = services;
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

  await app.register(uiRoutes, { dir: deps.uiDir ?? DEFAULT_UI_DIR });
  app.addHook('onReady', async () => {
    // Sessions of an earlier token, or long unused, are dead: drop them.
    await sessions.purge().catch((err) => app.log.warn({ err }, 'removing ended web sessions failed'));
  });
  const signInCodes = services.signInCodes;
  await app.register(signInRoutes, { sessions, codes: signInCodes, token: config.authToken, version: API_VERSION });

  await app.register(async (scope) => {
    scope.addHook('onRequest', bearerGuard(config.authToken, 'token', sessions));
    await scope.register(sessionRoutes, { sessions, codes: signInCodes, token: config.authToken, version: API_VERSION });
    await scope.register(ingestRoutes, { catalog });
    await scope.register(calendarRoutes, { catalog });
    await scope.register(searchRoutes, { search, phoneRegion: config.defaultPhoneRegion, selfIds: () => relationships.selfIds() });
    await scope.register(documentRoutes, { catalog, phoneRegion: config.defaultPhoneRegion });
    await scope.register(statusRoutes, { db, worker: () => services.embeddingNow()?.worker, metrics, dataDir: services.files?.config.localRoot ?? config.dataDir });
    await scope.register(statsRoutes, { db });
    await scope.register(coverageRoutes, { db });
    await scope.register(sourceRoutes, { db, catalog });
    await scope.register(selfPersonRoutes, { service: relationships });
    if (services.files) {
      await scope.register(fileRoutes, { service: services.files.ingest });
      await scope.register(fileDownloadRoutes, { store: services.files.store, db });
      await scope.register(originalRoutes, { store: services.files.store, db, catalog });
    }
    await scope.register(v2Routes, { catalog });
    await scope.register(peopleRoutes, { catalog, selfIds: () => relationships.selfIds(), onMerged: () => relationships.requestFull() });
    await scope.register(forgetRoutes, { service: services.forget });
    await scope.register(organizeRoutes, { db, search, rules: services.rules, saved: services.saved });
    await scope.register(maintenanceRoutes, {
      db,
      config,
      files: services.files ? { store: services.files.store, maxObjectBytes: services.files.config.maxUploadBytes } : undefined,
    });
    for (const plugin of deps.plugins ?? []) await plugin(scope as unknown as FastifyInstance);
    // MCP over streamable HTTP: the same tools as `memex mcp`, calling these routes in process.
    await scope.register(mcpRoutes, { gateway: app as unknown as FastifyInstance, allowWrite: services.mcpAllowWrite });
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
  return app as unknown as FastifyInstance;
}
