/**
 * The host agent HTTP daemon (host-agent spec §1, §4, §5; spec-notes B1, B4.1, B5).
 *
 * - Every request, including /v1/health and unknown URLs, must carry the shared secret in `x-auth`
 *   (header name configurable); it is checked in an onRequest hook before routing, comparing SHA-256
 *   digests with crypto.timingSafeEqual so neither content nor length leaks through timing.
 * - Errors use the agent's convention {"error": "..."}; unknown routes answer 404 {"error":"Not Found"};
 *   bad input is a 4xx, and a 500 never carries a stack trace.
 * - Before the secret, the Host and Origin headers (src/util/request-host.ts): a request naming another host
 *   (DNS rebinding) answers 421, one sent by another origin's page 403, both {"error": "..."}.
 * - The secret is never empty nor a placeholder: createAgentServer refuses one, startAgent (src/app/agent.ts) generates one
 *   in `auth.secret_file` when none is set (ensureAgentSecret).
 * - startAgent (src/app/agent.ts) binds loopback only and refuses anything else before opening a socket.
 */
import crypto from 'node:crypto';
import { createRequire } from 'node:module';
import Fastify, { type FastifyError, type FastifyInstance, type FastifyServerOptions } from 'fastify';
import multipart from '@fastify/multipart';
import { AgentConfigError, isUsableSecret, pinoLevel, type AgentConfig } from './config.ts';
import { hostPolicy, judgeRequest } from '../util/request-host.ts';
import { gatewayClientFromConfig, type GatewayClient } from './gateway-client.ts';
import { createAgentMetrics, type AgentMetrics } from './metrics.ts';
import { builtinStubs, ModuleRegistry, type AgentContext, type ModuleFactory } from './modules.ts';
import { emailModule } from './routes/email.ts';
import { emailFoldersModule, emailImapModule, emailLocalModule } from './collectors/email/index.ts';
import { ocrModule } from './routes/ocr.ts';
import { chatappModule } from './collectors/chatapp/module.ts';
import { fswatchModule } from './collectors/fswatch/module.ts';
import type { ExportHandoff } from './collectors/fswatch/exports.ts';
import { davModule } from './collectors/dav/module.ts';
import { createOcrEngine, type OcrEngine } from '../ocr/engine.ts';
import { httpCoverageReporter, type CoverageReporter } from '../coverage/reporter.ts';
import { AgentCoverage } from './coverage.ts';
import { SourceRunner } from './sources/runner.ts';
import { SourceBusyError } from './sources/source.ts';
import { httpSourcesGateway, type SourcesGateway } from './sources/gateway.ts';

const require = createRequire(import.meta.url);
export const AGENT_VERSION: string = (require('../../package.json') as { version: string }).version;

export interface AgentServerOptions {
  /** false silences logs (tests); otherwise pino at the configured level. */
  logger?: boolean;
  /** Extra modules (collectors). A module named like a built-in stub replaces it. */
  modules?: ModuleFactory[];
  /** Override the gateway client (tests). */
  gateway?: GatewayClient;
  /** The importers of exports found in watched folders (src/imports/watch.ts); without it every file is a `localfs` file. */
  exports?: ExportHandoff;
  /** Override where coverage reports go (default: the configured gateway). */
  coverage?: CoverageReporter;
  /** How often to ask the gateway for coverage requests (retry, recount); default 0 (never), startAgent: SVC_COVERAGE_POLL_SECONDS. */
  coveragePollMs?: number;
  /** Share one OCR engine between several servers (tests), or inject one. Not closed by the server. */
  ocrEngine?: OcrEngine;
  metrics?: AgentMetrics;
  /** Run the configured sources continuously (docs/sources.md); startAgent and `memex serve` do, tests choose. */
  runSources?: boolean;
  /** Where the source runner reports freshness and source-side changes (default: the configured gateway). */
  sourcesGateway?: SourcesGateway;
  /** How often the runner reports freshness (and learns of pauses) at the least; default 15 s. */
  sourcesReportMs?: number;
}

export interface AgentServer extends FastifyInstance {
  agent: { context: AgentContext; modules: ModuleRegistry; sources: SourceRunner };
}

/** Secrets are compared as SHA-256 digests: equal length always, so timingSafeEqual never throws. */
export function secretsEqual(given: string, expected: string): boolean {
  const a = crypto.createHash('sha256').update(given, 'utf8').digest();
  const b = crypto.createHash('sha256').update(expected, 'utf8').digest();
  return crypto.timingSafeEqual(a, b);
}

function loggerOptions(config: AgentConfig, enabled: boolean): FastifyServerOptions['logger'] {
  if (!enabled) return false;
  return {
    level: pinoLevel(config.logging.level),
    redact: {
      paths: [
        'req.headers["x-auth"]',
        `req.headers["${config.auth.header}"]`,
        'req.headers.authorization',
        'req.headers.cookie',
        'headers["x-auth"]',
        'headers.authorization',
      ],
      censor: '[REDACTED]',
    },
    // Query strings can carry tokens and presigned signatures: log the path only.
    serializers: {
      req: (req: { method: string; url: string; ip?: string }) => ({ method: req.method, url: req.url.split('?')[0], remoteAddress: req.ip }),
    },
  };
}

export async function createAgentServer(config: AgentConfig, opts: AgentServerOptions = {}): Promise<AgentServer> {
  if (!isUsableSecret(config.auth.secret)) {
    throw new AgentConfigError('the host agent needs a secret (auth.secret, SVC_AUTH_SECRET); empty or a placeholder is refused, and startAgent generates one when none is set');
  }
  // Parsed before anything starts: a bad entry is a configuration error, not a refusal of every request.
  let hosts;
  try {
    hosts = hostPolicy({ allowedHosts: config.allowed_hosts ?? [], boundHost: config.host, setting: 'allowed_hosts (SVC_ALLOWED_HOSTS)' });
  } catch (err) {
    throw new AgentConfigError((err as Error).message);
  }
  const app = Fastify({
    logger: loggerOptions(config, opts.logger ?? true),
    bodyLimit: config.body_limit_bytes,
    // Our own onRequest hook answers 401 before Fastify would; keep the error shape ours.
    return503OnClosing: true,
    ajv: { customOptions: { coerceTypes: false, allErrors: true } },
  }) as unknown as AgentServer;

  const metrics = opts.metrics ?? createAgentMetrics();
  const gateway = opts.gateway ?? gatewayClientFromConfig(config, { logger: app.log });
  let ownEngine: OcrEngine | undefined;
  const context: AgentContext = {
    config,
    log: app.log,
    metrics,
    gateway,
    coverage:
      opts.coverage ??
      httpCoverageReporter({ url: config.gateway.base_url, token: config.gateway.auth_token, timeoutMs: (config.gateway.timeout || 30) * 1000, log: app.log }),
    ocr() {
      if (opts.ocrEngine) return opts.ocrEngine;
      ownEngine ??= createOcrEngine({
        languages: config.modules.ocr.languages,
        timeoutMs: config.modules.ocr.timeout_ms,
        poolSize: config.modules.ocr.pool_size,
        maxPixels: config.modules.ocr.max_pixels,
        maxBytes: config.modules.ocr.max_image_bytes,
        langPaths: config.modules.ocr.lang_paths.length ? [...config.modules.ocr.lang_paths, ...defaultLangPaths()] : undefined,
      });
      return ownEngine;
    },
    startedAt: new Date(),
    version: AGENT_VERSION,
    exports: opts.exports,
  };

  const registry = new ModuleRegistry();
  registry.register(ocrModule(context));
  registry.register(emailModule(context));
  registry.register(emailLocalModule(context));
  registry.register(emailImapModule(context));
  registry.register(emailFoldersModule(context));
  for (const stub of builtinStubs(context)) registry.register(stub);
  // Collectors replace their stubs (same name).
  registry.register(chatappModule(context));
  registry.register(fswatchModule(context));
  registry.register(davModule('calendar')(context));
  registry.register(davModule('reminders')(context));
  registry.register(davModule('contacts')(context));
  for (const factory of opts.modules ?? []) registry.register(factory(context));
  const runner = new SourceRunner({
    gateway: opts.sourcesGateway ?? httpSourcesGateway({ url: config.gateway.base_url, token: config.gateway.auth_token, timeoutMs: (config.gateway.timeout || 30) * 1000 }),
    log: app.log,
    reportMs: opts.sourcesReportMs,
  });
  app.decorate('agent', { context, modules: registry, sources: runner });

  const headerName = config.auth.header.toLowerCase();
  app.addHook('onRequest', async (req, reply) => {
    const refusal = judgeRequest(hosts, req.headers);
    if (refusal) return reply.code(refusal.status).send({ error: refusal.message });
    const given = req.headers[headerName];
    const value = Array.isArray(given) ? given[0] : given;
    if (typeof value !== 'string' || !secretsEqual(value, config.auth.secret)) {
      return reply.code(401).send({ error: 'Unauthorized' });
    }
  });
  app.addHook('onResponse', async (req, reply) => {
    metrics.httpRequestsTotal.inc({ method: req.method, route: req.routeOptions.url ?? 'unknown', status: String(reply.statusCode) });
  });

  app.setNotFoundHandler((_req, reply) => reply.code(404).send({ error: 'Not Found' }));
  app.setErrorHandler((err: FastifyError, req, reply) => {
    const status = err.statusCode ?? 500;
    if (err.code === 'FST_ERR_CTP_BODY_TOO_LARGE' || status === 413) {
      return reply.code(413).send({ error: `Request body is larger than the limit of ${config.body_limit_bytes} bytes` });
    }
    if (err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE') {
      return reply.code(415).send({ error: 'Unsupported content type: send application/json or multipart/form-data' });
    }
    if (err.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || err.code === 'FST_ERR_CTP_EMPTY_JSON_BODY' || (status === 400 && err instanceof SyntaxError)) {
      return reply.code(400).send({ error: 'Request body must be valid JSON' });
    }
    if (status >= 400 && status < 500) return reply.code(status).send({ error: err.message });
    req.log.error({ err }, 'request failed');
    return reply.code(500).send({ error: 'Internal Server Error' });
  });

  await app.register(multipart, {
    limits: { fileSize: config.modules.ocr.max_image_bytes, files: 1, fields: 10, parts: 12 },
  });

  app.get('/v1/health', async () => ({
    status: 'healthy',
    started_at: context.startedAt.toISOString(),
    version: AGENT_VERSION,
    uptime_seconds: Math.round((Date.now() - context.startedAt.getTime()) / 1000),
    module_summaries: registry.summaries(),
  }));
  app.get('/v1/capabilities', async () => ({ modules: registry.capabilities() }));
  app.get('/v1/metrics', async (_req, reply) => {
    reply.header('content-type', metrics.registry.contentType);
    return metrics.registry.metrics();
  });

  for (const m of registry.list()) await m.registerRoutes?.(app);
  const coverage = new AgentCoverage(
    registry.list().flatMap((m) => (m.enabled && m.coverage ? [m.coverage] : [])),
    context.coverage,
    app.log,
  );
  coverage.registerRoutes(app);
  coverage.start(opts.coveragePollMs ?? 0);
  for (const m of registry.list()) if (m.enabled) for (const s of m.sources?.() ?? []) runner.add(s);
  registerSourceRoutes(app, runner);
  if (opts.runSources) app.addHook('onReady', async () => void runner.start());

  // Graceful shutdown: close() stops accepting connections and waits for in-flight requests. Their
  // keep-alive sockets would then hold the server open for keepAliveTimeout, so once closing starts
  // every response tells the client to close the connection.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (_req, reply) => {
    if (closing) reply.header('connection', 'close');
  });
  app.addHook('onClose', async () => {
    coverage.stop();
    await runner.stop();
    await registry.close();
    await ownEngine?.close();
  });
  return app;
}

/** GET /v1/sources: this agent's sources and their freshness; POST /v1/sources/{source_id}:run runs one now (409 when busy). */
function registerSourceRoutes(app: FastifyInstance, runner: SourceRunner): void {
  app.get('/v1/sources', async () => ({ sources: runner.list() }));
  app.post<{ Params: { source_id: string } }>('/v1/sources/:source_id::run', async (req, reply) => {
    const s = runner.get(req.params.source_id);
    if (!s) return reply.code(404).send({ error: 'No such source on this agent' });
    try {
      await s.runNow();
    } catch (err) {
      if (err instanceof SourceBusyError) return reply.code(409).send({ error: err.message });
      return reply.code(502).send({ error: (err as Error).message });
    }
    return { source_id: req.params.source_id, status: s.status() };
  });
}

function defaultLangPaths(): string[] {
  return [(require('@tesseract.js-data/eng') as { langPath: string }).langPath];
}
