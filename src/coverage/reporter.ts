/**
 * How collectors and importers talk coverage with the gateway (POST /v1/coverage/runs, /v1/coverage/reconcile,
 * GET /v1/coverage). A report that cannot be delivered is logged and dropped: coverage describes an import, it
 * never stops one; the next run reports the whole source again.
 */
import type { CoverageRunReportT, ReconcileReportT, ReconcileResultT, SourceCoverageT } from '../schemas/coverage.ts';
import { coverageSourceId, type SourceIdentity } from './identity.ts';
import { describeCounts, type RunRecorder } from './recorder.ts';

export interface CoverageReporter {
  /** Sends a run's report; true when the gateway recorded it. Never throws. */
  sendRun(report: CoverageRunReportT): Promise<boolean>;
  /** Sends a recount; the gateway's reading of it (drift), or null when it could not be delivered. Never throws. */
  sendReconcile(report: ReconcileReportT): Promise<ReconcileResultT | null>;
  /** The gateway's record of a source, or null (unknown source, or the gateway cannot be asked). */
  source(identity: SourceIdentity): Promise<SourceCoverageT | null>;
  /** Every source the gateway has a record of (no missing items); throws when the gateway cannot be asked. */
  list(): Promise<SourceCoverageT[]>;
}

export interface CoverageTarget {
  /** Gateway base URL, e.g. http://127.0.0.1:8085. */
  url: string;
  token?: string;
  timeoutMs?: number;
  log?: { warn(obj: object, msg?: string): void };
}

const RETRY_STATUSES = new Set([429, 503]);
const BACKOFF_MS = [500, 1000];

export function httpCoverageReporter(target: CoverageTarget): CoverageReporter {
  const base = target.url.replace(/\/+$/, '');
  const timeoutMs = target.timeoutMs ?? 30_000;

  async function call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (target.token) headers.authorization = `Bearer ${target.token}`;
    if (body !== undefined) headers['content-type'] = 'application/json';
    let last = '';
    for (let attempt = 0; attempt <= BACKOFF_MS.length; attempt++) {
      if (attempt) await new Promise((r) => setTimeout(r, BACKOFF_MS[attempt - 1]));
      let res: Response;
      try {
        res = await fetch(base + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal: AbortSignal.timeout(timeoutMs) });
      } catch (err) {
        last = (err as Error).message;
        continue;
      }
      const text = await res.text().catch(() => '');
      if (res.ok) return (text ? JSON.parse(text) : null) as T;
      last = `HTTP ${res.status}: ${text.slice(0, 300)}`;
      if (!RETRY_STATUSES.has(res.status)) break;
    }
    throw new Error(`${method} ${path}: ${last}`);
  }

  return {
    async sendRun(report) {
      try {
        await call('POST', '/v1/coverage/runs', report);
        return true;
      } catch (err) {
        target.log?.warn({ collector: report.collector, reason: (err as Error).message }, 'coverage report not delivered');
        return false;
      }
    },
    async sendReconcile(report) {
      try {
        return (await call<{ reconcile: ReconcileResultT }>('POST', '/v1/coverage/reconcile', report)).reconcile;
      } catch (err) {
        target.log?.warn({ collector: report.collector, reason: (err as Error).message }, 'coverage recount not delivered');
        return null;
      }
    },
    async source(identity) {
      try {
        const id = coverageSourceId(identity);
        const r = await call<{ sources: SourceCoverageT[] }>('GET', `/v1/coverage?source=${id}&missing_limit=0`);
        return r.sources.find((s) => s.source_id === id) ?? null;
      } catch {
        return null;
      }
    },
    async list() {
      return (await call<{ sources: SourceCoverageT[] }>('GET', '/v1/coverage?missing_limit=0')).sources;
    },
  };
}

/** Reports nowhere (dry runs, tests that do not look at coverage). */
export const silentCoverageReporter: CoverageReporter = {
  sendRun: async () => false,
  sendReconcile: async () => null,
  source: async () => null,
  list: async () => [],
};

/**
 * Sends an import's run report and prints its one line ("coverage of …: 12 stored, …"); never throws: an import's
 * own outcome does not depend on the report (`memex import` of exports and of .ics files).
 */
export async function reportImportRun(
  target: { url: string; token?: string },
  run: RunRecorder,
  out: { write(s: string): unknown },
  error?: string | null,
): Promise<void> {
  const reporter = httpCoverageReporter({
    url: target.url,
    token: target.token,
    log: { warn: (o) => out.write(`memex import: coverage not recorded: ${(o as { reason?: string }).reason ?? ''}\n`) },
  });
  await reporter.sendRun(run.report({ error: error ?? null }));
  out.write(`coverage of ${run.source.source_ref}: ${describeCounts(run.counts())}\n`);
}
