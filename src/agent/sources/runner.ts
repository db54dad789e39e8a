/**
 * The source runner (docs/sources.md): runs every configured source continuously — each module of the agent
 * contributes its sources (AgentModule.sources()) — and reports how fresh each is to the gateway.
 *
 * - Every source runs on its own: one that fails backs off and retries, and never stops the others.
 * - Status goes to the gateway (PUT /v1/sources/status) soon after a change and at least every `reportMs`; the
 *   answer carries the sources a person paused (web UI, `memex sources pause`, POST /v1/sources/{id}/pause),
 *   which the runner stops until they are resumed. Local pause/resume (the agent's own API) works the same way.
 */
import os from 'node:os';
import { coverageSourceId } from '../../coverage/identity.ts';
import type { SourcesGateway, StatusEntry } from './gateway.ts';
import type { Source, SourceStatus } from './source.ts';

interface Entry {
  source: Source;
  id: string;
  paused: boolean;
  started: boolean;
}

export interface SourceRunnerOptions {
  gateway?: SourcesGateway;
  log: { warn(o: object, m?: string): void; info(o: object, m?: string): void };
  /** How often the status is reported at the least (default 15 s). */
  reportMs?: number;
  agent?: string;
}

export class SourceRunner {
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | null = null;
  private soon: NodeJS.Timeout | null = null;
  private running = false;
  private reporting: Promise<void> | null = null;

  constructor(private readonly opts: SourceRunnerOptions) {}

  add(source: Source): void {
    const id = coverageSourceId(source.identity);
    if (this.entries.has(id)) throw new Error(`two sources read ${source.label}`);
    this.entries.set(id, { source, id, paused: false, started: false });
    source.onStatusChange = () => this.reportSoon();
  }

  get size(): number {
    return this.entries.size;
  }

  get(id: string): Source | undefined {
    return this.entries.get(id)?.source;
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    for (const e of this.entries.values()) await this.startOne(e);
    // The first report says which sources are paused, before much has run.
    await this.report();
    const every = this.opts.reportMs ?? 15_000;
    this.timer = setInterval(() => void this.report(), every);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.running = false;
    if (this.timer) clearInterval(this.timer);
    if (this.soon) clearTimeout(this.soon);
    this.timer = this.soon = null;
    await Promise.all([...this.entries.values()].map((e) => this.stopOne(e)));
    await this.reporting;
  }

  private async startOne(e: Entry): Promise<void> {
    if (e.started || e.paused || !this.running) return;
    e.started = true;
    try {
      await e.source.start();
    } catch (err) {
      this.opts.log.warn({ source: e.source.label, err: (err as Error).message }, 'source could not start');
    }
  }

  private async stopOne(e: Entry): Promise<void> {
    if (!e.started) return;
    e.started = false;
    await e.source.stop().catch((err) => this.opts.log.warn({ source: e.source.label, err: (err as Error).message }, 'source did not stop cleanly'));
  }

  async pause(id: string): Promise<boolean> {
    const e = this.entries.get(id);
    if (!e) return false;
    if (!e.paused) {
      e.paused = true;
      this.opts.log.info({ source: e.source.label }, 'source paused');
      await this.stopOne(e);
      this.reportSoon();
    }
    return true;
  }

  async resume(id: string): Promise<boolean> {
    const e = this.entries.get(id);
    if (!e) return false;
    if (e.paused) {
      e.paused = false;
      this.opts.log.info({ source: e.source.label }, 'source resumed');
      await this.startOne(e);
      this.reportSoon();
    }
    return true;
  }

  /** Every source's status (paused ones say so). */
  list(): Array<StatusEntry & { source_id: string }> {
    return [...this.entries.values()].map((e) => {
      const s: SourceStatus = e.source.status();
      return {
        source_id: e.id,
        label: e.source.label,
        ...e.source.identity,
        ...s,
        state: e.paused ? 'paused' : s.state,
        next_run_at: e.paused ? null : s.next_run_at,
      };
    });
  }

  private reportSoon(): void {
    if (!this.running || this.soon) return;
    this.soon = setTimeout(() => {
      this.soon = null;
      void this.report();
    }, 250);
    this.soon.unref();
  }

  /** Sends the status; applies the pauses the gateway holds. */
  async report(): Promise<void> {
    if (!this.opts.gateway || this.entries.size === 0) return;
    if (this.reporting) return this.reporting;
    this.reporting = (async () => {
      try {
        const answer = await this.opts.gateway!.putStatus(this.opts.agent ?? os.hostname(), this.list().map(({ source_id: _, ...rest }) => rest));
        for (const a of answer.sources ?? []) {
          const e = this.entries.get(a.source_id);
          if (!e || e.paused === a.paused) continue;
          if (a.paused) await this.pause(a.source_id);
          else await this.resume(a.source_id);
        }
      } catch (err) {
        this.opts.log.warn({ err: (err as Error).message }, 'source status not delivered to the gateway');
      } finally {
        this.reporting = null;
      }
    })();
    return this.reporting;
  }
}
