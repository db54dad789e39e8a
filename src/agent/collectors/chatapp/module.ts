/**
 * The chat collector as a host agent module (host-agent spec §4.3, spec-notes B4.3, B1):
 *
 *   POST /v1/collectors/chatapp:run   {mode: backfill|tail (default tail), batch (default false),
 *                                      batch_size (default modules.chatapp.batch_size), max_rows}
 *   GET  /v1/collectors/chatapp/state {cursor_rowid, head_rowid, floor_rowid, last_run, last_error, is_running}
 *
 * Check order: module enabled (503) -> body (400) -> already running (409) -> run. A database that
 * cannot be opened answers 500 "Collection failed: ..."; a run stopped by the gateway (down, auth) answers
 * 502 with the run statistics (the cursor stays where the gateway last accepted, nothing is skipped).
 * The collector core (cursor.ts) does the work; this file only adapts input, the gateway client, OCR
 * and metrics.
 */
import fs from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import type { AgentContext, AgentModule } from '../../modules.ts';
import { ChatDbError } from './chatdb.ts';
import { CollectorBusyError, readCollectorState, runChatCollector, type RunOutcome, type RunStats } from './cursor.ts';
import { chatCensus, chatCoverageSource, chatRunCoverage } from './coverage.ts';
import { reconcileSource } from '../../../coverage/reconcile.ts';
import type { RunCountsT } from '../../../schemas/coverage.ts';
import { createChatOcr } from './ocr.ts';
import { createGatewaySubmit } from './submit.ts';
import { ScheduledSource } from '../../sources/scheduled.ts';
import { SourceBusyError } from '../../sources/source.ts';
import { WatchedSource } from '../../sources/watched.ts';

export const CHAT_DISABLED = 'iMessage collector module is disabled';
const MAX_BATCH_SIZE = 10_000;

function readable(p: string): boolean {
  try {
    fs.accessSync(p, fs.constants.R_OK);
    return true;
  } catch {
    return false;
  }
}

export interface RunRequest {
  mode: 'backfill' | 'tail';
  batch: boolean;
  batchSize: number;
  maxRows?: number;
}

/** Validates the run body; returns the request or an error message for a 400. */
export function parseRunBody(body: unknown, defaultBatchSize: number): RunRequest | string {
  if (body === undefined || body === null || body === '') body = {};
  if (typeof body !== 'object' || Array.isArray(body)) return 'Request body must be a JSON object';
  const b = body as Record<string, unknown>;
  const allowed = ['mode', 'batch', 'batch_size', 'max_rows'];
  const unknown = Object.keys(b).filter((k) => !allowed.includes(k));
  if (unknown.length) return `Unknown field: ${unknown[0]} (allowed: ${allowed.join(', ')})`;
  const mode = b.mode === undefined || b.mode === null ? 'tail' : typeof b.mode === 'string' ? b.mode.toLowerCase() : b.mode;
  if (mode !== 'tail' && mode !== 'backfill') return "Invalid mode: must be 'tail' or 'backfill'";
  if (b.batch !== undefined && b.batch !== null && typeof b.batch !== 'boolean') return 'batch must be true or false';
  const int = (v: unknown) => typeof v === 'number' && Number.isInteger(v);
  if (b.batch_size !== undefined && b.batch_size !== null && (!int(b.batch_size) || (b.batch_size as number) < 1 || (b.batch_size as number) > MAX_BATCH_SIZE)) {
    return `batch_size must be an integer between 1 and ${MAX_BATCH_SIZE}`;
  }
  if (b.max_rows !== undefined && b.max_rows !== null && (!int(b.max_rows) || (b.max_rows as number) < 1)) {
    return 'max_rows must be an integer >= 1';
  }
  return {
    mode,
    batch: b.batch === true,
    batchSize: (b.batch_size as number | undefined) ?? defaultBatchSize,
    maxRows: (b.max_rows as number | undefined) ?? undefined,
  };
}

export function chatappModule(ctx: AgentContext): AgentModule {
  const cfg = ctx.config.modules.chatapp;
  const ocrCfg = ctx.config.modules.ocr;
  let running = false;
  let lastStats: RunStats | null = null;

  const enrich =
    cfg.ocr_enabled && ocrCfg.enabled
      ? createChatOcr({
          engine: () => ctx.ocr(),
          languages: ocrCfg.languages,
          timeoutMs: ocrCfg.timeout_ms,
          maxBytes: ocrCfg.max_image_bytes,
          // The path is the user's own attachment; the message text is never logged.
          onError: (entry, err) => ctx.log.warn({ attachment: entry.id, reason: (err as Error).message }, 'chat attachment OCR failed'),
        })
      : undefined;
  const submit = createGatewaySubmit(ctx.gateway, { enrich, log: ctx.log });
  const metrics = {
    messages: (status: string, n: number) => ctx.metrics.imsgMessagesTotal.inc({ status }, n),
    attachments: (n: number) => {
      if (n > 0) ctx.metrics.imsgAttachmentsTotal.inc(n);
    },
  };

  /**
   * One run and its coverage report (docs/coverage.md): the whole database as the run left it, then a recount.
   * Coverage never fails a run: a database that cannot be read again is logged.
   */
  const runOnce = async (parsed: RunRequest, quiet = false): Promise<RunStats & { coverage?: RunCountsT }> => {
    const outcomes = new Map<string, RunOutcome>();
    const stats = await runChatCollector({
      dbPath: cfg.chat_db_path,
      statePath: cfg.state_path,
      mode: parsed.mode,
      batch: parsed.batch,
      batchSize: parsed.batchSize,
      maxRows: parsed.maxRows,
      submit,
      metrics,
      outcomes,
    });
    // A watched run that found nothing new reports nothing: the database changes with every read receipt.
    if (quiet && stats.status === 'ok' && stats.processed === 0 && stats.edits === 0) return stats;
    try {
      const { recorder, cursor } = chatRunCoverage({ dbPath: cfg.chat_db_path, statePath: cfg.state_path, stats, outcomes });
      await ctx.coverage.sendRun(recorder.report({ cursor, error: stats.status === 'error' ? (stats.errors[stats.errors.length - 1]?.error ?? 'stopped') : null }));
      await reconcileSource(ctx.coverage, recorder.source, (last) => Promise.resolve(chatCensus(cfg.chat_db_path, last)), {
        in_source: recorder.counts().in_source,
        cursor,
        startedAt: recorder.startedAt,
      });
      return { ...stats, coverage: recorder.counts() };
    } catch (err) {
      ctx.log.warn({ reason: (err as Error).message }, 'chatapp coverage not recorded');
      return stats;
    }
  };

  /** A tail run as a source runs it (schedule or watch): busy while a run is under way (POST …:run's guard). */
  const tailRun = async (quiet = false) => {
    if (running) throw new SourceBusyError('Collector is already running');
    running = true;
    try {
      lastStats = await runOnce({ mode: 'tail', batch: false, batchSize: cfg.batch_size }, quiet);
      if (lastStats.status === 'error') throw new Error(`Collection stopped: ${lastStats.errors[lastStats.errors.length - 1]?.error ?? 'gateway did not accept the documents'}`);
      return { detail: { processed: lastStats.processed, submitted: lastStats.submitted } };
    } finally {
      running = false;
    }
  };

  return {
    name: 'chatapp',
    // With modules.chatapp.schedule: a tail run at its times; without one, chat.db and its -wal are watched
    // (unless `watch: false`) and a change starts a tail run. The route's `running` guard keeps them apart (409).
    sources: () => {
      const identity = chatCoverageSource(cfg.chat_db_path);
      if (cfg.schedule) return [new ScheduledSource({ identity, label: 'chatapp', schedule: cfg.schedule, log: ctx.log, run: () => tailRun() })];
      if (!cfg.watch) return [];
      const dir = path.dirname(cfg.chat_db_path);
      const base = path.basename(cfg.chat_db_path);
      return [
        new WatchedSource({
          identity,
          label: 'chatapp',
          // Messages commits into chat.db-wal and checkpoints into chat.db; -shm and the journal say nothing new.
          targets: () => [{ dir, match: (n) => n === base || n === `${base}-wal` }],
          run: () => tailRun(true),
          // No database there, or no access to it (Full Disk Access on macOS): a person has to act.
          permanent: (err) => err instanceof ChatDbError,
          log: ctx.log,
        }),
      ];
    },
    coverage: {
      collector: 'chatapp',
      configured: () => (cfg.enabled ? [chatCoverageSource(cfg.chat_db_path)] : []),
      census: async (_s, last) => chatCensus(cfg.chat_db_path, last),
      // A tail run: rows waiting for the gateway are sent; a message the gateway refused for good (4xx) is
      // sent again when it changes (an edit), since the same document would be refused again.
      retry: async () => {
        if (running) return;
        running = true;
        try {
          lastStats = await runOnce({ mode: 'tail', batch: false, batchSize: cfg.batch_size });
        } finally {
          running = false;
        }
      },
    },
    enabled: cfg.enabled,
    // "fda" = full disk access on macOS: can the agent read the Messages database?
    permissions: () => ({ fda: readable(cfg.chat_db_path) }),
    status: () => (!cfg.enabled ? 'disabled' : running ? 'running' : 'ready'),
    publicConfig: () => ({ ocr_enabled: cfg.ocr_enabled, batch_size: cfg.batch_size }),
    extraInfo: () => (cfg.enabled ? { cursor_rowid: readCollectorState(cfg.state_path).cursor_rowid } : {}),
    registerRoutes(app: FastifyInstance) {
      app.register(async (scoped) => {
        scoped.addHook('preHandler', async (_req, reply) => {
          if (!cfg.enabled) return reply.code(503).send({ error: CHAT_DISABLED });
        });

        // '::' escapes the colon of the spec's "chatapp:run" in a Fastify path.
        scoped.post('/v1/collectors/chatapp::run', async (req, reply) => {
          const parsed = parseRunBody(req.body, cfg.batch_size);
          if (typeof parsed === 'string') return reply.code(400).send({ error: parsed });
          if (running) return reply.code(409).send({ error: 'Collector is already running' });
          running = true;
          try {
            const stats = await runOnce(parsed);
            lastStats = stats;
            req.log.info(
              { mode: stats.mode, processed: stats.processed, submitted: stats.submitted, status: stats.status, duration_ms: stats.duration_ms },
              'chat collector run finished',
            );
            if (stats.status === 'error') {
              const cause = stats.errors[stats.errors.length - 1]?.error ?? 'gateway did not accept the documents';
              return reply.code(502).send({ error: `Collection stopped: ${cause}`, ...stats });
            }
            return reply.send(stats);
          } catch (err) {
            if (err instanceof CollectorBusyError) return reply.code(409).send({ error: 'Collector is already running' });
            if (!(err instanceof ChatDbError)) req.log.error({ err }, 'chat collector run failed');
            return reply.code(500).send({ error: `Collection failed: ${(err as Error).message}` });
          } finally {
            running = false;
          }
        });

        scoped.get('/v1/collectors/chatapp/state', async () => ({
          ...readCollectorState(cfg.state_path),
          is_running: running,
          last_run_stats: lastStats
            ? { status: lastStats.status, mode: lastStats.mode, processed: lastStats.processed, submitted: lastStats.submitted, skipped: lastStats.skipped, rejected: lastStats.rejected }
            : null,
        }));
      });
    },
  };
}
