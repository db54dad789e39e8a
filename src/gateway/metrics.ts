/**
 * Prometheus metrics of the gateway, served at GET /metrics behind the gateway token (Prometheus
 * sends it with `authorization: { credentials: … }`). Named like the host agent's
 * (src/agent/metrics.ts): one registry per gateway (tests build many in one process), `_total`
 * counters, latency histograms in milliseconds.
 *
 * Queue figures are read from the database when Prometheus scrapes (one status read per scrape),
 * so they are true across processes (`--role worker` elsewhere) and cost nothing between scrapes.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Database } from '../db/types.ts';
import { serverStatus } from '../embedding/report.ts';
import { statusForMetrics } from '../coverage/freshness.ts';
import { sourceLagSeconds } from '../coverage/store.ts';
import type { PoolStats, PoolWork } from '../embedding/pool.ts';
import type { VectorSkip } from '../search/types.ts';

const LATENCY_MS = [1, 2.5, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 30000];

/** POST routes that ingest; their answers are counted by outcome in gateway_ingest_requests_total. */
const INGEST_ROUTES = new Set(['/v1/ingest', '/v1/ingest::batch', '/v1/ingest/file', '/v1/ingest/file::batch', '/v2/ingest/document', '/v2/ingest/person', '/v2/ingest::batch']);

export interface GatewayMetrics {
  registry: Registry;
  /** The exposition text (GET /metrics), with the database read once for all its gauges. */
  scrape(): Promise<string>;
  /** Called by the gateway's onResponse hook. */
  observeRequest(method: string, route: string, status: number, ms: number): void;
  /** Called by search once per leg per query (SearchDeps.onLegTiming). */
  observeLeg(leg: 'lexical' | 'vector', ms: number, skipped?: VectorSkip): void;
}

export function ingestOutcome(status: number): string {
  if (status === 202) return 'stored';
  if (status === 200) return 'duplicate';
  if (status === 207) return 'partial';
  if (status >= 500) return 'error';
  return 'rejected';
}

export function createGatewayMetrics(opts: {
  db: Database;
  /** The embedding pool's lanes, when this process runs a CPU model. */
  pool?: () => PoolStats | undefined;
  defaultMetrics?: boolean;
}): GatewayMetrics {
  const registry = new Registry();
  if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: registry });
  const registers = [registry];

  const requests = new Counter({ name: 'gateway_http_requests_total', help: 'HTTP requests served by the gateway.', labelNames: ['method', 'route', 'status'], registers });
  const latency = new Histogram({
    name: 'gateway_http_request_duration_ms',
    help: 'Gateway request latency in milliseconds, per route (the route template, not the URL).',
    labelNames: ['method', 'route'],
    buckets: LATENCY_MS,
    registers,
  });
  const ingest = new Counter({
    name: 'gateway_ingest_requests_total',
    help: 'Ingest requests by route and outcome (stored, duplicate, partial, rejected, error).',
    labelNames: ['route', 'outcome'],
    registers,
  });
  const legs = new Histogram({
    name: 'search_leg_duration_ms',
    help: 'Time of each search leg in milliseconds (vector: query embedding and k-NN; lexical: index catch-up and lexemes).',
    labelNames: ['leg'],
    buckets: LATENCY_MS,
    registers,
  });
  const skipped = new Counter({
    name: 'search_vector_skipped_total',
    help: 'Searches answered without the vector leg, by reason (lexical_sufficient, exact_terms, budget, no_vectors, model_starting, no_embedder, no_text).',
    labelNames: ['reason'],
    registers,
  });

  // Read at scrape time: scrape() reads the status once for every gauge of that scrape.
  let scraping: ReturnType<typeof serverStatus> | undefined;
  const status = () => scraping ?? serverStatus(opts.db);
  new Gauge({
    name: 'embedding_queue_chunks',
    help: 'Chunks per embedding status (pending and processing are the queue).',
    labelNames: ['status'],
    registers,
    async collect() {
      const s = await status();
      for (const k of ['pending', 'processing', 'embedded', 'failed'] as const) this.set({ status: k }, s.chunks[k]);
    },
  });
  // Sources the agents run (issue 41, docs/sources.md), as their agents last reported them.
  let sourceRows: Promise<Awaited<ReturnType<typeof statusForMetrics>>> | undefined;
  const sources = () => (sourceRows ??= statusForMetrics(opts.db).catch(() => []).finally(() => setTimeout(() => (sourceRows = undefined), 1000).unref()));
  new Gauge({
    name: 'memex_source_last_success_timestamp_seconds',
    help: 'When each source last synced without error (Unix seconds); absent until it did.',
    labelNames: ['source_id', 'collector', 'source_ref'],
    registers,
    async collect() {
      this.reset();
      for (const r of await sources()) {
        if (r.last_success_at) this.set({ source_id: r.source_id, collector: r.collector, source_ref: r.source_ref }, new Date(r.last_success_at).getTime() / 1000);
      }
    },
  });
  new Gauge({
    name: 'memex_source_lag_seconds',
    help: 'Newest item at the source minus newest stored, in seconds (0: up to date); absent when unknown.',
    labelNames: ['source_id', 'collector', 'source_ref'],
    registers,
    async collect() {
      this.reset();
      for (const r of await sources()) {
        const lag = sourceLagSeconds(r.newest_at_source && new Date(r.newest_at_source).toISOString(), r.newest_stored && new Date(r.newest_stored).toISOString());
        if (lag !== null) this.set({ source_id: r.source_id, collector: r.collector, source_ref: r.source_ref }, lag);
      }
    },
  });
  new Gauge({
    name: 'memex_source_up',
    help: '1 when the source is watching, polling, scheduled or running; 0 when backing off, failed, paused or stopped.',
    labelNames: ['source_id', 'collector', 'source_ref', 'state'],
    registers,
    async collect() {
      this.reset();
      for (const r of await sources()) {
        const state = r.paused ? 'paused' : r.state;
        this.set({ source_id: r.source_id, collector: r.collector, source_ref: r.source_ref, state }, ['watching', 'polling', 'scheduled', 'running'].includes(state) ? 1 : 0);
      }
    },
  });
  new Gauge({
    name: 'embedding_queue_age_seconds',
    help: 'Age of the oldest pending chunk in seconds (0 when the queue is empty).',
    registers,
    async collect() {
      this.set((await status()).queue.age_seconds);
    },
  });
  new Gauge({
    name: 'embedding_chunks_per_second',
    help: 'Chunks embedded per second, averaged over the last minute.',
    registers,
    async collect() {
      this.set((await status()).throughput.chunks_embedded.last_minute);
    },
  });
  new Gauge({
    name: 'catalog_documents',
    help: 'Active documents per source type and status.',
    labelNames: ['source_type', 'status'],
    registers,
    async collect() {
      this.reset();
      for (const r of (await status()).documents.by_source) this.set({ source_type: r.source_type, status: r.status }, r.count);
    },
  });
  if (opts.pool) {
    new Gauge({
      name: 'embedding_pool_jobs_waiting',
      help: 'Embedding jobs waiting for a model thread, per lane (query, bulk).',
      labelNames: ['lane'],
      registers,
      collect() {
        const p = opts.pool!();
        if (!p) return;
        this.set({ lane: 'query' }, p.waiting.query);
        this.set({ lane: 'bulk' }, p.waiting.bulk);
      },
    });
    new Gauge({
      name: 'embedding_pool_threads_busy',
      help: 'Model threads working now, per role (query, bulk).',
      labelNames: ['role'],
      registers,
      collect() {
        const p = opts.pool!();
        if (!p) return;
        this.set({ role: 'query' }, p.busy.query);
        this.set({ role: 'bulk' }, p.busy.bulk);
      },
    });
    // Counters read from the pool at scrape time (reset, then set to the pool's running total).
    const workCounter = (name: string, help: string, pick: (w: PoolWork) => number) =>
      new Counter({
        name,
        help,
        labelNames: ['role'],
        registers,
        collect() {
          const p = opts.pool!();
          if (!p) return;
          this.reset();
          this.inc({ role: 'query' }, pick(p.work.query));
          this.inc({ role: 'bulk' }, pick(p.work.bulk));
        },
      });
    workCounter('embedding_pool_busy_seconds_total', 'Thread-seconds the model threads had a job in hand, per role; busy / (threads x elapsed) below 1 means the pipeline left them idle.', (w) => w.busySeconds);
    workCounter('embedding_pool_cpu_seconds_total', 'CPU seconds the model threads spent on their jobs, per role (Linux).', (w) => w.cpuSeconds);
    workCounter('embedding_pool_cpu_wait_seconds_total', 'Seconds the model threads were runnable but waiting for a CPU during their jobs, per role (Linux).', (w) => w.cpuWaitSeconds);
    workCounter('embedding_pool_texts_total', 'Texts embedded by the model threads, per role.', (w) => w.texts);
  }

  return {
    registry,
    async scrape() {
      const read = serverStatus(opts.db);
      await read;
      scraping = read;
      try {
        return await registry.metrics();
      } finally {
        scraping = undefined;
      }
    },
    observeRequest(method, route, status, ms) {
      requests.inc({ method, route, status: String(status) });
      latency.observe({ method, route }, ms);
      if (method === 'POST' && INGEST_ROUTES.has(route)) ingest.inc({ route, outcome: ingestOutcome(status) });
    },
    observeLeg(leg, ms, reason) {
      legs.observe({ leg }, ms);
      if (reason) skipped.inc({ reason });
    },
  };
}
