/**
 * Reconcile (docs/coverage.md): a collector recounts its source without importing anything and reports it; the
 * gateway compares the count with the last run (drift). Each collector has its own census (files on disk,
 * IMAP UIDs under their UIDVALIDITY, chat.db rows); this module turns one into a report and sends it.
 */
import type { ReconcileReportT, ReconcileResultT, SourceCoverageT } from '../schemas/coverage.ts';
import { fit, sourceIdentity, type SourceIdentity } from './identity.ts';
import type { CoverageReporter } from './reporter.ts';

/** What a recount of a source found. */
export interface Census {
  in_source: number;
  /** Items the last run did not see (new since), when the collector can tell. */
  added?: number | null;
  /** Items the last run saw that are gone, when the collector can tell. */
  removed?: number | null;
  /** Items changed since the last run (edited, rewritten files), when the collector can tell. */
  changed?: number | null;
  facts?: Record<string, string | number | boolean | null>;
  notes?: string[];
}

/** The last run of a source as a census needs it: where it stood (cursor) and when it began. */
export interface LastRunView {
  in_source: number | null;
  cursor: Record<string, unknown> | null;
  startedAt: Date | null;
}

export function lastRunView(s: SourceCoverageT | null): LastRunView {
  return {
    in_source: s?.last_run?.counts.in_source ?? null,
    cursor: s?.cursor ?? null,
    startedAt: s?.last_run ? new Date(s.last_run.started_at) : null,
  };
}

export function reconcileReport(identity: SourceIdentity, census: Census, recorded?: number | null, countedAt = new Date()): ReconcileReportT {
  return {
    ...sourceIdentity(identity),
    counted_at: countedAt.toISOString(),
    in_source: census.in_source,
    ...(recorded !== undefined ? { recorded_in_source: recorded } : {}),
    added: census.added ?? null,
    removed: census.removed ?? null,
    changed: census.changed ?? null,
    facts: census.facts ?? {},
    notes: (census.notes ?? []).slice(0, 20).map((n) => fit(n, 500)),
  };
}

/**
 * Recounts a source and reports it. `count` gets the last run as the gateway knows it (or as the caller passes
 * it: a collector just after its run knows its own cursor). A census that cannot count (the folder is gone, the
 * server refuses) throws; a report the gateway does not take gives null.
 */
export async function reconcileSource(
  reporter: CoverageReporter,
  identity: SourceIdentity,
  count: (last: LastRunView) => Promise<Census>,
  last?: LastRunView,
): Promise<ReconcileResultT | null> {
  const view = last ?? lastRunView(await reporter.source(identity));
  const census = await count(view);
  return reporter.sendReconcile(reconcileReport(identity, census, view.in_source));
}
