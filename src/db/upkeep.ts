/**
 * Table upkeep for the embedded database: what autovacuum does on a PostgreSQL server.
 *
 * PGlite runs no autovacuum (it is one backend in WebAssembly, without the launcher process), so
 * left alone its tables are never analysed and their dead row versions never reclaimed. Never
 * analysed, the planner works from default estimates: the search's change-log poll read the whole
 * log instead of its index, and a search over 100,000 documents took 30 ms instead of 2.3
 * (docs/BENCHMARKS.md). Never vacuumed, every update (a chunk's embedding status, a document's status,
 * a submission's) and every pruned change-log row stays in the table and its indexes for good.
 *
 * This applies autovacuum's default thresholds to the statistics PostgreSQL keeps anyway
 * (pg_stat_user_tables): ANALYZE a table once more than 50 + 10 % of its rows changed since the last
 * one (or it was never analysed), VACUUM it once its dead rows pass 50 + 20 %. On PGlite a statement
 * holds the one database session until it ends, so the work goes one table at a time, only while
 * nobody is reading (a search, an answer, a page of the UI waits for nothing of this), and stops as
 * soon as someone is. A PostgreSQL server does all of this itself; the server starts this for PGlite only.
 */
import type { Queryable } from './types.ts';

export type UpkeepAction = 'analyze' | 'vacuum';

export interface UpkeepTask {
  table: string;
  action: UpkeepAction;
}

/** autovacuum_*_threshold and autovacuum_*_scale_factor, PostgreSQL's defaults. */
export const ANALYZE_THRESHOLD = 50;
export const ANALYZE_SCALE = 0.1;
export const VACUUM_THRESHOLD = 50;
export const VACUUM_SCALE = 0.2;

/** The tables of the public schema that are due, analyses first (cheap, and what plans need), largest need first. */
export async function upkeepDue(db: Queryable): Promise<UpkeepTask[]> {
  const r = await db.query<{ table: string; action: UpkeepAction }>(
    `SELECT s.relname AS table, a.action
       FROM pg_stat_user_tables s
       JOIN pg_class c ON c.oid = s.relid
      CROSS JOIN LATERAL (VALUES
        ('analyze', CASE WHEN c.reltuples < 0 AND s.n_live_tup > 0 THEN s.n_live_tup::float8
                         ELSE s.n_mod_since_analyze - ($1 + $2 * greatest(c.reltuples, 0)) END),
        ('vacuum', s.n_dead_tup - ($3 + $4 * greatest(c.reltuples, 0)))
      ) AS a(action, excess)
      WHERE s.schemaname = 'public' AND a.excess > 0
      ORDER BY a.action, a.excess DESC, s.relname`,
    [ANALYZE_THRESHOLD, ANALYZE_SCALE, VACUUM_THRESHOLD, VACUUM_SCALE],
  );
  return r.rows;
}

/** A table name as an SQL identifier (names come from the catalog; quoting keeps any of them safe). */
function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

export async function runUpkeep(db: Queryable, task: UpkeepTask): Promise<void> {
  await db.exec(`${task.action === 'vacuum' ? 'VACUUM' : 'ANALYZE'} ${quoteIdent(task.table)}`);
}

export interface UpkeepPass {
  done: (UpkeepTask & { ms: number })[];
  /** Tasks left because someone started reading (they are due again at the next pass). */
  deferred: number;
}

/** Runs the due tasks one by one while `idle()` says nobody is reading. */
export async function upkeepPass(db: Queryable, idle: () => boolean = () => true): Promise<UpkeepPass> {
  const due = await upkeepDue(db);
  const done: UpkeepPass['done'] = [];
  for (const task of due) {
    if (!idle()) return { done, deferred: due.length - done.length };
    const started = performance.now();
    await runUpkeep(db, task);
    done.push({ ...task, ms: Math.round(performance.now() - started) });
    // Let requests that arrived during the statement in before the next one.
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return { done, deferred: 0 };
}

export interface TableUpkeepOptions {
  /** Between passes. */
  intervalMs: number;
  /** The first pass, after start (a database never analysed gets its statistics soon). */
  firstAfterMs?: number;
  /** Whether nobody is reading now (ReaderSignal.idle, readers.ts). */
  idle: () => boolean;
  log: { info(o: object, m?: string): void; warn(o: object, m?: string): void };
}

/** Passes every `intervalMs` in the background; `stop()` waits for the statement in progress. */
export function startTableUpkeep(db: Queryable, opts: TableUpkeepOptions): { stop(): Promise<void> } {
  let stopped = false;
  let running: Promise<void> = Promise.resolve();
  let timer: NodeJS.Timeout | undefined;
  const schedule = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => {
      running = upkeepPass(db, () => !stopped && opts.idle())
        .then((pass) => {
          if (pass.done.length > 0) opts.log.info({ done: pass.done, deferred: pass.deferred }, 'table upkeep');
        })
        .catch((err: Error) => opts.log.warn({ err: { message: err.message } }, 'table upkeep failed; the next pass retries'))
        .finally(() => schedule(opts.intervalMs));
    }, ms);
    timer.unref();
  };
  schedule(opts.firstAfterMs ?? Math.min(opts.intervalMs, 10_000));
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}
