/**
 * The host agent's side of coverage (docs/coverage.md). Each collector module offers a CoverageProvider: the
 * sources it reads, a census (a recount of one source without importing), and a retry of its failed items.
 *
 * - POST /v1/coverage:reconcile {collector?, source_id?} recounts sources now and reports them to the gateway.
 * - A check every SVC_COVERAGE_POLL_SECONDS (default 60; 0 turns it off) asks the gateway whether someone asked
 *   for a retry or a recount of one of this agent's sources (the web UI's Sources page, POST
 *   /v1/coverage/sources/{id}/retry) and carries it out. The gateway cannot reach the agent (it listens on
 *   loopback only, behind its own secret), so requests wait there until the agent asks.
 */
import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import { read } from '../config/env.ts';
import { AGENT_SETTINGS } from './settings.ts';
import { coverageSourceId, type SourceIdentity } from '../coverage/identity.ts';
import { lastRunView, reconcileSource, type Census, type LastRunView } from '../coverage/reconcile.ts';
import type { CoverageReporter } from '../coverage/reporter.ts';
import { COLLECTORS, type Collector, type ReconcileResultT, type SourceCoverageT } from '../schemas/coverage.ts';

export interface CoverageProvider {
  collector: Collector;
  /** Sources the collector is configured for (a recount can run before any run); reported ones are added. */
  configured(): SourceIdentity[];
  /** Recounts one source; throws when it cannot be read. */
  census(source: SourceIdentity, last: LastRunView): Promise<Census>;
  /** Runs the collector over the source again, so its failed items are tried again. */
  retry?(source: SourceIdentity): Promise<void>;
}

export interface ReconcileOutcome {
  source_id: string;
  collector: string;
  source_ref: string;
  reconcile: ReconcileResultT | null;
  error: string | null;
}

const identityOf = (s: SourceCoverageT): SourceIdentity => ({
  collector: s.collector as Collector,
  source_type: s.source_type as SourceIdentity['source_type'],
  source_account_id: s.source_account_id,
  source_ref: s.source_ref,
});

export class AgentCoverage {
  private timer: NodeJS.Timeout | null = null;
  private checking = false;

  constructor(
    private readonly providers: CoverageProvider[],
    private readonly reporter: CoverageReporter,
    private readonly log: Pick<FastifyBaseLogger, 'warn' | 'info'>,
  ) {}

  /** This agent's sources: the configured ones and the ones the gateway has reports of, with the gateway's record. */
  async sources(filter: { collector?: string; source_id?: string } = {}): Promise<{ identity: SourceIdentity; record: SourceCoverageT | null; provider: CoverageProvider }[]> {
    let known: SourceCoverageT[] = [];
    try {
      known = await this.reporter.list();
    } catch (err) {
      this.log.warn({ reason: (err as Error).message }, 'coverage: the gateway cannot list sources');
    }
    const out = new Map<string, { identity: SourceIdentity; record: SourceCoverageT | null; provider: CoverageProvider }>();
    for (const p of this.providers) {
      if (filter.collector && p.collector !== filter.collector) continue;
      for (const identity of p.configured()) out.set(coverageSourceId(identity), { identity, record: null, provider: p });
      for (const rec of known.filter((k) => k.collector === p.collector)) out.set(rec.source_id, { identity: identityOf(rec), record: rec, provider: p });
    }
    for (const [id, s] of out) {
      if (filter.source_id && id !== filter.source_id) out.delete(id);
      else if (!s.record) s.record = known.find((k) => k.source_id === id) ?? null;
    }
    return [...out.values()];
  }

  /** Recounts the sources the filter names and reports each recount. */
  async reconcile(filter: { collector?: string; source_id?: string } = {}): Promise<ReconcileOutcome[]> {
    const out: ReconcileOutcome[] = [];
    for (const s of await this.sources(filter)) {
      const base = { source_id: coverageSourceId(s.identity), collector: s.identity.collector, source_ref: s.identity.source_ref };
      try {
        const reconcile = await reconcileSource(this.reporter, s.identity, (last) => s.provider.census(s.identity, last), lastRunView(s.record));
        out.push({ ...base, reconcile, error: reconcile ? null : 'the gateway did not take the recount' });
      } catch (err) {
        out.push({ ...base, reconcile: null, error: (err as Error).message });
      }
    }
    return out;
  }

  /** Carries out the retries and recounts asked for at the gateway. */
  async check(): Promise<void> {
    if (this.checking) return;
    this.checking = true;
    try {
      for (const s of await this.sources()) {
        const id = coverageSourceId(s.identity);
        if (s.record?.retry_requested_at && s.provider.retry) {
          this.log.info({ collector: s.identity.collector, source_id: id }, 'coverage: retrying the failed items of a source, as asked');
          await s.provider.retry(s.identity).catch((err) => this.log.warn({ source_id: id, reason: (err as Error).message }, 'coverage: retry failed'));
        }
        if (s.record?.reconcile_requested_at) await this.reconcile({ source_id: id });
      }
    } finally {
      this.checking = false;
    }
  }

  start(intervalMs: number): void {
    if (intervalMs <= 0 || this.timer || this.providers.length === 0) return;
    this.timer = setInterval(() => void this.check().catch((err) => this.log.warn({ reason: (err as Error).message }, 'coverage check failed')), intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  registerRoutes(app: FastifyInstance): void {
    // '::' escapes the colon of "coverage:reconcile" in a Fastify path.
    app.post('/v1/coverage::reconcile', async (req, reply) => {
      const body = (req.body ?? {}) as Record<string, unknown>;
      if (typeof body !== 'object' || Array.isArray(body)) return reply.code(400).send({ error: 'Request body must be a JSON object' });
      const { collector, source_id } = body;
      if (collector !== undefined && !(COLLECTORS as readonly unknown[]).includes(collector)) {
        return reply.code(400).send({ error: `collector must be one of ${COLLECTORS.join(', ')}` });
      }
      if (source_id !== undefined && typeof source_id !== 'string') return reply.code(400).send({ error: 'source_id must be a string' });
      return { sources: await this.reconcile({ collector: collector as string | undefined, source_id: source_id as string | undefined }) };
    });
  }
}

/** Milliseconds between checks for requests, from SVC_COVERAGE_POLL_SECONDS (0 = never). */
export function coveragePollMs(env: NodeJS.ProcessEnv = process.env): number {
  return Math.round(read(env, AGENT_SETTINGS.SVC_COVERAGE_POLL_SECONDS) * 1000);
}
