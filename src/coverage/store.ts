/**
 * The gateway's side of coverage (docs/coverage.md): run reports and recounts from the collectors, kept per
 * source. Every run report describes the whole source as the collector saw it (items it did not read again
 * count as stored-unchanged, or pending), so the latest run's picture replaces the one before; older reports
 * arriving late go to the history only. The not-stored items of the latest run are kept in order and paged.
 */
import type { Database, Queryable } from '../db/types.ts';
import {
  MISSING_SKIP_REASONS,
  SKIP_REASONS,
  type CoverageRunReportT,
  type MissingItemT,
  type ReconcileReportT,
  type ReconcileResultT,
  type RunCountsT,
  type SkippedCountsT,
  type SourceCoverageT,
} from '../schemas/coverage.ts';
import { MAX_CURSOR_BYTES } from '../schemas/coverage.ts';
import { coverageSourceId, type SourceIdentity } from './identity.ts';

/** Runs kept per source (the history behind GET /v1/coverage/sources/{id}/runs). */
export const RUNS_KEPT = 100;

export interface ReportProblem {
  loc: (string | number)[];
  msg: string;
}

export const storedTotal = (c: RunCountsT) => c.stored.new + c.stored.unchanged + c.stored.updated;
export const skippedTotal = (s: SkippedCountsT) => SKIP_REASONS.reduce((n, r) => n + (s[r] ?? 0), 0);
/** Items the counts say belong in `missing`: failed, pending, and skipped as unsupported or too large. */
export const missingTotal = (c: RunCountsT) => c.failed + c.pending + MISSING_SKIP_REASONS.reduce((n, r) => n + (c.skipped[r] ?? 0), 0);

/** What the schema cannot say: the counts add up, the list matches them, the cursor is small. */
export function checkRunReport(r: CoverageRunReportT): ReportProblem[] {
  const problems: ReportProblem[] = [];
  const c = r.counts;
  const sum = storedTotal(c) + skippedTotal(c.skipped) + c.failed + c.pending;
  if (sum !== c.in_source) {
    problems.push({
      loc: ['body', 'counts', 'in_source'],
      msg: `counts do not add up: stored ${storedTotal(c)} + skipped ${skippedTotal(c.skipped)} + failed ${c.failed} + pending ${c.pending} = ${sum}, not in_source ${c.in_source}`,
    });
  }
  const listed = r.missing.length + (r.missing_unlisted ?? 0);
  if (listed !== missingTotal(c)) {
    problems.push({
      loc: ['body', 'missing'],
      msg: `missing lists ${r.missing.length} items and missing_unlisted says ${r.missing_unlisted ?? 0} more, but the counts have ${missingTotal(c)} failed, pending, unsupported or too large items`,
    });
  }
  const byState = { failed: 0, pending: 0, skipped: 0 };
  r.missing.forEach((m, i) => {
    byState[m.state]++;
    if (m.state === 'skipped' && !(MISSING_SKIP_REASONS as readonly string[]).includes(m.reason_code)) {
      problems.push({ loc: ['body', 'missing', i, 'reason_code'], msg: `a skipped item in missing has reason_code ${MISSING_SKIP_REASONS.join(' or ')}` });
    }
  });
  if (byState.failed > c.failed || byState.pending > c.pending) {
    problems.push({ loc: ['body', 'missing'], msg: `missing lists more failed or pending items than the counts hold` });
  }
  if (Date.parse(r.finished_at) < Date.parse(r.started_at)) problems.push({ loc: ['body', 'finished_at'], msg: 'finished_at is before started_at' });
  if (r.cursor && Buffer.byteLength(JSON.stringify(r.cursor)) > MAX_CURSOR_BYTES) {
    problems.push({ loc: ['body', 'cursor'], msg: `cursor is larger than ${MAX_CURSOR_BYTES} bytes of JSON` });
  }
  return problems;
}

async function ensureSource(tx: Queryable, s: SourceIdentity): Promise<string> {
  const id = coverageSourceId(s);
  await tx.query(
    `INSERT INTO coverage_sources (source_id, collector, source_type, source_account_id, source_ref)
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT (source_id) DO NOTHING`,
    [id, s.collector, s.source_type, s.source_account_id ?? null, s.source_ref],
  );
  return id;
}

const identityOf = (r: SourceIdentity): SourceIdentity => ({
  collector: r.collector,
  source_type: r.source_type,
  source_account_id: r.source_account_id ?? null,
  source_ref: r.source_ref,
});

/** Records a run. `applied` is false when the run was known already or a later run of the source came first. */
export async function recordRun(db: Database, r: CoverageRunReportT): Promise<{ source_id: string; run_id: string; applied: boolean }> {
  return db.transaction(async (tx) => {
    const sourceId = await ensureSource(tx, identityOf(r));
    // One report at a time per source: the latest-run check and the missing list replace must not interleave.
    const cur = await tx.query<{ last_run_finished_at: Date | null; retry_requested_at: Date | null }>(
      'SELECT last_run_finished_at, retry_requested_at FROM coverage_sources WHERE source_id = $1 FOR UPDATE',
      [sourceId],
    );
    const unlisted = r.missing_unlisted ?? 0;
    const inserted = await tx.query(
      `INSERT INTO coverage_runs (run_id, source_id, started_at, finished_at, status, error, counts, missing_listed, missing_unlisted)
       VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9) ON CONFLICT (run_id) DO NOTHING`,
      [r.run_id, sourceId, r.started_at, r.finished_at, r.status, r.error ?? null, JSON.stringify(r.counts), r.missing.length, unlisted],
    );
    if (inserted.rowCount === 0) return { source_id: sourceId, run_id: r.run_id, applied: false };
    const last = cur.rows[0]?.last_run_finished_at;
    const finished = new Date(r.finished_at);
    if (last && new Date(last).getTime() > finished.getTime()) return { source_id: sourceId, run_id: r.run_id, applied: false };
    const c = r.counts;
    const retryAsked = cur.rows[0]?.retry_requested_at;
    // A run that began after the retry was asked for has tried the failed items again.
    const retryDone = retryAsked && new Date(r.started_at).getTime() >= new Date(retryAsked).getTime();
    await tx.query(
      `UPDATE coverage_sources SET last_run_id = $2, last_run_finished_at = $3, in_source = $4, stored_new = $5,
              stored_unchanged = $6, stored_updated = $7, skipped = $8::jsonb, failed = $9, pending = $10,
              missing_unlisted = $11, cursor = $12::jsonb, updated_at = now(),
              retry_requested_at = CASE WHEN $13 THEN NULL ELSE retry_requested_at END
        WHERE source_id = $1`,
      [
        sourceId, r.run_id, r.finished_at, c.in_source, c.stored.new, c.stored.unchanged, c.stored.updated,
        JSON.stringify(c.skipped), c.failed, c.pending, unlisted, r.cursor ? JSON.stringify(r.cursor) : null, Boolean(retryDone),
      ],
    );
    await tx.query('DELETE FROM coverage_missing WHERE source_id = $1', [sourceId]);
    if (r.missing.length) {
      await tx.query(
        `INSERT INTO coverage_missing (source_id, ord, ref, state, reason_code, reason)
         SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::text[], $6::text[])`,
        [
          sourceId,
          r.missing.map((_m, i) => i + 1),
          r.missing.map((m) => m.ref),
          r.missing.map((m) => m.state),
          r.missing.map((m) => m.reason_code),
          r.missing.map((m) => m.reason),
        ],
      );
    }
    await tx.query(
      `DELETE FROM coverage_runs WHERE source_id = $1 AND run_id NOT IN
         (SELECT run_id FROM coverage_runs WHERE source_id = $1 ORDER BY finished_at DESC LIMIT ${RUNS_KEPT})`,
      [sourceId],
    );
    return { source_id: sourceId, run_id: r.run_id, applied: true };
  });
}

/** Records a recount of a source: drift against the last run, kept with the source. */
export async function recordReconcile(db: Database, r: ReconcileReportT): Promise<{ source_id: string; reconcile: ReconcileResultT }> {
  return db.transaction(async (tx) => {
    const sourceId = await ensureSource(tx, identityOf(r));
    const cur = await tx.query<{ in_source: number | null; reconcile_requested_at: Date | null }>(
      'SELECT in_source, reconcile_requested_at FROM coverage_sources WHERE source_id = $1 FOR UPDATE',
      [sourceId],
    );
    const recorded = r.recorded_in_source ?? cur.rows[0]?.in_source ?? null;
    const drift = recorded === null ? r.in_source : r.in_source - recorded;
    const reconcile: ReconcileResultT = {
      counted_at: new Date(r.counted_at).toISOString(),
      in_source: r.in_source,
      recorded_in_source: recorded,
      drift,
      added: r.added ?? null,
      removed: r.removed ?? null,
      changed: r.changed ?? null,
      in_sync: drift === 0 && !r.added && !r.removed && !r.changed && recorded !== null,
      facts: r.facts ?? {},
      notes: r.notes ?? [],
    };
    const asked = cur.rows[0]?.reconcile_requested_at;
    const done = asked && new Date(r.counted_at).getTime() >= new Date(asked).getTime();
    await tx.query(
      `UPDATE coverage_sources SET reconcile = $2::jsonb, updated_at = now(),
              reconcile_requested_at = CASE WHEN $3 THEN NULL ELSE reconcile_requested_at END
        WHERE source_id = $1`,
      [sourceId, JSON.stringify(reconcile), Boolean(done)],
    );
    return { source_id: sourceId, reconcile };
  });
}

interface SourceRow {
  source_id: string;
  collector: string;
  source_type: string;
  source_account_id: string | null;
  source_ref: string;
  last_run_id: string | null;
  in_source: number | null;
  stored_new: number | null;
  stored_unchanged: number | null;
  stored_updated: number | null;
  skipped: Record<string, number> | null;
  failed: number | null;
  pending: number | null;
  missing_unlisted: number;
  cursor: Record<string, unknown> | null;
  reconcile: ReconcileResultT | null;
  retry_requested_at: Date | null;
  reconcile_requested_at: Date | null;
  missing_total: number;
  run_started_at: Date | null;
  run_finished_at: Date | null;
  run_status: string | null;
  run_error: string | null;
  run_counts: RunCountsT | null;
  st_state: string | null;
  st_mode: string | null;
  st_paused: boolean | null;
  st_last_success_at: Date | null;
  st_newest_at_source: Date | null;
  st_newest_stored: Date | null;
  st_next_run_at: Date | null;
  st_last_error: string | null;
  st_reported_at: Date | null;
  st_agent: string | null;
}

const publicItem = ({ ref, state, reason_code, reason }: MissingItemT): MissingItemT => ({ ref, state, reason_code, reason });

const iso = (d: Date | string | null) => (d === null ? null : new Date(d).toISOString());

/** The freshness fields of a source (issue 41): what its agent last reported (src/coverage/freshness.ts). */
function freshnessOf(row: SourceRow) {
  const atSource = iso(row.st_newest_at_source);
  const stored = iso(row.st_newest_stored);
  return {
    state: (row.st_paused ? 'paused' : row.st_state) as SourceCoverageT['state'],
    mode: row.st_mode,
    paused: row.st_paused === true,
    last_success_at: iso(row.st_last_success_at),
    newest_at_source: atSource,
    newest_stored: stored,
    lag_seconds: sourceLagSeconds(atSource, stored),
    next_run_at: row.st_paused ? null : iso(row.st_next_run_at),
    last_error: row.st_last_error,
    status_reported_at: iso(row.st_reported_at),
    agent: row.st_agent,
  };
}

/** How far memex is behind its source: newest at the source minus newest stored, never below 0; null when unknown. */
export function sourceLagSeconds(atSource: string | null, stored: string | null): number | null {
  if (!atSource) return null;
  if (!stored) return null;
  return Math.max(0, (Date.parse(atSource) - Date.parse(stored)) / 1000);
}

function toCoverage(row: SourceRow, missing: MissingItemT[], missingNext: string | null): SourceCoverageT {
  const ran = row.in_source !== null && row.last_run_id !== null;
  const skipped = row.skipped ?? {};
  const skippedSum = Object.values(skipped).reduce((n, v) => n + v, 0);
  return {
    source_id: row.source_id,
    collector: row.collector,
    source_type: row.source_type,
    source_account_id: row.source_account_id,
    source_ref: row.source_ref,
    ...freshnessOf(row),
    in_source: ran ? row.in_source : (row.reconcile?.in_source ?? null),
    stored: ran ? row.stored_new! + row.stored_unchanged! + row.stored_updated! : null,
    skipped: ran ? skippedSum : null,
    failed: ran ? row.failed : null,
    pending: ran ? row.pending : null,
    stored_detail: ran ? { new: row.stored_new!, unchanged: row.stored_unchanged!, updated: row.stored_updated! } : null,
    skipped_by_reason: ran ? skipped : null,
    missing: missing.map(publicItem),
    missing_total: Number(row.missing_total),
    missing_unlisted: row.missing_unlisted,
    missing_next: missingNext,
    last_run:
      row.last_run_id && row.run_counts
        ? {
            run_id: row.last_run_id,
            started_at: iso(row.run_started_at)!,
            finished_at: iso(row.run_finished_at)!,
            status: row.run_status!,
            error: row.run_error,
            counts: row.run_counts,
          }
        : null,
    cursor: row.cursor,
    reconcile: row.reconcile,
    retry_requested_at: iso(row.retry_requested_at),
    reconcile_requested_at: iso(row.reconcile_requested_at),
  };
}

const SOURCE_SELECT = `
  SELECT s.source_id, s.collector, s.source_type, s.source_account_id, s.source_ref, s.last_run_id, s.in_source,
         s.stored_new, s.stored_unchanged, s.stored_updated, s.skipped, s.failed, s.pending, s.missing_unlisted,
         s.cursor, s.reconcile, s.retry_requested_at, s.reconcile_requested_at,
         (SELECT count(*)::int FROM coverage_missing m WHERE m.source_id = s.source_id) AS missing_total,
         r.started_at AS run_started_at, r.finished_at AS run_finished_at, r.status AS run_status, r.error AS run_error,
         r.counts AS run_counts,
         st.state AS st_state, st.mode AS st_mode, st.paused AS st_paused, st.last_success_at AS st_last_success_at,
         st.newest_at_source AS st_newest_at_source, st.newest_stored AS st_newest_stored, st.next_run_at AS st_next_run_at,
         st.last_error AS st_last_error, st.reported_at AS st_reported_at, st.agent AS st_agent
    FROM coverage_sources s LEFT JOIN coverage_runs r ON r.run_id = s.last_run_id
    LEFT JOIN source_status st ON st.source_id = s.source_id`;

/** Missing items of a source after `after` (an ord), in the collector's order. */
async function missingAfter(db: Queryable, sourceId: string, after: number, limit: number): Promise<(MissingItemT & { ord: number })[]> {
  const r = await db.query<MissingItemT & { ord: number }>(
    `SELECT ord, ref, state, reason_code, reason FROM coverage_missing WHERE source_id = $1 AND ord > $2 ORDER BY ord LIMIT $3`,
    [sourceId, after, limit],
  );
  return r.rows;
}

/**
 * Every source, or those `filter` names (a source id, a collector, a source type, or a part of the ref), with
 * the first `missingLimit` missing items each.
 */
export async function listCoverage(db: Queryable, opts: { filter?: string; missingLimit: number }): Promise<SourceCoverageT[]> {
  const params: unknown[] = [];
  let where = '';
  if (opts.filter) {
    params.push(opts.filter);
    where = `WHERE s.source_id::text = $1 OR s.collector = $1 OR s.source_type = $1 OR strpos(s.source_ref, $1) > 0`;
  }
  const rows = (await db.query<SourceRow>(`${SOURCE_SELECT} ${where} ORDER BY s.collector, s.source_type, s.source_ref`, params)).rows;
  const out: SourceCoverageT[] = [];
  for (const row of rows) {
    // One more than shown: whether there is a next page.
    const items = opts.missingLimit > 0 ? await missingAfter(db, row.source_id, 0, opts.missingLimit + 1) : [];
    const shown = items.slice(0, opts.missingLimit);
    const more = opts.missingLimit === 0 ? Number(row.missing_total) > 0 : items.length > shown.length;
    out.push(toCoverage(row, shown, more ? String(shown.at(-1)?.ord ?? 0) : null));
  }
  return out;
}

export async function sourceExists(db: Queryable, sourceId: string): Promise<boolean> {
  return (await db.query('SELECT 1 FROM coverage_sources WHERE source_id = $1', [sourceId])).rows.length > 0;
}

/** One page of a source's missing items; null when the source is unknown. */
export async function missingPage(db: Queryable, sourceId: string, after: number, limit: number) {
  const total = await db.query<{ n: number }>(
    `SELECT (SELECT count(*)::int FROM coverage_missing WHERE source_id = $1) AS n FROM coverage_sources WHERE source_id = $1`,
    [sourceId],
  );
  if (!total.rows.length) return null;
  const items = await missingAfter(db, sourceId, after, limit + 1);
  const page = items.slice(0, limit);
  return {
    source_id: sourceId,
    total: total.rows[0].n,
    items: page.map(publicItem),
    next: items.length > limit ? String(page.at(-1)!.ord) : null,
  };
}

/** The latest runs of a source, newest first; null when the source is unknown. */
export async function runHistory(db: Queryable, sourceId: string, limit: number) {
  if (!(await sourceExists(db, sourceId))) return null;
  const r = await db.query<{ run_id: string; started_at: Date; finished_at: Date; status: string; error: string | null; counts: RunCountsT }>(
    `SELECT run_id, started_at, finished_at, status, error, counts FROM coverage_runs WHERE source_id = $1
      ORDER BY finished_at DESC, received_at DESC LIMIT $2`,
    [sourceId, limit],
  );
  return {
    source_id: sourceId,
    runs: r.rows.map((x) => ({ ...x, started_at: iso(x.started_at)!, finished_at: iso(x.finished_at)! })),
  };
}

/** Asks the source's collector to retry its failed items (or recount the source) at its next check. */
export async function requestAction(db: Queryable, sourceId: string, what: 'retry' | 'reconcile'): Promise<string | null> {
  const column = what === 'retry' ? 'retry_requested_at' : 'reconcile_requested_at';
  const r = await db.query<{ at: Date }>(
    `UPDATE coverage_sources SET ${column} = coalesce(${column}, now()) WHERE source_id = $1 RETURNING ${column} AS at`,
    [sourceId],
  );
  return r.rows.length ? iso(r.rows[0].at) : null;
}

/** Forgets a source's coverage (a folder that moved, an account removed); its documents stay. */
export async function deleteSource(db: Queryable, sourceId: string): Promise<boolean> {
  return (await db.query('DELETE FROM coverage_sources WHERE source_id = $1', [sourceId])).rowCount > 0;
}

/**
 * Files a `localfs` source listed as not stored (failed or pending) that have since been stored by their path
 * another way (`memex ingest FILE`, the watched folder's retry): off the source's list and counted as stored, so
 * coverage does not say "not stored" about what is stored (issue 46). The source's next run reports afresh.
 */
export async function settleStoredFiles(db: Queryable, paths: string[]): Promise<number> {
  if (paths.length === 0) return 0;
  const r = await db.query<{ n: number }>(
    `WITH gone AS (
       DELETE FROM coverage_missing m USING coverage_sources s
        WHERE m.source_id = s.source_id AND s.source_type = 'localfs' AND m.ref = ANY($1::text[])
          AND m.state IN ('failed', 'pending')
       RETURNING m.source_id, m.state),
     per AS (
       SELECT source_id, count(*) FILTER (WHERE state = 'failed')::int AS f, count(*) FILTER (WHERE state = 'pending')::int AS p
         FROM gone GROUP BY source_id),
     upd AS (
       UPDATE coverage_sources s
          SET failed = greatest(0, coalesce(s.failed, 0) - per.f), pending = greatest(0, coalesce(s.pending, 0) - per.p),
              stored_new = coalesce(s.stored_new, 0) + per.f + per.p, updated_at = now()
         FROM per WHERE s.source_id = per.source_id
       RETURNING 1)
     SELECT (SELECT count(*)::int FROM gone) AS n`,
    [[...new Set(paths)]],
  );
  return r.rows[0].n;
}
