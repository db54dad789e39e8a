/**
 * File-system watches as a host agent module (host-agent spec §4.4, spec-notes B4.4, B9).
 *
 *   POST   /v1/fs-watches          {path, glob?, target?, handoff?} -> 200 {status: success, data: {id, message, watch}}
 *   GET    /v1/fs-watches          -> {status: success, data: {watches[], stats}}
 *   DELETE /v1/fs-watches/{id}     -> {status: success, data: {message}} | 404
 *   GET    /v1/fs-watches/events   -> {status: success, data: {events[], has_more}}   (recent activity, newest last)
 *
 * Errors: {status: "error", error}. Module disabled -> 501 (as Haven's FSWatchHandler; spec-notes B1/B4.4).
 * Paths are confined to modules.fswatch.allowed_roots (see paths.ts): outside -> 403, malformed/missing/
 * not a directory -> 400. Watches listed in the configuration file are always active, count as allowed
 * roots themselves and cannot be deleted through the API (409).
 */
import crypto from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AgentConfig } from '../../config.ts';
import { GatewayHttpError } from '../../gateway-client.ts';
import type { AgentContext, AgentModule } from '../../modules.ts';
import { engineOcrFunction } from '../chatapp/ocr.ts';
import { checkGlob } from './glob.ts';
import { FsWatchManager, fswatchCoverageSource, type DeleteDocumentFn } from './manager.ts';
import { resolveWatchPath } from './paths.ts';
import type { WatchEntry } from './store.ts';

export const FSWATCH_DISABLED = 'File watch module is disabled';
const TARGETS = ['gateway'] as const;
const HANDOFFS = ['presigned', 'inline'] as const;
const MAX_WATCHES = 256;

/**
 * Soft delete through the catalog route (guarded by the gateway's CATALOG_TOKEN, which defaults to its
 * AUTH_TOKEN). Retries 429/503/transport like the gateway client (0.5 s, 1 s), then status -1.
 */
export function catalogDeleter(config: AgentConfig, fetchImpl: typeof fetch = fetch, warn: (problem: string) => void = () => undefined): DeleteDocumentFn {
  const base = config.gateway.base_url.replace(/\/+$/, '');
  const token = catalogToken(config);
  const timeoutMs = Math.round(config.gateway.timeout * 1000);
  let warned = false;
  return async (docId) => {
    const url = `${base}/v1/catalog/documents/${encodeURIComponent(docId)}`;
    const backoff = [500, 1000];
    const statuses: number[] = [];
    for (let attempt = 0; attempt <= backoff.length; attempt++) {
      if (attempt > 0) await new Promise((r) => setTimeout(r, backoff[attempt - 1]));
      let res: Response;
      try {
        res = await fetchImpl(url, {
          method: 'DELETE',
          headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
          signal: AbortSignal.timeout(timeoutMs),
          redirect: 'error',
        });
      } catch {
        statuses.push(0);
        continue;
      }
      const body = await res.text().catch(() => '');
      statuses.push(res.status);
      if (res.ok) return 'deleted';
      if (res.status === 404) return 'gone';
      if (res.status === 429 || res.status === 503) continue;
      // Refused deletions wait and are retried, which helps nobody until the token is fixed: say why, once.
      if ((res.status === 401 || res.status === 403) && !warned) {
        warned = true;
        warn(catalogRefusal(config, res.status));
      }
      throw new GatewayHttpError(res.status, `Gateway answered ${res.status}`, body.slice(0, 2000), statuses);
    }
    throw new GatewayHttpError(-1, 'Exceeded retry attempts', undefined, statuses);
  };
}

function catalogToken(config: AgentConfig): string | undefined {
  return config.modules.fswatch.catalog_token ?? config.gateway.auth_token;
}

function catalogRefusal(config: AgentConfig, status: number): string {
  const which = config.modules.fswatch.catalog_token ? 'modules.fswatch.catalog_token' : 'gateway.auth_token (modules.fswatch.catalog_token is not set)';
  return (
    `the gateway's catalog API refused this agent's token (${status}): deleted files in watched folders cannot ` +
    `remove their documents. The agent sends ${which}; set modules.fswatch.catalog_token to the gateway's ` +
    `CATALOG_TOKEN. Deletions wait and are retried until then.`
  );
}

/**
 * Whether the gateway's catalog API takes the token watched-folder deletions use, asked once at start: a GET of a
 * submission nobody has (404 when the token is taken, 401/403 when not). Null when it is taken or the gateway
 * does not answer (then the first refused deletion says so).
 */
export async function catalogAccessProblem(config: AgentConfig, fetchImpl: typeof fetch = fetch): Promise<string | null> {
  const base = config.gateway.base_url.replace(/\/+$/, '');
  const token = catalogToken(config);
  try {
    const res = await fetchImpl(`${base}/v1/catalog/submissions/00000000-0000-4000-8000-000000000000`, {
      headers: { accept: 'application/json', ...(token ? { authorization: `Bearer ${token}` } : {}) },
      signal: AbortSignal.timeout(Math.round(config.gateway.timeout * 1000)),
      redirect: 'error',
    });
    await res.body?.cancel();
    return res.status === 401 || res.status === 403 ? catalogRefusal(config, res.status) : null;
  } catch {
    return null;
  }
}

function configWatchId(path: string, glob: string): string {
  return `config-${crypto.createHash('sha256').update(`${path}\0${glob}`).digest('hex').slice(0, 12)}`;
}

type Checked = { ok: true; glob: string; target: 'gateway'; handoff: 'presigned' | 'inline' } | { ok: false; error: string };

function checkOptions(b: Record<string, unknown>): Checked {
  const glob = b.glob === undefined || b.glob === null ? '*' : b.glob;
  const gErr = checkGlob(glob);
  if (gErr) return { ok: false, error: gErr };
  const target = b.target ?? 'gateway';
  if (!TARGETS.includes(target as 'gateway')) return { ok: false, error: `target must be one of ${TARGETS.join(', ')}` };
  const handoff = b.handoff ?? 'presigned';
  if (!HANDOFFS.includes(handoff as 'presigned')) return { ok: false, error: `handoff must be one of ${HANDOFFS.join(', ')}` };
  return { ok: true, glob: glob as string, target: 'gateway', handoff: handoff as 'presigned' | 'inline' };
}

export interface FsWatchModuleOptions {
  /** Replace the catalog delete call (tests of gateway faults). */
  deleteDocument?: DeleteDocumentFn;
}

export function fswatchModule(ctx: AgentContext, extra: FsWatchModuleOptions = {}): AgentModule & { manager?: FsWatchManager } {
  const cfg = ctx.config.modules.fswatch;
  const ocrCfg = ctx.config.modules.ocr;
  let manager: FsWatchManager | undefined;
  const configRoots: string[] = [];

  // One warning for a token the catalog API refuses, whether the start probe or a deletion finds it first.
  let tokenWarned = false;
  const warnToken = (problem: string) => {
    if (tokenWarned) return;
    tokenWarned = true;
    ctx.log.warn(problem);
  };
  if (cfg.enabled) {
    manager = new FsWatchManager({
      statePath: cfg.state_path,
      gateway: ctx.gateway,
      deleteDocument: extra.deleteDocument ?? catalogDeleter(ctx.config, fetch, warnToken),
      debounceMs: cfg.debounce_ms,
      maxFileBytes: cfg.max_file_bytes,
      queueSize: cfg.event_queue_size,
      ocr: ocrCfg.enabled ? engineOcrFunction(() => ctx.ocr(), ocrCfg.languages) : undefined,
      log: ctx.log,
      coverage: ctx.coverage,
      exports: ctx.exports,
    });
    // Watches from the configuration file: trusted (the user wrote them), so their folders are roots too.
    for (const [i, raw] of cfg.watches.entries()) {
      const opts = checkOptions(raw);
      const p = typeof raw.path === 'string' ? raw.path : '';
      const resolved = resolveWatchPath(p, [p]);
      if (!opts.ok || !resolved.ok) {
        ctx.log.warn({ index: i, error: opts.ok ? (resolved as { error: string }).error : opts.error }, 'modules.fswatch.watches entry ignored');
        continue;
      }
      configRoots.push(resolved.path);
      const id = typeof raw.id === 'string' && raw.id.trim() ? raw.id.trim() : configWatchId(resolved.path, opts.glob);
      manager.store.watches.set(id, {
        id,
        path: resolved.path,
        glob: opts.glob,
        target: opts.target,
        handoff: opts.handoff,
        origin: 'config',
        created_at: new Date(0).toISOString(),
      });
    }
  }

  const fail = (reply: FastifyReply, status: number, error: string) => reply.code(status).send({ status: 'error', error });

  return {
    name: 'fswatch',
    enabled: cfg.enabled,
    manager,
    coverage: manager
      ? {
          collector: 'fswatch',
          configured: () => [...new Set(manager!.list().map((w) => w.path))].map(fswatchCoverageSource),
          census: (s, last) => manager!.census(s.source_ref, last.startedAt),
          retry: async (s) => void manager!.retryFailed(s.source_ref),
        }
      : undefined,
    permissions: () => ({}),
    status: () => (cfg.enabled ? 'ready' : 'disabled'),
    publicConfig: () => ({ watches_count: manager?.list().length ?? cfg.watches.length, debounce_ms: cfg.debounce_ms }),
    extraInfo: () => ({ watches_count: manager?.list().length ?? cfg.watches.length }),
    registerRoutes(app: FastifyInstance) {
      manager?.startAll();
      if (manager && !extra.deleteDocument) void catalogAccessProblem(ctx.config).then((p) => p && warnToken(p));
      app.register(async (scoped) => {
        scoped.addHook('preHandler', async (_req, reply) => {
          if (!manager) return fail(reply, 501, FSWATCH_DISABLED);
        });

        scoped.post('/v1/fs-watches', async (req, reply) => {
          const b = req.body;
          if (typeof b !== 'object' || b === null || Array.isArray(b)) return fail(reply, 400, 'Request body must be a JSON object');
          const body = b as Record<string, unknown>;
          const allowed = ['id', 'path', 'glob', 'target', 'handoff'];
          const unknown = Object.keys(body).filter((k) => !allowed.includes(k));
          if (unknown.length) return fail(reply, 400, `Unknown field: ${unknown[0]} (allowed: ${allowed.join(', ')})`);
          const opts = checkOptions(body);
          if (!opts.ok) return fail(reply, 400, opts.error);
          const resolved = resolveWatchPath(body.path, [...cfg.allowed_roots, ...configRoots]);
          if (!resolved.ok) return fail(reply, resolved.status, resolved.error);
          let id: string = crypto.randomUUID();
          if (body.id !== undefined) {
            if (typeof body.id !== 'string' || !/^[A-Za-z0-9._-]{1,64}$/.test(body.id)) {
              return fail(reply, 400, 'id must be 1-64 characters of letters, digits, dot, underscore or dash');
            }
            id = body.id;
          }
          const m = manager!;
          if (m.store.watches.has(id)) return fail(reply, 409, `A watch with id ${id} already exists`);
          const same = m.list().find((w) => w.path === resolved.path && w.glob === opts.glob);
          if (same) return fail(reply, 409, `This folder is already watched with the same glob (id ${same.id})`);
          if (m.list().length >= MAX_WATCHES) return fail(reply, 400, `At most ${MAX_WATCHES} watches`);
          const watch: WatchEntry = {
            id,
            path: resolved.path,
            glob: opts.glob,
            target: opts.target,
            handoff: opts.handoff,
            origin: 'api',
            created_at: new Date().toISOString(),
          };
          m.add(watch);
          return reply.send({ status: 'success', data: { id, message: `Watching ${resolved.path}`, watch } });
        });

        scoped.get('/v1/fs-watches', async () => ({
          status: 'success',
          data: { watches: manager!.list(), stats: manager!.stats() },
        }));

        scoped.get('/v1/fs-watches/events', async (req, reply) => {
          const q = req.query as Record<string, string | undefined>;
          const limit = q.limit === undefined ? 100 : Number(q.limit);
          if (!Number.isInteger(limit) || limit < 1 || limit > 500) return fail(reply, 400, 'limit must be an integer between 1 and 500');
          const events = manager!.recentEvents(limit + 1);
          return { status: 'success', data: { events: events.slice(-limit), has_more: events.length > limit } };
        });

        scoped.delete('/v1/fs-watches/:id', async (req, reply) => {
          const { id } = req.params as { id: string };
          const w = manager!.store.watches.get(id);
          if (!w) return fail(reply, 404, `No watch with id ${id}`);
          if (w.origin === 'config') return fail(reply, 409, 'This watch is defined in the configuration file (modules.fswatch.watches); remove it there');
          await manager!.remove(id);
          return reply.send({ status: 'success', data: { message: `Stopped watching ${w.path}` } });
        });
      });
    },
    async close() {
      await manager?.close();
    },
  };
}
